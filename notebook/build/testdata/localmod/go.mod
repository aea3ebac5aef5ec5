module example.com/gxlocal

go 1.22
