// Tabular text: aligned columns with text/tabwriter, CSV with
// encoding/csv.
package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
)

func main() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(w, "city\tpopulation\tarea\t")
	fmt.Fprintln(w, "Oslo\t709037\t454\t")
	fmt.Fprintln(w, "Reykjavik\t139875\t273\t")
	w.Flush()

	r := csv.NewReader(strings.NewReader("name,qty\n\"Smith, J\",3\nLee,12\n"))
	records, err := r.ReadAll()
	fmt.Println(len(records), records[1][0], err)

	cw := csv.NewWriter(os.Stdout)
	cw.Write([]string{"id", "note"})
	cw.Write([]string{"1", `say "hi", then go`})
	cw.Flush()
	fmt.Println(cw.Error())
}
