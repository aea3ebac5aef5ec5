module example.com/gxwork

go 1.22
