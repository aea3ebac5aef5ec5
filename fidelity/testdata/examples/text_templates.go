// text/template: actions, pipelines, conditionals, ranges and functions.
package main

import (
	"os"
	"strings"
	"text/template"
)

type order struct {
	Customer string
	Items    []item
	Express  bool
}

type item struct {
	Name  string
	Qty   int
	Price float64
}

func (i item) Total() float64 { return float64(i.Qty) * i.Price }

func main() {
	t1 := template.Must(template.New("hello").Parse("Hello, {{.}}!\n"))
	t1.Execute(os.Stdout, "world")
	t1.Execute(os.Stdout, 42)

	funcs := template.FuncMap{"upper": strings.ToUpper}
	t2 := template.Must(template.New("order").Funcs(funcs).Parse(
		`Order for {{.Customer | upper}}{{if .Express}} (express){{else}} (standard){{end}}
{{range $i, $it := .Items}}{{$i}}. {{$it.Name}} x{{$it.Qty}} = {{printf "%.2f" $it.Total}}
{{else}}no items
{{end}}`))
	t2.Execute(os.Stdout, order{
		Customer: "lee",
		Items:    []item{{"pen", 3, 1.2}, {"pad", 1, 4.5}},
		Express:  true,
	})
	t2.Execute(os.Stdout, order{Customer: "max"})

	t3 := template.Must(template.New("x").Parse("{{.Missing}}\n"))
	err := t3.Execute(os.Stdout, struct{ Present int }{1})
	os.Stdout.WriteString("error: " + err.Error() + "\n")
}
