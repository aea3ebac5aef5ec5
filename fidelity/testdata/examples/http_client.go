// An HTTP client talking to a test server started in the program.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

func main() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/greet":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "hello, %s\nsecond line\n", r.URL.Query().Get("name"))
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s", r.Method, strings.ToUpper(string(body)))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/greet?name=cell")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println("status:", resp.Status, resp.Header.Get("Content-Type"))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		fmt.Println("line:", sc.Text())
	}

	post, err := http.Post(srv.URL+"/echo", "text/plain", strings.NewReader("shout"))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(post.Body)
	post.Body.Close()
	fmt.Println(string(body))

	missing, err := http.Get(srv.URL + "/nothing")
	if err != nil {
		panic(err)
	}
	missing.Body.Close()
	fmt.Println(missing.StatusCode)
}
