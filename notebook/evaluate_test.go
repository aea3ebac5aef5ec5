package notebook

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

// TestEvaluatedCells mixes cells evaluated without a build with compiled
// ones: each sees what the other bound and assigned.
func TestEvaluatedCells(t *testing.T) {
	e := newEngine(t)
	if e.compiled == nil {
		t.Fatalf("no compiled cells: %v", e.compErr)
	}
	steps := []struct {
		code, want string
		evaluated  bool
	}{
		{"x := 1", "", true},
		{"func getx() int { return x }", "", false},
		{"x = 5", "", true},
		{"getx()", "5", true},
		{"for i := 0; i < 3; i++ { x++ }", "", false},
		{"x", "8", true},
		{"y := getx() * 2", "", true},
		{"func gety() int { return y }\ngety()", "16", false}, // compiled code reaches y's storage
		{"x++", "", true},
		{"x++", "", true}, // run again: the same program
		{"getx()", "10", true},
		{"z := 1", "", true},
		{"z += 1\nz", "2", true},
		{"z := 1", "", true},
		{"z", "1", true},
		{"y = 3\ngety()", "3", true},
		{"type P struct{ A int; b string }\nfunc (p P) Desc() string { return p.b + fmt.Sprint(p.A) }", "", false},
		{"p := P{A: 3, b: \"n\"}", "", true},
		{"p.b += \"m\"\np.Desc()", `"nm3"`, true},
		{"p.A = 4\nfunc desc() string { return p.Desc() }\ndesc()", `"nm4"`, false},
		{"x := \"now a string\"", "", true}, // getx keeps its binding (a warning)
		{"x + \"!\"", `"now a string!"`, true},
	}
	for _, s := range steps {
		before := e.compiled.Evaluated()
		r, io := mustRun(t, e, s.code)
		if got := resultText(r); got != s.want {
			t.Errorf("%q = %q, want %q (stderr %q)", s.code, got, s.want, io.text("stderr"))
		}
		if strings.Contains(s.code, "now a string") && !strings.Contains(io.text("stderr"), "warning: func getx (cell[") {
			t.Errorf("%q: no warning about getx: %q", s.code, io.text("stderr"))
		}
		if evaluated := e.compiled.Evaluated() > before; evaluated != s.evaluated {
			t.Errorf("%q: evaluated %v, want %v (%s)", s.code, evaluated, s.evaluated, e.compiled.NotEvaluated())
		}
	}
	// %who and the declaration log list what evaluated cells defined.
	r, io := mustRun(t, e, "%who")
	if out := io.text("stdout") + resultText(r); !strings.Contains(out, "z") || !strings.Contains(out, "p") {
		t.Errorf("%%who: %q", out)
	}
	found := false
	for _, d := range e.Declarations() {
		found = found || d.Kind == KindVar && d.Name == "z" && d.Source == "var z int"
	}
	if !found {
		t.Errorf("z is not in the declaration log: %+v", e.Declarations())
	}
}

// outcome is what a cell showed, in a form that compares across engines:
// the arguments Go prints in the frames of a traceback are words left in
// registers, which differ from call to call.
type outcome struct {
	result, stdout, stderr, err string
}

var frameArgs = regexp.MustCompile(`\((0x[0-9a-f]+\??(, )?|\.\.\.(, )?)*\)$`)

var cellName = regexp.MustCompile(`cell\[(\d+)\]`)

// progressNote matches the notes a slow build prints while it works
// ("goaccel: linking …", "goaccel: building …"): they come or not with the
// machine's speed, so the two sessions' outputs are compared without them.
var progressNote = regexp.MustCompile(`(?m)^goaccel: (linking|building) .*…\n`)

// runCells runs cells as cell[first], cell[first+1]... and returns what
// they showed, with the cells named from cell[1] (one process cannot load
// the same compiled cell twice: two sessions of the same cells must be
// numbered apart).
func runCells(t *testing.T, opts Options, first int, cells []string) []outcome {
	e := newEngineWith(t, opts)
	if e.compiled == nil {
		t.Fatalf("no compiled cells: %v", e.compErr)
	}
	renumber := func(s string) string {
		return cellName.ReplaceAllStringFunc(s, func(m string) string {
			n, _ := strconv.Atoi(m[5 : len(m)-1])
			return fmt.Sprintf("cell[%d]", n-first+1)
		})
	}
	var out []outcome
	for i, code := range cells {
		io := &fakeIO{}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		r := e.Execute(ctx, frontend.ExecuteRequest{Code: code, ExecutionCount: first + i}, io)
		cancel()
		o := outcome{stdout: io.text("stdout"), stderr: progressNote.ReplaceAllString(io.text("stderr"), "")}
		if r.Result != nil {
			o.result = fmt.Sprint(r.Result)
		}
		if r.Err != nil {
			tb := make([]string, len(r.Err.Traceback))
			for j, l := range r.Err.Traceback {
				tb[j] = frameArgs.ReplaceAllString(l, "(...)")
			}
			o.err = renumber(r.Err.Name + ": " + r.Err.Value + "\n" + strings.Join(tb, "\n"))
		}
		out = append(out, o)
	}
	return out
}

// TestEvaluatedLikeCompiled runs the same session evaluated and built:
// every cell must show the same result, output and error (tracebacks
// included).
func TestEvaluatedLikeCompiled(t *testing.T) {
	cells := []string{
		"import (\"strconv\"; \"time\"; \"errors\")\nx := 1",
		"var s []int\nfunc f(i int) int { return s[i] }\nfunc boom() { panic(\"kaboom\") }",
		"type P struct{ A int; b string }\nfunc (p P) Desc() string { return p.b + strconv.Itoa(p.A) }",
		"x + 1",
		"x = 40\nx += 2\nx",
		"y := x * 2\ny",
		`"hi\n"`,
		`fmt.Println("out", x)`,
		"fmt.Print(\"a\")\nfmt.Println(\"b\")\nx",
		"s = append(s, 1, 2, 3)\ns",
		"s[3]",
		"f(5)",
		"boom()",
		"s[1] = 20\ns",
		`m := map[string]int{"a": 1}`,
		"m[\"b\"] += 2\nm",
		"nm := map[string]int(nil)",
		"\nnm[\"a\"] = 1",
		"a, b := 1, 0",
		"a / b",
		"x /= b",
		"p := P{A: 3, b: \"n\"}",
		"p.Desc()",
		"p.b",
		"pp := &p\npp.A = 7\np",
		"np := (*P)(nil)",
		"np.A",
		"np.Desc()",
		`strconv.Atoi("12a")`,
		`v, err := strconv.Atoi("9")`,
		"err",
		"u8 := uint8(250)\nu8 + 10",
		"float32(0.1) * 3",
		"1.5 * 2",
		"'x'",
		"[]int{1, 2}",
		"nil",
		"time.Duration(90) * time.Second",
		`errors.New("bad")`,
		"1 << 70",
		"var vd = x * 3\nvd",
		"vz := 5",
		"var vz int\nvz",
		"var vp = s[10]",
		"vp",
		"var i8 int8 = 127\ni8++\ni8",
		"var w, werr = strconv.Atoi(\"x\")\nwerr",
		"w",
	}
	var evaluated, built []outcome
	t.Run("evaluated", func(t *testing.T) { evaluated = runCells(t, Options{}, 1, cells) })
	t.Run("built", func(t *testing.T) { built = runCells(t, Options{AlwaysBuild: true}, 1001, cells) })
	if len(evaluated) != len(cells) || len(built) != len(cells) {
		t.Fatal("a session did not complete")
	}
	for i, code := range cells {
		if evaluated[i] != built[i] {
			t.Errorf("cell[%d] %q:\nevaluated %+v\nbuilt     %+v", i+1, code, evaluated[i], built[i])
		}
	}
}

// TestEvaluatedCallsCompiledCode: interrupts, os.Exit and the panics of
// goroutines in the compiled functions an evaluated cell calls are
// handled as in a compiled cell.
func TestEvaluatedCallsCompiledCode(t *testing.T) {
	e := newEngine(t)
	if e.compiled == nil {
		t.Fatalf("no compiled cells: %v", e.compErr)
	}
	mustRun(t, e, "import (\"os\"; \"time\")\nkept := 1\nfunc spin() { for {} }\nfunc quit() { os.Exit(3) }\nfunc gp() { go func() { panic(\"in goroutine\") }(); time.Sleep(time.Hour) }")
	for _, c := range []struct{ code, name, value string }{
		{"spin()", "Interrupted", ""},
		{"time.Sleep(time.Hour)", "Interrupted", ""},
		{"quit()", "Exit", "exit status 3"},
		{"gp()", "panic", "in goroutine"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		if c.name == "Interrupted" {
			time.AfterFunc(200*time.Millisecond, cancel)
		}
		before := e.compiled.Evaluated()
		start := time.Now()
		r := e.Execute(ctx, frontend.ExecuteRequest{Code: c.code, ExecutionCount: 50}, &fakeIO{})
		took := time.Since(start)
		cancel()
		if e.compiled.Evaluated() == before {
			t.Errorf("%q was not evaluated: %s", c.code, e.compiled.NotEvaluated())
		}
		if r.Err == nil || r.Err.Name != c.name || !strings.Contains(r.Err.Value, c.value) {
			t.Errorf("%q: err %+v, want %s %q", c.code, r.Err, c.name, c.value)
		}
		// Each would run for an hour or forever: ended, it was stopped.
		if took > prompt {
			t.Errorf("%q took %v", c.code, took)
		}
	}
	r, _ := mustRun(t, e, "kept")
	if resultText(r) != "1" {
		t.Errorf("kept = %q", resultText(r))
	}
}
