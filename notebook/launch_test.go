package notebook

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/internal/modtest"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook/fdcapture"
	"github.com/goaccel/goaccel/symbols"
)

// envTestWorker makes this test binary a launched worker (as `goaccel
// worker` is for the kernel).
const envTestWorker = "GOACCEL_NOTEBOOK_TEST_WORKER"

// envTestInterpret makes such a worker interpret its cells.
const envTestInterpret = "GOACCEL_NOTEBOOK_TEST_INTERPRET"

func TestMain(m *testing.M) {
	if os.Getenv(envTestWorker) == "1" {
		os.Exit(testWorkerMain())
	}
	os.Exit(m.Run())
}

// testWorkerMain is cmd/kernel's worker role with a default engine.
func testWorkerMain() int {
	opts := Options{Version: "test"}
	if os.Getenv(envTestInterpret) == "1" {
		opts.Interpret = true
		opts.Symbols = []map[string]map[string]reflect.Value{symbols.Symbols}
	}
	e, err := New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test worker:", err)
		return 1
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return launcher.WorkerMain(ctx, e)
}

// launchEngine returns an engine installed as the launcher's session, with
// this test binary as the worker command.
func launchEngine(t *testing.T) *Engine {
	t.Helper()
	return installLaunch(t, newEngine(t), envTestWorker+"=1")
}

// installLaunch installs e as the launcher's session, with this test
// binary, given env, as the worker command.
func installLaunch(t *testing.T, e *Engine, env ...string) *Engine {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	restoreSession := launcher.SetSession(e)
	restoreCmd := launcher.SetWorkerCommand(launcher.WorkerCommand{Path: exe, Env: env})
	t.Cleanup(func() {
		restoreCmd()
		restoreSession()
	})
	return e
}

// runLaunch runs a cell that launches workers (each builds cells: twice
// runIO's hang guard).
func runLaunch(t *testing.T, e *Engine, code string) (frontend.ExecuteReply, *fakeIO) {
	t.Helper()
	counter.Lock()
	counter.n++
	n := counter.n
	counter.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	io := &fakeIO{}
	return e.Execute(ctx, frontend.ExecuteRequest{Code: code, ExecutionCount: n}, io), io
}

func wantIn(t *testing.T, what, text string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("%s lacks %q:\n%s", what, s, text)
		}
	}
}

// TestCompiledLaunch launches cell functions in two workers: the globals
// they use travel, arguments travel, results come back typed (a cell's
// struct, a []float64), and a function declared in the launching cell
// works too.
func TestCompiledLaunch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes that build cells")
	}
	e := launchEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable:", e.compErr)
	}
	mustRun(t, e, `import (
	"fmt"
	"os"

	"github.com/goaccel/goaccel/debuglauncher"
)

type Point struct{ X, Y float64 }

func (p Point) String() string { return fmt.Sprintf("(%g, %g)", p.X, p.Y) }

var scale = 2.0
offsets := []float64{1, 2}
unused := make(chan int) // not reached by the launched function: stays behind
_ = unused`)
	mustRun(t, e, `func work(name string, n int) (Point, []float64, error) {
	fmt.Println("hello", name, "from", os.Getenv("RANK"), Point{X: 1})
	return Point{X: scale * float64(n), Y: offsets[1]}, []float64{scale, float64(n)}, nil
}`)
	start := time.Now()
	r, io := runLaunch(t, e, `res, err := debuglauncher.DebugLauncher(work, []any{"w", 3}, 2)
p := res[1][0].(Point)
xs := res[0][1].([]float64)
fmt.Println("results:", p.X, p.Y, xs, res[0][2], err)`)
	t.Logf("launch with 2 workers: %v", time.Since(start))
	if r.Err != nil {
		t.Fatalf("launch failed: %v\nstdout: %s\nstderr: %s", r.Err, io.text("stdout"), io.text("stderr"))
	}
	wantIn(t, "stdout", io.text("stdout"), "[rank 0] hello w from 0 (1, 0)", "[rank 1] hello w from 1 (1, 0)", "results: 6 2 [2 3] <nil> <nil>")

	// Declared and launched in one cell, with a variable of that cell.
	r, io = runLaunch(t, e, `type Tag string
label := Tag("same cell")
func greet(times ...int) (Tag, int) {
	fmt.Println(label, len(times))
	return label + "!", len(times) * int(scale)
}
res2, err := debuglauncher.DebugLauncher(greet, []any{1, 2, 3}, 2)
fmt.Printf("%v %T %v\n", res2[0], res2[1][0], err)`)
	if r.Err != nil {
		t.Fatalf("same-cell launch failed: %v\nstdout: %s\nstderr: %s", r.Err, io.text("stdout"), io.text("stderr"))
	}
	wantIn(t, "stdout", io.text("stdout"), "[rank 1] same cell 3", "[same cell! 6] main.Tag <nil>")
}

// TestCompiledLaunchFailures: a panic in a worker comes back with its
// traceback, a returned error with its text, and a variable that cannot
// travel stops the launch before any worker starts.
func TestCompiledLaunchFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes that build cells")
	}
	e := launchEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable:", e.compErr)
	}
	mustRun(t, e, `import (
	"errors"
	"fmt"
	"os"

	"github.com/goaccel/goaccel/debuglauncher"
	"github.com/goaccel/goaccel/launcher"
)

func explode() {
	if os.Getenv("RANK") == "1" {
		var m map[string]int
		m["x"] = 1
	}
}

func refuse() (int, error) { return 0, errors.New("refused on rank " + os.Getenv("RANK")) }

ch := make(chan int)
func usesChannel() { close(ch) }`)
	r, io := runLaunch(t, e, `_, err := debuglauncher.DebugLauncher(explode, nil, 2)
fmt.Printf("%v\n", err)`)
	if r.Err != nil {
		t.Fatalf("cell failed: %v", r.Err)
	}
	counter.Lock()
	declCell := counter.n - 1
	counter.Unlock()
	report := io.text("stdout") + io.text("stderr")
	// The worker's frames have the notebook's positions; the worker's own
	// calling cell is not shown.
	wantIn(t, "panic report", report, "assignment to entry in nil map", "main.explode()", fmt.Sprintf("\tcell[%d]:13:3\n", declCell))
	if strings.Contains(report, "<cell>") {
		t.Errorf("the panic report shows the worker's calling cell:\n%s", report)
	}

	r, io = runLaunch(t, e, `_, err = debuglauncher.DebugLauncher(refuse, nil, 2)
fmt.Println(err)`)
	if r.Err != nil {
		t.Fatalf("cell failed: %v", r.Err)
	}
	wantIn(t, "error result", io.text("stdout"), "refused on rank")

	r, io = runLaunch(t, e, `_, err = debuglauncher.DebugLauncher(usesChannel, nil, 2)
fmt.Println(err)`)
	if r.Err != nil {
		t.Fatalf("cell failed: %v", r.Err)
	}
	wantIn(t, "carry error", io.text("stdout"), "global variable ch (chan int), which usesChannel uses, cannot be carried to the workers")

	// A function value the call does not name is refused, even right after
	// a launch that named one and ran in this process.
	r, io = runLaunch(t, e, `launcher.NotebookLauncher(refuse, nil, launcher.Options{NumProcesses: 1})
g := explode
_, err = debuglauncher.DebugLauncher(g, nil, 2)
fmt.Println(err)`)
	if r.Err != nil {
		t.Fatalf("cell failed: %v", r.Err)
	}
	wantIn(t, "unnamed function", io.text("stdout"), "must be a function declared in a cell")
}

// TestInterpretedLaunch: with Options.Interpret, launches still go through
// the interpreter's declarations and values, in interpreting workers.
func TestInterpretedLaunch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	c, err := fdcapture.Redirect()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Version: "test", Capture: c, Interpret: true, Symbols: []map[string]map[string]reflect.Value{symbols.Symbols}})
	if err != nil {
		_ = c.Restore()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		_ = c.Restore()
	})
	installLaunch(t, e, envTestWorker+"=1", envTestInterpret+"=1")
	mustRun(t, e, `import (
	"fmt"

	"github.com/goaccel/goaccel/debuglauncher"
)

var scale = 2.0

func work(n int) ([]float64, error) {
	fmt.Println("interpreted", n)
	return []float64{scale * float64(n)}, nil
}`)
	r, io := runLaunch(t, e, `res, err := debuglauncher.DebugLauncher(work, []any{3}, 2)
fmt.Println("results:", res[1][0].([]float64), err)`)
	if r.Err != nil {
		t.Fatalf("launch failed: %v\nstdout: %s\nstderr: %s", r.Err, io.text("stdout"), io.text("stderr"))
	}
	wantIn(t, "stdout", io.text("stdout"), "[rank 1] interpreted 3", "results: [6] <nil>")
}

// TestLaunchCarriesSideEffectImports: a package imported only for its init
// (import _, as GoMLX's backends are) is imported by the workers too, so
// what its init registers is there when the launched function runs, whether
// the blank import came in an earlier cell or in the launching one.
func TestLaunchCarriesSideEffectImports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes that build cells")
	}
	e := launchEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable:", e.compErr)
	}
	mod := modtest.CopyDir(t, filepath.Join("testdata", "registrymod"))
	for _, cell := range []string{"%use " + mod, `import _ "example.com/gxregistry/plugin"`, `import (
	"fmt"

	"example.com/gxregistry"
	"github.com/goaccel/goaccel/debuglauncher"
)

func registered() string { return fmt.Sprint(registry.Names()) }
registered()`} {
		if r, io := runLaunch(t, e, cell); r.Err != nil {
			t.Fatalf("cell failed: %v\n%s", r.Err, io.text("stderr"))
		}
	}
	r, io := runLaunch(t, e, `res, err := debuglauncher.DebugLauncher(registered, nil, 2)
fmt.Println("workers:", res[0][0], res[1][0], err)`)
	if r.Err != nil {
		t.Fatalf("launch failed: %v\nstdout: %s\nstderr: %s", r.Err, io.text("stdout"), io.text("stderr"))
	}
	wantIn(t, "stdout", io.text("stdout"), "workers: [plugin] [plugin] <nil>")
}
