// encoding/json: marshalling structs with tags, maps and slices,
// unmarshalling into structs and into generic values, and streaming.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type track struct {
	Title    string   `json:"title"`
	Seconds  int      `json:"seconds"`
	Tags     []string `json:"tags,omitempty"`
	internal string
}

type album struct {
	Name   string  `json:"name"`
	Year   int     `json:"year"`
	Tracks []track `json:"tracks"`
}

func main() {
	b, _ := json.Marshal(true)
	fmt.Println(string(b))
	b, _ = json.Marshal([]string{"a", "b"})
	fmt.Println(string(b))
	b, _ = json.Marshal(map[string]int{"z": 26, "a": 1})
	fmt.Println(string(b))

	a := album{Name: "Tides", Year: 2019, Tracks: []track{
		{Title: "Ebb", Seconds: 201, internal: "x"},
		{Title: "Flow", Seconds: 185, Tags: []string{"live"}},
	}}
	b, err := json.MarshalIndent(a, "", "  ")
	fmt.Println(string(b), err)

	var back album
	if err := json.Unmarshal(b, &back); err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", back)

	var generic map[string]any
	json.Unmarshal([]byte(`{"n": 1.5, "list": [1, "two", null], "obj": {"k": true}}`), &generic)
	fmt.Println(generic["n"].(float64), generic["list"].([]any)[1], generic["obj"])

	dec := json.NewDecoder(strings.NewReader(`{"title":"A","seconds":1} {"title":"B","seconds":2}`))
	for {
		var t track
		if err := dec.Decode(&t); err != nil {
			break
		}
		fmt.Println(t.Title, t.Seconds)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(map[string]any{"ok": true, "count": 3})

	var bad track
	fmt.Println(json.Unmarshal([]byte(`{"seconds": "long"}`), &bad))
}
