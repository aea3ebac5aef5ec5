module example.com/gxfix/needsnew

go 1.22

require example.com/gxfix/dep v1.1.0
