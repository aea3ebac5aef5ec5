package notebook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

func TestReimportAndRedefinition(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "import \"fmt\"\nfunc f() int { return 1 }")
	mustRun(t, e, "import \"fmt\"\nfunc f() string { return fmt.Sprint(2) }") // re-import dropped, f redefined
	r, _ := mustRun(t, e, "f()")
	if got := resultText(r); got != `"2"` {
		t.Errorf("redefined f() = %s, want \"2\"", got)
	}
	typ := "type T struct{ A int }\nfunc (t T) Get() int { return t.A }"
	mustRun(t, e, typ)
	mustRun(t, e, typ) // running it again changes nothing
	mustRun(t, e, "old := T{7}")
	// A type can be redefined; its methods come along when they compile.
	mustRun(t, e, "type T struct{ A, B int }")
	r, _ = mustRun(t, e, "T{1, 2}.Get()")
	if got := resultText(r); got != "1" {
		t.Errorf("Get on the new T = %s", got)
	}
	// Values made from the old type keep it.
	r, _ = run(t, e, "var n T = old")
	if r.Err == nil || !strings.Contains(r.Err.Value, "cannot use old") {
		t.Errorf("old value as new T: %v", r.Err)
	}
	r, _ = mustRun(t, e, "old.Get()")
	if got := resultText(r); got != "7" {
		t.Errorf("old.Get() = %s", got)
	}
	// An import name can be bound again; the newest binding wins.
	r, _ = mustRun(t, e, "import fmt \"strings\"\nfmt.ToUpper(\"a\")")
	if got := resultText(r); got != `"A"` {
		t.Errorf("rebound import: %s", got)
	}
}

func TestSyntaxAndCompileErrorPositions(t *testing.T) {
	e := newEngine(t)
	r, _ := run(t, e, "x := 1\ny := (")
	if r.Err == nil || r.Err.Name != "SyntaxError" || !regexpMatch(`^cell\[\d+\]:2:\d+: `, r.Err.Value) {
		t.Errorf("syntax error: %+v", r.Err)
	}
	r, _ = run(t, e, "import \"fmt\"\na := 1\n\tfmt.Println(a, bogus)")
	if r.Err == nil || r.Err.Name != "CompileError" || !regexpMatch(`^cell\[\d+\]:3:17: undefined: bogus`, r.Err.Value) {
		t.Errorf("compile error: %+v", r.Err)
	}
	// A declaration after statements, in a mixed cell.
	r, _ = run(t, e, "b := 2\nfunc g() int {\n\treturn nothere\n}")
	if r.Err == nil || !regexpMatch(`^cell\[\d+\]:3:9: undefined: nothere`, r.Err.Value) {
		t.Errorf("decl compile error: %+v", r.Err)
	}
}

func TestResultFormatting(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, `import ("fmt"; "errors"; "image"; "image/color")
type T struct{ A int }
func (t T) String() string { return fmt.Sprintf("T<%d>", t.A) }
type M int
type H struct{}
func (H) HTML() string { return "<b>h</b>" }
func (H) Markdown() string { return "**h**" }
type J struct{}
func (J) JSON() any { return map[string]int{"a": 1} }
type P struct{}
func (P) PNG() []byte { return []byte{1, 2, 3} }
func two() (int, string) { return 1, "x" }
func none() {}`)
	cases := []struct {
		code, text string
		mime       string
	}{
		{"T{3}", "T<3>", ""},
		{"t := T{4}\nt", "T<4>", ""},
		{"M(7)", "7", ""},
		{`"hi"`, `"hi"`, ""},
		{"1.5 * 2", "3", ""},
		{"errors.New(\"bad\")", "bad", ""},
		{"H{}", "{}", "text/html"},
		{"H{}", "{}", "text/markdown"},
		{"J{}", "{}", "application/json"},
		{"P{}", "{}", "image/png"},
		{"image.NewRGBA(image.Rect(0, 0, 2, 2))", "", "image/png"},
		{"color.RGBA{1, 2, 3, 4}", "{1 2 3 4}", ""},
		{"two()", `1, "x"`, ""},
		{"[]int{1, 2}", "[1 2]", ""},
		{"nil", "<nil>", ""},
	}
	for _, c := range cases {
		r, io := mustRun(t, e, c.code)
		if c.text != "" && resultText(r) != c.text {
			t.Errorf("%s: text/plain %q, want %q (stderr %q)", c.code, resultText(r), c.text, io.text("stderr"))
		}
		if c.mime != "" {
			if _, ok := r.Result[c.mime]; !ok {
				t.Errorf("%s: no %s in %v", c.code, c.mime, r.Result)
			}
		}
	}
	for _, code := range []string{"none()", "fmt.Println(\"x\")", "x := 1", "var y = 2"} {
		r, _ := mustRun(t, e, code)
		if code == "fmt.Println(\"x\")" {
			continue // a call with results shows them, like any expression
		}
		if r.Result != nil {
			t.Errorf("%s: unexpected result %v", code, r.Result)
		}
	}
}

// TestStreamingWhileRunning: output arrives while the cell runs, not when
// it ends: the cell waits for a file that the test creates only once the
// cell's first output has arrived.
func TestStreamingWhileRunning(t *testing.T) {
	e := newEngine(t)
	seen := filepath.Join(t.TempDir(), "seen")
	io := &fakeIO{onStream: func(name, text string) {
		if strings.Contains(text, "early") {
			if err := os.WriteFile(seen, nil, 0o600); err != nil {
				t.Error(err)
			}
		}
	}}
	r := runIO(t, e, fmt.Sprintf("import (\"fmt\"; \"os\"; \"time\")\nfmt.Println(\"early\")\nfor {\n\tif _, err := os.Stat(%q); err == nil {\n\t\tbreak\n\t}\n\ttime.Sleep(time.Millisecond)\n}\nfmt.Println(\"late\")", seen), io)
	if r.Err != nil {
		t.Fatalf("the cell never saw its output arrive: %v", r.Err)
	}
	if out := io.text("stdout"); out != "early\nlate\n" {
		t.Errorf("stdout %q", out)
	}
}

func TestErrorsKeepState(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "kept := 42")
	cases := []struct{ code, name, value, trace string }{
		{"func boom() {\n\tpanic(\"kaboom\")\n}\nboom()", "panic", "kaboom", "cell[%d]:2:2"},
		{"os.Exit(3)", "Exit", "exit status 3", "os.Exit(3)"},
		{"log.Fatal(\"fatal!\")", "Exit", "exit status 1", ""},
		{"type N struct{ X int }\nvar p *N\n_ = p.X", "panic", "runtime error: invalid memory address or nil pointer dereference", "cell[%d]:3:5"},
		{"var m map[string]int\nm[\"a\"] = 1", "panic", "assignment to entry in nil map", "cell[%d]:2:1"},
		{"var s []int\n_ = s[3]", "panic", "runtime error: index out of range [3] with length 0", "cell[%d]:2:5"},
		{"a, b := 1, 0\n_ = a / b", "panic", "runtime error: integer divide by zero", "cell[%d]:2:5"},
		// The cell sleeps until the goroutine's panic ends it.
		{"go func() {\n\tpanic(\"in goroutine\")\n}()\ntime.Sleep(time.Hour)", "panic", "in goroutine", "goroutine started by the cell"},
		{"func gp() { panic(\"named\") }\ngo gp()\ntime.Sleep(time.Hour)", "panic", "named", "main.gp("},
	}
	for _, c := range cases {
		r, _ := run(t, e, c.code)
		if r.Err == nil {
			t.Errorf("%q: no error", c.code)
			continue
		}
		if strings.Contains(c.trace, "%d") {
			counter.Lock()
			c.trace = fmt.Sprintf(c.trace, counter.n)
			counter.Unlock()
		}
		if r.Err.Name != c.name || !strings.Contains(r.Err.Value, c.value) {
			t.Errorf("%q: got %s: %s, want %s containing %q", c.code, r.Err.Name, r.Err.Value, c.name, c.value)
		}
		if c.trace != "" && !strings.Contains(strings.Join(r.Err.Traceback, "\n"), c.trace) {
			t.Errorf("%q: traceback lacks %q:\n%s", c.code, c.trace, strings.Join(r.Err.Traceback, "\n"))
		}
	}
	r, _ := mustRun(t, e, "kept")
	if resultText(r) != "42" {
		t.Errorf("state lost: kept = %q", resultText(r))
	}
}

func TestInterrupt(t *testing.T) {
	if raceEnabled {
		// yaegi v0.16.1's ExecuteWithContext returns on cancel while its
		// goroutine still writes the named results and the frame: a race
		// inside the dependency, not in this package.
		t.Skip("yaegi's ExecuteWithContext races with itself after a cancel")
	}
	e := newEngine(t)
	mustRun(t, e, "import \"time\"\nstate := \"kept\"")
	for _, code := range []string{
		"for {}",
		"select {}",
		"ch := make(chan int)\n<-ch",
		"time.Sleep(time.Hour)",
		"n := 0\nfor { n++ }",
	} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		r := e.Execute(ctx, frontend.ExecuteRequest{Code: code, ExecutionCount: 99}, &fakeIO{})
		took := time.Since(start)
		cancel()
		if r.Err == nil || r.Err.Name != "Interrupted" {
			t.Errorf("%q: err %v, want Interrupted", code, r.Err)
		}
		// Each would run forever: ended, it was stopped.
		if took > prompt {
			t.Errorf("%q: interrupt took %v", code, took)
		}
	}
	r, _ := mustRun(t, e, "state")
	if resultText(r) != `"kept"` {
		t.Errorf("state after interrupts: %q", resultText(r))
	}
}

func TestLanguageRewrites(t *testing.T) {
	e := newEngine(t)
	cases := []struct{ code, want string }{
		{"min(3, 1, 2)", "1"},
		{"max(1.5, 2, 0.5)", "2"},
		{"max(\"a\", \"c\", \"b\")", `"c"`},
		{"x := 5\nmin(x, 9)", "5"},
		{"m := map[string]int{\"a\": 1}\nclear(m)\nlen(m)", "0"},
		{"s := []int{1, 2}\nclear(s)\ns", "[0 0]"},
		{"sum := 0\nfor i := range 5 { sum += i }\nsum", "10"},
		{"c := 0\nfor range 3 { c++ }\nc", "3"},
		{"n := 4\nt := 0\nfor i := range n { t += i }\nt", "6"},
		{"const K = 3\nk := 0\nfor range K { k++ }\nk", "3"},
		// A var statement after a statement, with a 3-letter name (as long as new).
		{"first := 1\nvar buf []int\nbuf = append(buf, first)\nbuf", "[1]"},
		{"q := 0\nfor i := range len(\"abcd\") { q = i }\nq", "3"},
		{"var fs []func() int\nfor i := 0; i < 3; i++ { fs = append(fs, func() int { return i }) }\nfs[0]() + fs[1]() + fs[2]()", "3"},
		{"var gs []func() string\nfor _, s := range []string{\"a\", \"b\"} { gs = append(gs, func() string { return s }) }\ngs[0]() + gs[1]()", `"ab"`},
		{"outer := 0\nL: for i := range 3 { for range 3 { outer += i; continue L } }\nouter", "3"},
	}
	for _, c := range cases {
		r, io := run(t, e, c.code)
		if r.Err != nil {
			t.Errorf("%q: %v (stderr %q)", c.code, r.Err, io.text("stderr"))
			continue
		}
		if got := resultText(r); got != c.want {
			t.Errorf("%q = %s, want %s", c.code, got, c.want)
		}
	}
	r, _ := mustRun(t, e, "tot := 0\nfor x := range func(yield func(int) bool) { yield(4); yield(5) } { tot += x }\ntot")
	if got := resultText(r); got != "9" {
		t.Errorf("range over func: %s", got)
	}
}

func TestMainIsRunOnce(t *testing.T) {
	e := newEngine(t)
	_, io := mustRun(t, e, "import \"fmt\"\nfunc main() { fmt.Println(\"main ran\") }")
	if !strings.Contains(io.text("stdout"), "main ran") {
		t.Errorf("main did not run: %q", io.text("stdout"))
	}
	_, io = mustRun(t, e, "fmt.Println(\"later\")")
	if strings.Contains(io.text("stdout"), "main ran") {
		t.Errorf("main ran again: %q", io.text("stdout"))
	}
}

func TestMagics(t *testing.T) {
	t.Chdir(".") // %cd below: back where the test started afterwards
	e := newEngine(t)
	r, io := mustRun(t, e, "%env GOACCEL_TEST_VAR=hello")
	_, io = mustRun(t, e, "%env GOACCEL_TEST_VAR")
	if strings.TrimSpace(io.text("stdout")) != "hello" {
		t.Errorf("%%env get: %q", io.text("stdout"))
	}
	r, _ = mustRun(t, e, "os.Getenv(\"GOACCEL_TEST_VAR\")")
	if resultText(r) != `"hello"` {
		t.Errorf("cell env: %q", resultText(r))
	}
	dir := t.TempDir()
	// %cd changes the process's directory: go back before dir is removed
	// (later engines run the toolchain there).
	t.Chdir(".")
	_, io = mustRun(t, e, "%cd "+dir)
	if !strings.Contains(io.text("stdout"), dir) {
		t.Errorf("%%cd: %q", io.text("stdout"))
	}
	r, io = run(t, e, "!echo shell-out; exit 3")
	if !strings.Contains(io.text("stdout"), "shell-out") || r.Err == nil || r.Err.Name != "ShellError" || r.Err.Value != "!echo shell-out; exit 3: exit status 3" {
		t.Errorf("!cmd: out %q err %v", io.text("stdout"), r.Err)
	}
	mustRun(t, e, "func declared() {}\nv := 1")
	_, io = mustRun(t, e, "%who")
	if !strings.Contains(io.text("stdout"), "declared") || !strings.Contains(io.text("stdout"), "v ") {
		t.Errorf("%%who: %q", io.text("stdout"))
	}
	r, io = mustRun(t, e, "%time\nv + 1")
	if !strings.Contains(io.text("stdout"), "Wall time") || resultText(r) != "2" {
		t.Errorf("%%time: %q %v", io.text("stdout"), r.Result)
	}
	r, io = mustRun(t, e, "%time v + 2")
	if !strings.Contains(io.text("stdout"), "Wall time") || resultText(r) != "3" {
		t.Errorf("%%time inline: %q %v", io.text("stdout"), r.Result)
	}
	mustRun(t, e, "%reset")
	if len(e.Declarations()) != 0 {
		t.Errorf("declarations after %%reset: %v", e.Declarations())
	}
	r, _ = run(t, e, "v")
	if r.Err == nil {
		t.Error("v survived %reset")
	}
	r, _ = run(t, e, "%nosuch")
	if r.Err == nil || r.Err.Name != "MagicError" {
		t.Errorf("unknown magic: %v", r.Err)
	}
	_, io = mustRun(t, e, "%help")
	for _, m := range []string{"%reset", "%args", "%go get", "%go mod", "%use DIR", "go.work"} {
		if !strings.Contains(io.text("stdout"), m) {
			t.Errorf("%%help lacks %s: %q", m, io.text("stdout"))
		}
	}
}

func TestStdin(t *testing.T) {
	e := newEngine(t)
	io := &fakeIO{inputs: []string{"gopher", "second line", "s3cret"}}
	r := runIO(t, e, `import ("bufio"; "fmt"; "os"; "github.com/goaccel/goaccel/input")
var name string
fmt.Scan(&name)
line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
pw, err := input.Password("Password: ")
name + "|" + line + "|" + pw + "|" + fmt.Sprint(err)`, io)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if got := resultText(r); got != `"gopher|second line\n|s3cret|<nil>"` {
		t.Errorf("stdin: %s", got)
	}
	if len(io.password) != 3 || io.password[1] || !io.password[2] || io.prompts[2] != "Password: " {
		t.Errorf("input requests: prompts %q password %v", io.prompts, io.password)
	}
	// Not allowed: an error, not a hang.
	r = e.Execute(context.Background(), frontend.ExecuteRequest{Code: "input.Line(\"x\")", AllowStdin: false}, &fakeIO{})
	if r.Err != nil || !strings.Contains(resultText(r), "not supported") {
		t.Errorf("stdin not allowed: %v %v", r.Err, r.Result)
	}
}

func TestDeclarationLog(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "import \"strings\"\n// Up uppercases.\nfunc Up(s string) string { return strings.ToUpper(s) }\ntype P struct{ X int }\nfunc (p P) Double() int { return 2 * p.X }\nconst C = 1\nvar (\n\tA = 1\n\tB, D = 2, 3\n)\nn := Up(\"x\")")
	mustRun(t, e, "func Up(s string) string { return s }")
	var got []string
	for _, d := range e.Declarations() {
		got = append(got, string(d.Kind)+" "+d.Name)
	}
	// Compiled cells log each variable with the type Go gave it.
	want := "import strings|type P|method P.Double|const C|var A|var B|var D|var n|func Up"
	if strings.Join(got, "|") != want {
		t.Errorf("log:\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
	for _, d := range e.Declarations() {
		switch d.Name {
		case "Up":
			if d.Source != "func Up(s string) string { return s }" {
				t.Errorf("Up source %q", d.Source)
			}
		case "B":
			if d.Source != "var B int" || len(d.Names) != 1 {
				t.Errorf("B: %+v", d)
			}
		case "n":
			if !d.FromStatement || d.Source != "var n string" {
				t.Errorf("n: %+v", d)
			}
		case "strings":
			if d.Source != "import \"strings\"" || d.Path != "strings" {
				t.Errorf("import: %+v", d)
			}
		}
	}
}

func TestUserExpressionsAndHelp(t *testing.T) {
	e := newEngine(t)
	io := &fakeIO{}
	r := e.Execute(context.Background(), frontend.ExecuteRequest{Code: "a := 20", UserExpressions: map[string]string{"ok": "a * 2", "bad": "nope"}}, io)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	ok, _ := r.UserExpressions["ok"].(map[string]any)
	if ok["status"] != "ok" || ok["data"].(frontend.MIMEBundle)["text/plain"] != "40" {
		t.Errorf("user expression ok: %v", r.UserExpressions["ok"])
	}
	bad, _ := r.UserExpressions["bad"].(map[string]any)
	if bad["status"] != "error" || bad["ename"] == "" {
		t.Errorf("user expression bad: %v", r.UserExpressions["bad"])
	}
	r, _ = mustRun(t, e, "strings.Split?")
	if len(r.Payload) != 1 || r.Payload[0]["source"] != "page" || !strings.Contains(r.Payload[0]["data"].(map[string]any)["text/plain"].(string), "Split") {
		t.Errorf("help payload: %v", r.Payload)
	}
}

func TestDisplayFromCell(t *testing.T) {
	e := newEngine(t)
	_, io := mustRun(t, e, "import \"github.com/goaccel/goaccel/display\"\ndisplay.HTML(\"<i>x</i>\")\ndisplay.Markdown(\"**y**\")")
	if len(io.displays) != 2 || io.displays[0]["text/html"] != "<i>x</i>" {
		t.Errorf("displays: %v", io.displays)
	}
}

// The three cells of issue 20: a redefinition that leaves earlier code on
// its old definitions is accepted, runs as go run would, and says so in one
// stderr line, shown (like an added import) before what the cell prints.
func TestRedefinitionSaysOnceBeforeTheOutput(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "type T struct{ a int }\nfunc f(t T) int { return t.a }\nfunc g(t T) int { return t.a * 2 }\nfunc main() { fmt.Println(f(T{1}), g(T{1})) }")
	_, io := mustRun(t, e, "type T []int\nfunc main() { fmt.Println(strings.Repeat(\"x\", len(T{1, 2}))) }")
	// Consecutive writes to one stream are joined first: a line may come
	// in pieces.
	var runs []stream
	for _, s := range io.streams {
		if n := len(runs); n > 0 && runs[n-1].name == s.name {
			runs[n-1].text += s.text
		} else {
			runs = append(runs, s)
		}
	}
	var order []string
	for _, s := range runs {
		for _, line := range strings.SplitAfter(s.text, "\n") {
			if line != "" {
				order = append(order, s.name+": "+line)
			}
		}
	}
	var warnings []string
	for _, l := range order {
		if strings.Contains(l, "warning") {
			warnings = append(warnings, l)
		}
	}
	// (newEngine's engine may be shared: cell numbers vary)
	want := regexp.MustCompile(`^stderr: goaccel: warning: func f \(cell\[\d+\]\) and func g \(cell\[\d+\]\) keep their previous definitions`)
	if len(warnings) != 1 || !want.MatchString(warnings[0]) {
		t.Fatalf("want one stderr warning naming f and g, got %q", order)
	}
	if last := order[len(order)-1]; last != "stdout: xx\n" {
		t.Errorf("the cell's output should come after the kernel's notes; streams %q", order)
	}
	if !strings.Contains(strings.Join(order, ""), `goaccel: added import "strings"`) {
		t.Errorf("no note of the added import: %q", order)
	}
}

// A function redefined with the same signature is what earlier cells' code
// calls from the redefining cell's own statements on (GoMLX's tutorial
// redefines AttachToLoop and calls TrainMain in the same cell), and running
// a cell again never makes its functions call themselves.
func TestCompatibleRedefinitionTakesEffectInItsCell(t *testing.T) {
	e := newEngine(t)
	cellA := "func Attach(n *int) { fmt.Println(\"A\", *n) }\nfunc TrainMain() { n := 1; Attach(&n) }"
	out := func(code string) string {
		t.Helper()
		r, io := run(t, e, code)
		if r.Err != nil {
			t.Fatalf("%q: %s: %s", code, r.Err.Name, r.Err.Value)
		}
		var b strings.Builder
		for _, s := range io.streams {
			if s.name == "stdout" {
				b.WriteString(s.text)
			}
		}
		return b.String()
	}
	out(cellA)
	out(cellA) // run again: its functions are redefined by themselves
	if got := out("TrainMain()"); got != "A 1\n" {
		t.Fatalf("after running the cell again, TrainMain() printed %q", got)
	}
	if got := out("func Attach(n *int) { fmt.Println(\"B\", *n) }\nTrainMain()"); got != "B 1\n" {
		t.Fatalf("in the redefining cell, TrainMain() printed %q, want the new Attach's output", got)
	}
	if got := out("TrainMain()"); got != "B 1\n" {
		t.Fatalf("after it, %q", got)
	}
	out(cellA) // A's definitions are the newest again
	if got := out("TrainMain()\nn := 2\nAttach(&n)"); got != "A 1\nA 2\n" {
		t.Fatalf("after running cell A again, %q", got)
	}
	// A cell whose variables fail to initialize binds nothing: the
	// redirection it made for its own statements is undone.
	r, _ := run(t, e, "func Attach(n *int) { fmt.Println(\"C\", *n) }\nvar boom = func() int { panic(\"boom\") }()")
	if r.Err == nil {
		t.Fatal("the panicking initializer did not fail the cell")
	}
	if got := out("TrainMain()"); got != "A 1\n" {
		t.Fatalf("after a cell that bound nothing, %q", got)
	}
}

// Programs run back to back in one session: a cell Go accepts on its own
// is accepted although an earlier cell redeclared a builtin it uses the
// builtin's way, or declared a variable with the name it imports.
func TestCellAcceptedAloneIsAcceptedInTheSession(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "func println(a, b int) { fmt.Println(\"mine\", a+b) }")
	_, io := mustRun(t, e, "func main() { println(\"builtin\", 1, 2) }")
	// (the builtin writes its operands in pieces: join the stream's text)
	if got := io.text("stderr"); !strings.Contains(got, "builtin 1 2") {
		t.Errorf("the builtin println's output is missing: %q", got)
	}
	_, io = mustRun(t, e, "println(1, 2)")
	if got := io.text("stdout"); !strings.Contains(got, "mine 3") {
		t.Errorf("cell 1's println did not run: %s", got)
	}
	mustRun(t, e, "var bytes = []byte(\"hi\")")
	r, _ := mustRun(t, e, "import \"bytes\"\nstring(bytes.ToUpper([]byte(\"a\")))")
	if got := resultText(r); got != `"A"` {
		t.Errorf("bytes.ToUpper after a variable named bytes: %s", got)
	}
}

// A type declared in a group with others is compiled again for a cell that
// redeclares one of the others: the group comes back without it.
func TestRecompiledGroupWithoutWhatTheCellRedeclares(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, "type (\n\tS struct{ f int }\n\tT struct{ n int }\n)\nfunc h() []int { return nil }\nfunc (T) m() int { return len(h()) }")
	r, _ := mustRun(t, e, "type S struct{ g string }\nfunc h() string { return \"abc\" }\nT{}.m()")
	if got := resultText(r); got != "3" {
		t.Errorf("T{}.m() = %s, want 3", got)
	}
	r, _ = mustRun(t, e, "S{g: \"y\"}.g")
	if got := resultText(r); got != `"y"` {
		t.Errorf("the new S: %s", got)
	}
}
