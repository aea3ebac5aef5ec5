module example.com/gxspin

go 1.21
