// An HTTP server with a ServeMux and method/path patterns, started on a
// free port, queried by the program itself, then shut down.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello there")
	})
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "item %s\n", r.PathValue("id"))
	})
	mux.HandleFunc("GET /headers", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "X-Probe: %s\n", r.Header.Get("X-Probe"))
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	base := "http://" + ln.Addr().String()

	get := func(path string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-Probe", "42")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s -> %d %s", path, resp.StatusCode, body)
	}
	get("/hello")
	get("/items/7")
	get("/headers")
	get("/missing")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println("shutdown:", srv.Shutdown(ctx))
}
