// encoding/xml: marshalling with tags for attributes, nesting and
// comments, and unmarshalling.
package main

import (
	"encoding/xml"
	"fmt"
)

type plant struct {
	XMLName xml.Name `xml:"plant"`
	ID      int      `xml:"id,attr"`
	Name    string   `xml:"name"`
	Origin  []string `xml:"origin"`
	Note    string   `xml:",comment"`
}

type garden struct {
	XMLName xml.Name `xml:"garden"`
	Plants  []*plant `xml:"beds>plant"`
}

func main() {
	fern := &plant{ID: 7, Name: "Fern", Origin: []string{"Tasmania", "New Zealand"}, Note: " shade "}
	out, _ := xml.MarshalIndent(fern, " ", "  ")
	fmt.Println(xml.Header + string(out))

	var p plant
	if err := xml.Unmarshal(out, &p); err != nil {
		panic(err)
	}
	fmt.Printf("%d %s %v\n", p.ID, p.Name, p.Origin)

	moss := &plant{ID: 8, Name: "Moss"}
	g := garden{Plants: []*plant{fern, moss}}
	out, _ = xml.MarshalIndent(g, "", " ")
	fmt.Println(string(out))

	var broken plant
	fmt.Println(xml.Unmarshal([]byte("<plant><name>x</plant>"), &broken))
}
