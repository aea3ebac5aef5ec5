// base64 with the standard and URL-safe alphabets, with and without
// padding; hex too.
package main

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

func main() {
	data := []byte("cells?&run=fast~ok")
	std := base64.StdEncoding.EncodeToString(data)
	fmt.Println(std)
	dec, err := base64.StdEncoding.DecodeString(std)
	fmt.Println(string(dec), err)

	urlSafe := base64.URLEncoding.EncodeToString(data)
	fmt.Println(urlSafe)
	fmt.Println(base64.RawURLEncoding.EncodeToString([]byte("ab")))

	_, err = base64.StdEncoding.DecodeString("not*valid")
	fmt.Println(err)

	fmt.Println(hex.EncodeToString([]byte("Go!")))
	fmt.Print(hex.Dump([]byte("sixteen bytes...and more")))
}
