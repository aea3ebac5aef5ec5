package notebook

import (
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/internal/modtest"
)

// Fixture modules are served by a file-based proxy built from
// build/testdata/proxy. Plugins stay loaded for the life of the test
// process, so the tests here load one version of each fixture module.

func hermetic(t *testing.T) {
	t.Helper()
	modtest.Env(t, modtest.Proxy(t, filepath.Join("build", "testdata", "proxy")))
}

func TestGoGetAndGoMod(t *testing.T) {
	hermetic(t)
	e := newEngine(t)
	_, io := mustRun(t, e, "%go mod")
	if !strings.Contains(io.text("stdout"), "module goaccel.session") {
		t.Errorf("%%go mod: %q", io.text("stdout"))
	}
	_, io = mustRun(t, e, "%go get example.com/gxfix/dep@v1.0.0")
	if !strings.Contains(io.text("stdout"), "example.com/gxfix/dep v1.0.0") {
		t.Errorf("%%go get: %q", io.text("stdout"))
	}
	_, io = mustRun(t, e, "%go mod")
	if !strings.Contains(io.text("stdout"), "example.com/gxfix/dep v1.0.0") {
		t.Errorf("%%go mod after %%go get: %q", io.text("stdout"))
	}
	r, _ := mustRun(t, e, "import \"example.com/gxfix/dep\"\ndep.Version()")
	if resultText(r) != `"dep v1.0.0"` {
		t.Errorf("dep.Version() = %s", resultText(r))
	}
	// needsnew needs dep v1.1.0, and cells loaded v1.0.0.
	r, _ = run(t, e, "%go get example.com/gxfix/needsnew@v1.0.0")
	if r.Err == nil || r.Err.Name != "VersionConflict" || !strings.Contains(r.Err.Value, "example.com/gxfix/dep v1.1.0 (cells already loaded v1.0.0)") ||
		!strings.Contains(r.Err.Value, "restart the kernel") {
		t.Errorf("want a version conflict, got %+v", r.Err)
	}
	r, _ = run(t, e, "%go get example.com/gxfix/needsnew@v7.0.0")
	if r.Err == nil || r.Err.Name != "FetchError" || !strings.Contains(r.Err.Value, "no such version of example.com/gxfix/needsnew") {
		t.Errorf("want a fetch error, got %+v", r.Err)
	}
	for _, bad := range []string{"%go", "%go get", "%go build ."} {
		if r, _ := run(t, e, bad); r.Err == nil || r.Err.Name != "MagicError" {
			t.Errorf("%s: %+v", bad, r.Err)
		}
	}
}

func TestFirstImportFetchesTheModule(t *testing.T) {
	hermetic(t)
	e := newEngine(t)
	r, io := mustRun(t, e, "import \"example.com/gxfix/auto\"\nauto.Answer()")
	if resultText(r) != "42" {
		t.Errorf("auto.Answer() = %s", resultText(r))
	}
	for _, want := range []string{"goaccel: fetching the module that provides example.com/gxfix/auto", "goaccel: added example.com/gxfix/auto v1.0.0 to the session module"} {
		if !strings.Contains(io.text("stderr"), want) {
			t.Errorf("stderr lacks %q:\n%s", want, io.text("stderr"))
		}
	}
	// Without network the error names the package and says what to do.
	t.Setenv("GOPROXY", "off")
	r, _ = run(t, e, "import \"example.com/gxfix/elsewhere/pkg\"\npkg.F()")
	if r.Err == nil || r.Err.Name != "ImportError" || !strings.Contains(r.Err.Value, "cannot fetch example.com/gxfix/elsewhere/pkg") ||
		!strings.Contains(r.Err.Value, "GOPROXY=off") || !strings.Contains(strings.Join(r.Err.Traceback, "\n"), "cell[") {
		t.Errorf("want an import error about GOPROXY=off, got %+v", r.Err)
	}
}

func TestUseLocalModuleAndReload(t *testing.T) {
	hermetic(t)
	e := newEngine(t)
	dir := modtest.CopyDir(t, filepath.Join("build", "testdata", "localmod"))
	_, io := mustRun(t, e, "%use "+dir)
	if !strings.Contains(io.text("stdout"), "using example.com/gxlocal from "+dir) {
		t.Errorf("%%use: %q", io.text("stdout"))
	}
	r, _ := mustRun(t, e, "import \"example.com/gxlocal\"\nc := &gxlocal.Counter{}\nc.Inc()\ngxlocal.Hello()")
	if resultText(r) != `"v1"` {
		t.Errorf("Hello() = %s", resultText(r))
	}
	hello := filepath.Join(dir, "hello.go")
	src, _ := os.ReadFile(hello)
	if err := os.WriteFile(hello, []byte(strings.Replace(string(src), `"v1"`, `"v2"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, e, "%use "+dir)
	r, _ = mustRun(t, e, "gxlocal.Hello()")
	if resultText(r) != `"v2"` {
		t.Errorf("after the edit and %%use: Hello() = %s", resultText(r))
	}
	// A value made with the first version keeps working.
	r, _ = mustRun(t, e, "c.Inc()")
	if resultText(r) != "2" {
		t.Errorf("c.Inc() = %s", resultText(r))
	}
	r, _ = run(t, e, "%use "+t.TempDir())
	if r.Err == nil || !strings.Contains(r.Err.Value, "no go.mod") {
		t.Errorf("%%use of a directory without go.mod: %+v", r.Err)
	}
}

func TestGoWorkBesideTheNotebook(t *testing.T) {
	hermetic(t)
	dir := t.TempDir()
	if err := os.Rename(modtest.CopyDir(t, filepath.Join("build", "testdata", "workmod")), filepath.Join(dir, "workmod")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.work"), []byte("go 1.22\n\nuse ./workmod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	e := newEngine(t)
	r, io := mustRun(t, e, "import \"example.com/gxwork\"\ngxwork.Name()")
	if resultText(r) != `"from go.work"` || !strings.Contains(io.text("stderr"), "using example.com/gxwork (go.work") {
		t.Errorf("got %s, stderr %q", resultText(r), io.text("stderr"))
	}
	_, io = mustRun(t, e, "%use")
	if !strings.Contains(io.text("stdout"), "using example.com/gxwork (go.work)") {
		t.Errorf("%%use: %q", io.text("stdout"))
	}
}

func TestArgsAndFlags(t *testing.T) {
	args, fs := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = args, fs })
	e := newEngine(t)
	_, io := mustRun(t, e, `%args -n 5 "hello world" 'x y'`)
	if !strings.Contains(io.text("stdout"), `os.Args[1:] = ["-n" "5" "hello world" "x y"]`) {
		t.Errorf("%%args: %q", io.text("stdout"))
	}
	cell := "import \"flag\"\nn := flag.Int(\"n\", 1, \"count\")\nflag.Parse()\nfmt.Println(*n, flag.Args())"
	_, io = mustRun(t, e, cell)
	if !strings.Contains(io.text("stdout"), "5 [hello world x y]") {
		t.Errorf("flag.Parse: %q", io.text("stdout"))
	}
	// %args gives a fresh flag set: the cell defining -n runs again.
	mustRun(t, e, "%args -n=7")
	_, io = mustRun(t, e, cell)
	if !strings.Contains(io.text("stdout"), "7 []") {
		t.Errorf("flag.Parse after %%args again: %q", io.text("stdout"))
	}
	r, _ := mustRun(t, e, "os.Args[1:]")
	if resultText(r) != "[-n=7]" {
		t.Errorf("os.Args[1:] = %s", resultText(r))
	}
	if r, _ := run(t, e, `%args "open`); r.Err == nil || !strings.Contains(r.Err.Value, "unterminated") {
		t.Errorf("bad quoting: %+v", r.Err)
	}
}

func TestShellLines(t *testing.T) {
	e := newEngine(t)
	_, io := mustRun(t, e, "!echo one \\\n  two \\\n  three")
	if strings.TrimSpace(io.text("stdout")) != "one two three" {
		t.Errorf("continued line: %q", io.text("stdout"))
	}
	r, io := run(t, e, "!echo before; false\nafterShell := 1")
	if r.Err == nil || r.Err.Name != "ShellError" || r.Err.Value != "!echo before; false: exit status 1" || !strings.Contains(io.text("stdout"), "before") {
		t.Errorf("failing command: %+v %q", r.Err, io.text("stdout"))
	}
	if r, _ := run(t, e, "afterShell"); r.Err == nil {
		t.Error("the rest of a cell ran after its shell command failed")
	}
}

func TestModulesNeedCompiledCells(t *testing.T) {
	e, err := New(Options{Version: "test", Interpret: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	for _, c := range []string{"%go get example.com/gxfix/dep@v1.0.0", "%go mod", "%use ."} {
		r, _ := run(t, e, c)
		if r.Err == nil || !strings.Contains(r.Err.Value, "compiled cells are unavailable here (interpretation was asked for)") {
			t.Errorf("%s: %+v", c, r.Err)
		}
	}
	r, _ := run(t, e, "import \"example.com/gxfix/dep\"")
	if r.Err == nil || !strings.Contains(r.Err.Value, "compiled cells are unavailable (interpretation was asked for)") {
		t.Errorf("import: %+v", r.Err)
	}
	// %args reaches interpreted cells too.
	args, fs := os.Args, flag.CommandLine
	t.Cleanup(func() { os.Args, flag.CommandLine = args, fs })
	mustRun(t, e, "%args a b")
	if r, _ := mustRun(t, e, "os.Args[1:]"); resultText(r) != "[a b]" {
		t.Errorf("interpreted os.Args[1:] = %s", resultText(r))
	}
}

func TestInterruptWhileFetching(t *testing.T) {
	hermetic(t)
	// A proxy that never answers: the fetch hangs until the interrupt.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	t.Setenv("GOPROXY", "http://"+l.Addr().String())
	e := newEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	r := e.Execute(ctx, frontend.ExecuteRequest{Code: "import \"example.com/gxfix/hangs\"\nhangs.F()", ExecutionCount: 1}, &fakeIO{})
	// The proxy never answers: ended, the fetch was interrupted.
	if r.Err == nil || r.Err.Name != "Interrupted" || time.Since(start) > prompt {
		t.Errorf("want Interrupted soon after the interrupt, got %+v after %v", r.Err, time.Since(start))
	}
}
