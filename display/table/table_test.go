package table

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type point struct {
	Name string
	X, Y float64
	n    int
}

func TestStructsAreRowsWithTheirFieldsAsColumns(t *testing.T) {
	tb, ok := Of([]point{{"origin", 0, 0, 1}, {"a rather long name that goes on and on and on", 1.5, -2, 2}})
	if !ok {
		t.Fatal("a slice of structs is not a table")
	}
	want := `   Name                                        X   Y  n
0  origin                                      0   0  1
1  a rather long name that goes on and on …  1.5  -2  2`
	if got := tb.String(); got != want {
		t.Errorf("text:\n%s\nwant:\n%s", got, want)
	}
	h := tb.HTML()
	for _, frag := range []string{`<th style="text-align:left">Name</th>`, `<td style="text-align:right">1.5</td>`, `<th style="text-align:right">0</th>`} {
		if !strings.Contains(h, frag) {
			t.Errorf("%s not in\n%s", frag, h)
		}
	}
}

func TestLongTablesAreCut(t *testing.T) {
	rows := make([]struct{ I int }, 10000)
	tb, _ := Of(rows)
	formatted := 0
	row := tb.Row
	tb.Row = func(i int) []string { formatted++; return row(i) }
	h := tb.HTML()
	if !strings.Contains(h, "<p>9950 rows more</p>") || strings.Count(h, "<tr>") != MaxRows+1 {
		t.Errorf("cut: %d rows, tail %q", strings.Count(h, "<tr>"), h[len(h)-40:])
	}
	if formatted != MaxRows {
		t.Errorf("%d rows formatted for %d shown", formatted, MaxRows)
	}
	if s := tb.String(); !strings.HasSuffix(s, "\n9950 rows more") {
		t.Errorf("text tail %q", s[len(s)-30:])
	}
}

type mat struct{ r, c int }

func (m mat) Dims() (int, int)       { return m.r, m.c }
func (m mat) At(i, j int) float64    { return float64(i*10 + j) }
func (m mat) T() fmt.Stringer        { return nil }
func (m mat) String() string         { return "mat" }
func (m mat) Format(fmt.State, rune) {}

func TestMapsRowsAndMatrices(t *testing.T) {
	tb, ok := Of([]map[string]any{{"a": 1, "b": "x"}, {"a": 2, "c": true}})
	if !ok || tb.String() != "   a  b  c\n0  1  x\n1  2     true" {
		t.Errorf("maps: %v\n%s", ok, tb)
	}
	tb, ok = Of([][]int{{1, 2}, {3}})
	if !ok || tb.String() != "   0  1\n0  1  2\n1  3" {
		t.Errorf("2-D: %v\n%q", ok, tb.String())
	}
	tb, ok = Of(mat{2, 2})
	if !ok || tb.String() != "    0   1\n0   0   1\n1  10  11" {
		t.Errorf("matrix: %v\n%q", ok, tb.String())
	}
}

func TestWhatIsNotATable(t *testing.T) {
	for _, v := range []any{nil, 3, "abc", []int{1, 2}, []string{"a"}, [][]byte{[]byte("x")}, []time.Time{time.Now()},
		[]point{}, []struct{}{{}}, map[string]int{"a": 1}, []error{fmt.Errorf("x")}} {
		if _, ok := Of(v); ok {
			t.Errorf("%T is taken for a table", v)
		}
	}
}

func TestFromRows(t *testing.T) {
	tb := FromRows([]string{"Name", "Size"}, [][]any{{"x", 8}, {"longer", 1024}})
	if got := tb.String(); got != "Name    Size\nx          8\nlonger  1024" {
		t.Errorf("%q", got)
	}
}
