// Computing SHA-256 (and a couple of other) digests.
package main

import (
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"io"
)

func main() {
	data := "the notebook remembers"
	h := sha256.New()
	h.Write([]byte(data))
	fmt.Printf("%x\n", h.Sum(nil))
	fmt.Printf("%x\n", sha256.Sum256([]byte(data)))

	streamed := sha256.New()
	io.WriteString(streamed, "the notebook ")
	io.WriteString(streamed, "remembers")
	fmt.Println(fmt.Sprintf("%x", streamed.Sum(nil)) == fmt.Sprintf("%x", h.Sum(nil)))

	fmt.Printf("%x\n", md5.Sum([]byte(data)))
	fmt.Println(crc32.ChecksumIEEE([]byte(data)))
	fmt.Println(sha256.Size, h.BlockSize())
}
