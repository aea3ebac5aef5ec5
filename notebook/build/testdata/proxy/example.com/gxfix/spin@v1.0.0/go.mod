module example.com/gxfix/spin

go 1.21
