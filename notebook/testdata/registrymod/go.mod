module example.com/gxregistry

go 1.22
