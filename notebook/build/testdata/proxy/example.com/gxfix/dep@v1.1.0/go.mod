module example.com/gxfix/dep

go 1.22
