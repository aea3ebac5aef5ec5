package timeit

import (
	"go/parser"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want Options
		stmt string
	}{
		{"f(3)", Options{Repeat: 7, Precision: 3}, "f(3)"},
		{"-n 10 -r3 f(3)", Options{Number: 10, Repeat: 3, Precision: 3}, "f(3)"},
		{"-q -o  x := 1", Options{Repeat: 7, Precision: 3, Quiet: true, Return: true}, "x := 1"},
		{"-p 5 -n1 -x", Options{Number: 1, Repeat: 7, Precision: 5}, "-x"},
		{"-nx", Options{Repeat: 7, Precision: 3}, "-nx"}, // a negated name, not -n
		{"-o(x)", Options{Repeat: 7, Precision: 3}, "-o(x)"},
	} {
		got, rest, err := ParseArgs(c.arg)
		if err != nil || got != c.want || c.arg[rest:] != c.stmt {
			t.Errorf("%q: %+v %q %v, want %+v %q", c.arg, got, c.arg[rest:], err, c.want, c.stmt)
		}
	}
	for _, bad := range []string{"-n 0 f()", "-r x f()", "-n"} {
		if _, _, err := ParseArgs(bad); err == nil || !strings.Contains(err.Error(), "positive whole number") {
			t.Errorf("%q: %v, want an error naming the flag's value", bad, err)
		}
	}
}

func TestFormatTimeAsIPython(t *testing.T) {
	// IPython 8's _format_time, for these inputs.
	for secs, want := range map[float64]string{
		1.5e-6: "1.5 µs", 0.5: "500 ms", 2: "2 s", 1.2e-4: "120 µs", 3.4567e-9: "3.46 ns",
		0: "0 ns", 90: "1min 30s", 3661: "1h 1min 1s", 59.5: "59.5 s",
	} {
		if got := FormatTime(secs, 3); got != want {
			t.Errorf("%g: %q, want %q", secs, got, want)
		}
	}
}

func TestResultReadsAsIPythons(t *testing.T) {
	r := Result{Loops: 1000000, Precision: 3, Runs: []time.Duration{
		1200 * time.Millisecond, 1300 * time.Millisecond, 1100 * time.Millisecond}}
	want := "1.2 µs ± 81.6 ns per loop (mean ± std. dev. of 3 runs, 1,000,000 loops each)"
	if r.String() != want {
		t.Errorf("%q\nwant %q", r.String(), want)
	}
	one := Result{Loops: 1, Runs: []time.Duration{time.Second}}
	if got := one.String(); got != "1 s ± 0 ns per loop (mean ± std. dev. of 1 run, 1 loop each)" {
		t.Errorf("%q", got)
	}
	if w := r.CachingWarning(); w != "" {
		t.Errorf("no warning expected: %q", w)
	}
	cached := Result{Loops: 1, Runs: []time.Duration{time.Millisecond, 5 * time.Millisecond}}
	if w := cached.CachingWarning(); !strings.HasPrefix(w, "The slowest run took 5.00 times longer than the fastest.") {
		t.Errorf("%q", w)
	}
}

func TestAutorangeTakesThePowerOfTenThatReachesTheMinimum(t *testing.T) {
	var asked []int
	n, err := Autorange(func(n int) (time.Duration, error) {
		asked = append(asked, n)
		return time.Duration(n) * 300 * time.Microsecond, nil // 1000 loops: 0.3 s
	})
	if err != nil || n != 1000 || len(asked) != 4 {
		t.Errorf("%d %v after %v, want 1000 after 1, 10, 100, 1000", n, err, asked)
	}
}

func TestSourceKeepsTheCellsLinesAndColumns(t *testing.T) {
	// %timeit on the cell's second line, at column 9.
	stmts := "\n        x := fib(3)\n"
	c := Source("", stmts)
	if _, err := parser.ParseExpr(c.Src); err != nil {
		t.Fatalf("not an expression: %v\n%s", err, c.Src)
	}
	lines := strings.Split(c.Src, "\n")
	for i, l := range lines {
		if strings.Contains(l, "x := fib(3)") {
			if c.CellLine[i+1] != 2 || strings.Index(l, "x") != 8 {
				t.Errorf("line %d %q maps to cell line %d", i+1, l, c.CellLine[i+1])
			}
		}
	}
	if !strings.Contains(c.Src, "_ = x") {
		t.Errorf("the declared x is not used:\n%s", c.Src)
	}
}

func TestSourceAssignsUnusedExpressions(t *testing.T) {
	c := Source("s := []int{1, 2}", "\n        s[0] + 1\nf()\n<-ch\na * b")
	for _, want := range []string{"    _ = s[0] + 1", "\nf()\n", "\n<-ch\n", "_ = a * b", "_ = s"} {
		if !strings.Contains(c.Src, want) {
			t.Errorf("%q not in\n%s", want, c.Src)
		}
	}
	if _, err := parser.ParseExpr(c.Src); err != nil {
		t.Fatalf("not an expression: %v\n%s", err, c.Src)
	}
}
