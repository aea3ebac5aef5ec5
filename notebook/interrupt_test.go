package notebook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/internal/modtest"
)

// blockingIO is a CellIO whose input requests wait for the cell's end.
type blockingIO struct {
	fakeIO
	asked chan struct{}
}

func (b *blockingIO) Input(ctx context.Context, prompt string, password bool) (string, error) {
	select {
	case b.asked <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", ctx.Err()
}

// interruptAfter runs code and cancels it d after its first output (the
// cell signals that it runs by printing, however long its build takes). It
// returns the reply and how long the cell took to end after the cancel; it
// fails the test when the cell ends before the interrupt, or does not end
// within patience of it.
func interruptAfter(t *testing.T, e *Engine, code string, d time.Duration, io frontend.CellIO, started <-chan struct{}) (frontend.ExecuteReply, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan struct{})
	cancelled := make(chan time.Time, 1)
	go func() {
		select {
		case <-started:
		case <-ended:
			return
		}
		time.Sleep(d)
		cancelled <- time.Now()
		cancel()
	}()
	counter.Lock()
	counter.n++
	n := counter.n
	counter.Unlock()
	replied := make(chan frontend.ExecuteReply, 1)
	go func() {
		replied <- e.Execute(ctx, frontend.ExecuteRequest{Code: code, ExecutionCount: n, AllowStdin: true}, io)
	}()
	var r frontend.ExecuteReply
	select {
	case r = <-replied:
	case <-time.After(patience + d):
		t.Fatalf("the cell did not end (nor start) within %v", patience)
	}
	close(ended)
	select {
	case at := <-cancelled:
		return r, time.Since(at)
	default:
		t.Fatalf("the cell ended before the interrupt: %+v", r.Err)
	}
	return r, 0
}

// notStuck fails the test when r reports goroutines that did not stop.
func notStuck(t *testing.T, r frontend.ExecuteReply) {
	t.Helper()
	if r.Err != nil && strings.Contains(strings.Join(r.Err.Traceback, "\n"), "blocked where it cannot be stopped") {
		t.Fatalf("the interrupted cell was left stuck:\n%s", strings.Join(r.Err.Traceback, "\n"))
	}
}

// printedLine reports whether out has line as a whole line. The tests
// look for a cell's own lines this way: with -test.v the testing
// package's log lines ("... ended 3ms after the interrupt") go to the
// process's stdout too, which the engine captures for the cell that is
// still running.
func printedLine(out, line string) bool {
	for _, l := range strings.Split(out, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// waitForBlockedRead waits until a thread of this process is blocked in
// read(2) on fd, as /proc/self/task/*/syscall shows (the syscall's number,
// then its arguments in hex). It reports rather than fails: it runs on a
// goroutine that may outlive its test.
func waitForBlockedRead(fd int) error {
	want := fmt.Sprintf("%d 0x%x ", syscall.SYS_READ, fd)
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob("/proc/self/task/*/syscall")
		for _, f := range tasks {
			if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), want) {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("no thread blocked in read(%d) within %v", fd, patience)
}

// startSignal returns a fakeIO that closes started at the first stdout
// text containing "started".
func startSignal() (*fakeIO, chan struct{}) {
	started := make(chan struct{})
	io := &fakeIO{}
	once := false
	io.onStream = func(name, text string) {
		if !once && strings.Contains(text, "started") {
			once = true
			close(started)
		}
	}
	return io, started
}

func TestInterruptedCellLeavesNoOutputBehind(t *testing.T) {
	e := newEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable: ", e.compErr)
	}
	mustRun(t, e, "import (\n\t\"fmt\"\n\t\"time\"\n)")
	io, started := startSignal()
	r, took := interruptAfter(t, e, `ready := make(chan bool)
for i := 0; i < 4; i++ {
	go func() {
		defer fmt.Println("deferred")
		ready <- true
		for {
			fmt.Println("tick")
			time.Sleep(time.Millisecond)
		}
	}()
}
for i := 0; i < 4; i++ {
	<-ready
}
fmt.Println("started")
select {}
fmt.Println("after")`, 100*time.Millisecond, io, started)
	if r.Err == nil || r.Err.Name != "Interrupted" {
		t.Fatalf("err %+v, want Interrupted", r.Err)
	}
	// Its goroutines loop forever: they stopped (the cell was not left
	// stuck) because of the interrupt.
	notStuck(t, r)
	t.Logf("the interrupt took %v", took)
	out := io.text("stdout")
	if strings.Count(out, "deferred") != 4 || printedLine(out, "after") {
		t.Fatalf("the interrupted cell's output: %q", out)
	}
	time.Sleep(50 * time.Millisecond) // late output, if any, would arrive by now (cannot fail a correct engine)
	_, next := mustRun(t, e, "1")
	if s := next.text("stdout") + next.text("stderr"); s != "" {
		t.Fatalf("output of the interrupted cell under the next one: %q", s)
	}
	_, g := mustRun(t, e, "%goroutines")
	if s := g.text("stdout"); !strings.Contains(s, "no goroutine") {
		t.Fatalf("%%goroutines after the interrupt: %q", s)
	}
}

func TestGoroutinesMagic(t *testing.T) {
	e := newEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable: ", e.compErr)
	}
	mustRun(t, e, "import \"sync\"\nvar mu sync.Mutex\nquit := make(chan int)\nfunc waiter() {\n\t<-quit\n}")
	n := 0
	counter.Lock()
	n = counter.n + 1
	counter.Unlock()
	mustRun(t, e, "mu.Lock()\ngo waiter()\n\ngo func() {\n\tmu.Lock()\n}()")
	wants := []string{
		"[chan receive] started by cell[" + strconv.Itoa(n) + "] at cell[" + strconv.Itoa(n) + "]:2; now at cell[" + strconv.Itoa(n-1) + "]:5 in main.waiter",
		"[sync.Mutex.Lock] started by cell[" + strconv.Itoa(n) + "] at cell[" + strconv.Itoa(n) + "]:4; now at cell[" + strconv.Itoa(n) + "]:5 in main.<cell>.func",
	}
	// The goroutines reach their blocking points when the scheduler lets
	// them: ask until both are there.
	var out string
	waitFor(t, "goroutines at their blocking points", func() bool {
		_, io := mustRun(t, e, "%goroutines")
		out = io.text("stdout")
		for _, want := range wants {
			if !strings.Contains(out, want) {
				return false
			}
		}
		return true
	})
	mustRun(t, e, "close(quit)\nmu.Unlock()")
}

func TestStuckCellIsNamed(t *testing.T) {
	e := newEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable: ", e.compErr)
	}
	mustRun(t, e, "import (\n\t\"fmt\"\n\t\"syscall\"\n)\nvar p [2]int\nsyscall.Pipe(p[:])\nkept := 3")
	rfd, _ := mustRun(t, e, "p[0]")
	fd, err := strconv.Atoi(resultText(rfd))
	if err != nil {
		t.Fatalf("the pipe's read end: %q", resultText(rfd))
	}
	io, printed := startSignal()
	// The interrupt comes once the cell's goroutine is inside read(2) (a
	// busy machine may take long to get it there from the print): the
	// read blocks forever, and the cell ends because it is named stuck.
	started := make(chan struct{})
	blocked := make(chan error, 1)
	go func() {
		<-printed
		blocked <- waitForBlockedRead(fd)
		close(started)
	}()
	r, took := interruptAfter(t, e, "fmt.Println(\"started\")\nbuf := make([]byte, 1)\nsyscall.Read(p[0], buf)\nfmt.Println(\"after\")", 0, io, started)
	select {
	case err := <-blocked:
		if err != nil {
			t.Error(err)
		}
	default: // the cell ended before it got to the read: the checks below say how
	}
	t.Logf("the stuck cell ended %v after the interrupt", took)
	if r.Err == nil || r.Err.Name != "Interrupted" {
		t.Fatalf("err %+v", r.Err)
	}
	tb := strings.Join(r.Err.Traceback, "\n")
	for _, want := range []string{"blocked where it cannot be stopped", "[syscall] running cell[", "now at cell[", "]:3 in main.<cell>", "syscall.Read(...)"} {
		if !strings.Contains(tb, want) {
			t.Errorf("want %q in the traceback:\n%s", want, tb)
		}
	}
	// The kernel goes on; the stuck code stops when the read returns.
	_, io2 := mustRun(t, e, "%goroutines")
	if !strings.Contains(io2.text("stdout"), "(interrupted, not stopped yet)") {
		t.Errorf("%%goroutines: %s", io2.text("stdout"))
	}
	// %jobs names the interrupted cell and what is left of it; %jobs wait
	// waits for it (the test writes to the pipe once the wait has begun).
	_, jobs := mustRun(t, e, "%jobs")
	for _, want := range []string{"cell[", ", interrupted ", " ago: 1 goroutine still running", "[syscall]", "%jobs wait"} {
		if !strings.Contains(jobs.text("stdout"), want) {
			t.Errorf("%%jobs lacks %q:\n%s", want, jobs.text("stdout"))
		}
	}
	// A cell that runs meanwhile says that the stuck one's output may land
	// under it.
	rw, note := mustRun(t, e, "p[1]")
	if !regexpMatch(`^note: cell\[\d+\], interrupted \S+ ago, still runs 1 goroutine: what it prints until it stops appears under the running cell`, note.text("stderr")) {
		t.Errorf("a cell that runs beside the stuck one: stderr %q", note.text("stderr"))
	}
	wfd, err := strconv.Atoi(resultText(rw))
	if err != nil {
		t.Fatalf("the pipe's write end: %q", resultText(rw))
	}
	wio := &fakeIO{}
	var wrote sync.Once
	wio.onStream = func(name, text string) {
		if strings.Contains(text, "waiting for cell[") {
			wrote.Do(func() { syscall.Write(wfd, []byte{1}) })
		}
	}
	if r := runIO(t, e, "%jobs wait", wio); r.Err != nil || !regexpMatch(`(?m)^cell\[\d+\] stopped \(waited `, wio.text("stdout")) {
		t.Fatalf("%%jobs wait: %+v %q", r.Err, wio.text("stdout"))
	}
	_, g := mustRun(t, e, "%goroutines")
	if strings.Contains(g.text("stdout"), "(interrupted, not stopped yet)") {
		t.Fatalf("after %%jobs wait: %s", g.text("stdout"))
	}
	if _, none := mustRun(t, e, "%jobs"); !strings.Contains(none.text("stdout"), "no interrupted cell is still running") {
		t.Fatalf("%%jobs after the wait: %q", none.text("stdout"))
	}
	if r, _ := run(t, e, "%jobs now"); r.Err == nil || !strings.Contains(r.Err.Value, "%jobs takes nothing or wait") {
		t.Fatalf("%%jobs now: %+v", r.Err)
	}
	rr, io3 := mustRun(t, e, "kept")
	if io3.text("stderr") != "" {
		t.Errorf("a cell after the stuck one stopped: stderr %q", io3.text("stderr"))
	}
	if resultText(rr) != "3" || printedLine(io3.text("stdout"), "after") || printedLine(io.text("stdout"), "after") {
		t.Fatalf("after the stuck cell: %q %q", resultText(rr), io3.text("stdout"))
	}
}

func TestInterruptWhileWaitingForInput(t *testing.T) {
	e := newEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable: ", e.compErr)
	}
	mustRun(t, e, "import \"fmt\"\nvar s string")
	io := &blockingIO{asked: make(chan struct{}, 1)}
	started := make(chan struct{})
	go func() { <-io.asked; close(started) }()
	// No answer ever comes: the interrupt ends the wait.
	r, took := interruptAfter(t, e, "fmt.Scanln(&s)\nfmt.Println(\"after\")", 50*time.Millisecond, io, started)
	if r.Err == nil || r.Err.Name != "Interrupted" {
		t.Fatalf("err %+v after %v", r.Err, took)
	}
	notStuck(t, r)
	if printedLine(io.text("stdout"), "after") {
		t.Fatal("the cell went on after the interrupt")
	}
	// allow_stdin false: the read fails with a clear error.
	r = e.Execute(context.Background(), frontend.ExecuteRequest{Code: "_, err := fmt.Scanln(&s)\nerr.Error()", AllowStdin: false}, &fakeIO{})
	if r.Err != nil || !strings.Contains(resultText(r), "stdin") {
		t.Fatalf("stdin not allowed: %+v %q", r.Err, resultText(r))
	}
}

// interruptSpinForever interrupts a cell looping in spin.Forever (a
// fixture module's loop that never calls back into the cell; the cells
// declared n) and checks that it ended as Interrupted, not stuck, with
// spin's deferred call run and nothing after the loop printed.
func interruptSpinForever(t *testing.T, e *Engine) {
	t.Helper()
	io, started := startSignal()
	r, took := interruptAfter(t, e, `fmt.Println("started")
spin.Forever(&n, func() { fmt.Println("unwound") })
fmt.Println("after")`, 100*time.Millisecond, io, started)
	if r.Err == nil || r.Err.Name != "Interrupted" {
		t.Fatalf("err %+v, want Interrupted", r.Err)
	}
	notStuck(t, r)
	t.Logf("the interrupt took %v", took)
	if out := io.text("stdout"); !printedLine(out, "unwound") || printedLine(out, "after") {
		t.Fatalf("the interrupted cell's output: %q", out)
	}
}

// A local module's loop that never calls back into the cell stops at the
// interrupt: the Builder compiled its package with checks (package
// safepoint), it unwinds with its deferred calls run, and the next cells
// run in the kernel it left. Its lines keep their numbers.
func TestInterruptReachesLocalModuleCode(t *testing.T) {
	hermetic(t)
	e := newEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable: ", e.compErr)
	}
	dir := modtest.CopyDir(t, filepath.Join("build", "testdata", "spinmod"))
	mustRun(t, e, "%use "+dir)
	mustRun(t, e, "import (\n\t\"fmt\"\n\t\"sync/atomic\"\n\n\t\"example.com/gxspin\"\n)\nvar n int64")
	interruptSpinForever(t, e)
	// It stopped: n no longer grows.
	a, _ := mustRun(t, e, "atomic.LoadInt64(&n)")
	time.Sleep(20 * time.Millisecond)
	b, _ := mustRun(t, e, "atomic.LoadInt64(&n)")
	if resultText(a) == "0" || resultText(a) != resultText(b) {
		t.Fatalf("the module's loop did not run, or still runs: n went from %s to %s", resultText(a), resultText(b))
	}
	// The lock-holding loop has no check and runs to its end.
	if _, io := mustRun(t, e, "spin.Held(&n, 1000)\nfmt.Println(\"held done\")"); !printedLine(io.text("stdout"), "held done") {
		t.Fatalf("spin.Held: %q", io.text("stdout"))
	}
	// The rewritten file keeps its name and its lines.
	if r, _ := mustRun(t, e, "spin.Where()"); resultText(r) != `"spin.go:37"` {
		t.Fatalf("spin.Where() = %s, want spin.go:37", resultText(r))
	}
}

// A loop of a module from the module cache (fetched through the proxy)
// that never calls back into the cell stops at the interrupt: the Builder
// compiled its package with checks (notebook/build's modsafepoints.go), it
// unwinds with its deferred calls run, and the next cells run in the
// kernel it left; the session module's go.mod keeps its version.
func TestInterruptReachesModuleCode(t *testing.T) {
	hermetic(t)
	e := newEngine(t)
	if e.compiled == nil {
		t.Skip("compiled cells unavailable: ", e.compErr)
	}
	mustRun(t, e, "import (\n\t\"fmt\"\n\t\"sync/atomic\"\n\n\t\"example.com/gxfix/spin\"\n)\nvar n int64")
	interruptSpinForever(t, e)
	// It stopped: n no longer grows.
	r1, _ := mustRun(t, e, "atomic.LoadInt64(&n) > 0")
	if resultText(r1) != "true" {
		t.Fatalf("the loop never ran: %s", resultText(r1))
	}
	a, _ := mustRun(t, e, "atomic.LoadInt64(&n)")
	time.Sleep(20 * time.Millisecond)
	b, _ := mustRun(t, e, "atomic.LoadInt64(&n)")
	if resultText(a) != resultText(b) {
		t.Fatalf("the module's loop still runs: n went from %s to %s", resultText(a), resultText(b))
	}
	// The lock-holding loop has no safe point: it runs to its end.
	r2, _ := mustRun(t, e, "spin.Held(&n, 1000)\nfmt.Println(\"held done\")")
	if r2.Err != nil {
		t.Fatalf("spin.Held: %+v", r2.Err)
	}
	_, mod := mustRun(t, e, "%go mod")
	if !regexpMatch(`replace example.com/gxfix/spin v1.0.0 => \S+/goaccel-safepoint-links/[0-9a-f]+/example.com/gxfix/spin@v1.0.0`, mod.text("stdout")) {
		t.Fatalf("%%go mod: %s", mod.text("stdout"))
	}
}
