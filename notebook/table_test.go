package notebook

import (
	"regexp"
	"strings"
	"testing"
)

func TestTablesShowAsTables(t *testing.T) {
	e := newEngine(t)
	r, _ := mustRun(t, e, `type row struct {
	name string
	n    int
}
[]row{{"a", 1}, {"bb", 22}}`)
	if got := resultText(r); got != "   name   n\n0  a      1\n1  bb    22" {
		t.Errorf("text/plain %q", got)
	}
	if h, _ := r.Result["text/html"].(string); !strings.Contains(h, "<table") || !strings.Contains(h, `<td style="text-align:right">22</td>`) {
		t.Errorf("text/html %q", h)
	}
	// Not a table: as fmt prints it, no HTML.
	r, _ = mustRun(t, e, `[]int{1, 2}`)
	if resultText(r) != "[1 2]" || r.Result["text/html"] != nil {
		t.Errorf("[]int: %v", r.Result)
	}
	// display.Table shows a table, and a value that is not one as text.
	_, io := mustRun(t, e, "import \"github.com/goaccel/goaccel/display\"\ndisplay.Table([][]float64{{1, 2}, {3, 4}})\ndisplay.Table(7)")
	if len(io.displays) != 2 || !strings.Contains(io.displays[0]["text/html"].(string), "<table") || io.displays[1]["text/plain"] != "7" {
		t.Errorf("display.Table: %v", io.displays)
	}
}

func TestWhosListsTheSession(t *testing.T) {
	e := newEngine(t)
	_, io := mustRun(t, e, "%whos")
	if len(io.displays) != 1 || io.displays[0]["text/plain"] != "Interactive namespace is empty." {
		t.Errorf("empty: %v", io.displays)
	}
	mustRun(t, e, "xs := make([]float64, 1000)\nname := \"goaccel\"\nfunc double(x int) int { return 2 * x }\nconst limit = 3\ntype pair struct{ a, b int }\np := pair{1, 2}")
	_, io = mustRun(t, e, "%whos")
	if len(io.displays) != 1 {
		t.Fatalf("displays: %v", io.displays)
	}
	text := io.displays[0]["text/plain"].(string)
	for _, want := range []string{
		`^Name\s+Kind\s+Type\s+Size\s+Data/Info$`,
		`^xs\s+var\s+\[\]float64\s+7\.8 KiB\s+len 1000, cap 1000$`,
		`^name\s+var\s+string\s+23 B\s+len 7: "goaccel"$`,
		`^p\s+var\s+pair\s+16 B\s+\{1 2\}$`,
		`^double\s+func\s+func double\(x int\) int$`,
		`^pair\s+type\s+type pair struct\{ a, b int \}$`,
		`^limit\s+const\s+const limit untyped int = 3$`,
	} {
		if !regexp.MustCompile("(?m)" + want).MatchString(text) {
			t.Errorf("%s not in\n%s", want, text)
		}
	}
	if h, _ := io.displays[0]["text/html"].(string); !strings.Contains(h, "<table") {
		t.Errorf("no HTML table: %q", h)
	}
}
