module example.com/gxfix/auto

go 1.22
