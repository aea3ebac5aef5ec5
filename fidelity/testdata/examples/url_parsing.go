// Parsing a URL into its parts with net/url.
package main

import (
	"fmt"
	"net"
	"net/url"
)

func main() {
	s := "https://alice:s3cret@shop.example.com:8443/cart/items?id=17&id=18&sort=asc#totals"
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	fmt.Println(u.Scheme)
	fmt.Println(u.User, u.User.Username())
	pw, set := u.User.Password()
	fmt.Println(pw, set)
	fmt.Println(u.Host)
	host, port, _ := net.SplitHostPort(u.Host)
	fmt.Println(host, port, u.Hostname(), u.Port())
	fmt.Println(u.Path, u.Fragment, u.RawQuery)
	q := u.Query()
	fmt.Println(q, q.Get("id"), q["id"])

	v := url.Values{}
	v.Set("q", "go notebooks")
	v.Add("page", "2")
	fmt.Println(v.Encode())
	ref, _ := url.Parse("../help?topic=a b")
	fmt.Println(u.ResolveReference(ref))
	fmt.Println(url.PathEscape("a b/c"), url.QueryEscape("a b/c"))
	_, err = url.Parse("http://[::1")
	fmt.Println(err)
}
