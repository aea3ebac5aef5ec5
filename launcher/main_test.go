//go:build linux

package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/launchertest"
)

var reg = launchertest.New()

// roleEnv makes a re-executed test binary play the kernel (TestKill9...).
const roleEnv = "GOACCEL_LAUNCHER_TEST_ROLE"

// patience bounds every wait for a launch, a worker or an agent in these
// tests: a hang guard far above what a cold, busy machine needs, never a
// budget.
const patience = 10 * time.Minute

// forever is how long a worker that the launcher must stop sleeps: far
// longer than patience, so a worker gone proves the launcher stopped it.
const forever = time.Hour

// prompt is what "at once" means for a stop the launcher makes: the
// alternative (forever, a lease expiry...) is much longer, so the bound
// proves the point however busy the machine.
const prompt = 2 * time.Minute

func TestMain(m *testing.M) {
	reg.Register("env", workerEnv)
	reg.Register("echo", echo)
	reg.Register("display", showDisplays)
	reg.Register("panicky", panicky)
	reg.Register("goroutinePanic", goroutinePanic)
	reg.Register("exit3", exit3)
	reg.Register("flaky", flaky)
	reg.Register("sleeper", sleeper)
	reg.Register("ran", ran)
	reg.Register("add", add)
	reg.Register("logs", logs)
	reg.Register("exit0", exit0)
	reg.Register("collect", collect)
	reg.Register("sleepUntilRestart", sleepUntilRestart)
	reg.Register("panicOnRank", panicOnRank)
	if os.Getenv(launchertest.EnvWorker) == "" {
		switch os.Getenv(roleEnv) {
		case "kernel":
			os.Exit(fakeKernel())
		case "agent":
			os.Exit(fakeAgent())
		}
	}
	os.Exit(launchertest.Main(m, reg))
}

func rank() int {
	r, _ := strconv.Atoi(os.Getenv("RANK"))
	return r
}

var envKeys = []string{
	"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
	"ROLE_RANK", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "ACCELERATE_MIXED_PRECISION",
	"TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
	launcher.EnvLaunchSecret, launcher.EnvRdzvBackend, launcher.EnvRdzvEndpoint,
	launcher.EnvRdzvConf, "CUDA_VISIBLE_DEVICES", "ACCELERATE_USE_CPU", "GOMAXPROCS", "EXTRA",
}

// workerEnv reports the worker's environment (a key absent is missing).
func workerEnv() map[string]string {
	m := map[string]string{}
	for _, k := range envKeys {
		if v, ok := os.LookupEnv(k); ok {
			m[k] = v
		}
	}
	return m
}

// echo prints to stdout and stderr, ending with a partial line.
func echo() int {
	r := rank()
	fmt.Printf("hello from %d\n", r)
	fmt.Fprintf(os.Stderr, "warning from %d\n", r)
	fmt.Printf("progress 50%%\rprogress 100%%\n")
	fmt.Printf("two\nlines\n")
	fmt.Print("partial")
	return r
}

// showDisplays uses the display package from the worker.
func showDisplays() string {
	r := rank()
	h := display.HTML(fmt.Sprintf("<b>rank %d</b>", r))
	h.UpdateHTML(fmt.Sprintf("<b>rank %d done</b>", r))
	if r == 0 {
		display.ClearOutput(true)
	}
	return h.ID()
}

// panicky panics on rank 1 (after printing when) while the others sleep
// without watching their context.
func panicky() int {
	if rank() == 1 {
		fmt.Printf("failing-at=%d\n", time.Now().UnixNano())
		panic("boom on purpose")
	}
	fmt.Printf("pid=%d\n", os.Getpid())
	time.Sleep(forever)
	return 0
}

// goroutinePanic crashes rank 1 from a goroutine (no recover possible).
func goroutinePanic() int {
	if rank() == 1 {
		done := make(chan struct{})
		go func() { defer close(done); panic("crash in goroutine") }()
		<-done
	}
	time.Sleep(forever)
	return 0
}

func exit3() int {
	if rank() == 0 {
		fmt.Fprintln(os.Stderr, "about to exit with 3")
		os.Exit(3)
	}
	time.Sleep(forever)
	return 0
}

// flaky fails on rank 1 until the group has been restarted twice.
func flaky() (int, error) {
	n, _ := strconv.Atoi(os.Getenv("TORCHELASTIC_RESTART_COUNT"))
	if rank() == 1 && n < 2 {
		return 0, fmt.Errorf("flaky failure at restart %d", n)
	}
	return n, nil
}

// sleeper prints its pid and sleeps; with honorInterrupt it returns at the
// first SIGINT (printing "interrupted=PID"), otherwise it ignores it.
func sleeper(honorInterrupt bool) int {
	if honorInterrupt {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		fmt.Printf("pid=%d\n", os.Getpid())
		<-ctx.Done()
		fmt.Printf("interrupted=%d\n", os.Getpid())
		return 1
	}
	fmt.Printf("pid=%d\n", os.Getpid())
	time.Sleep(forever)
	return 0
}

// exit0 leaves without returning on rank 1.
func exit0() int {
	if rank() == 1 {
		os.Exit(0)
	}
	return 0
}

func ran() int {
	fmt.Println("ran")
	return 1
}

func add(a, b int) int { return a + b }

// logs writes an internal log entry, which must reach the kernel's log and
// not the cell.
func logs() int {
	logrus.WithField("step", 3).Warn("internal warning from the worker")
	logrus.Debug("debug entry below the kernel's level")
	return 0
}

// run launches with a fresh in-memory publisher installed as the cell.
func run(t *testing.T, ctx context.Context, fn any, args []any, o launcher.Options) (*launchertest.Publisher, [][]any, error) {
	t.Helper()
	pub := &launchertest.Publisher{}
	restore := launcher.SetCell(ctx, pub)
	defer restore()
	res, err := launcher.NotebookLauncher(fn, args, o)
	return pub, res, err
}

// fakeKernel is the re-executed test binary playing the kernel: it launches
// two sleeping workers, prints their output to stdout and waits forever.
func fakeKernel() int {
	os.Unsetenv(roleEnv)
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	launcher.SetSession(reg)
	launcher.SetWorkerCommand(launcher.WorkerCommand{Path: exe, Env: []string{launchertest.EnvWorker + "=1"}})
	launcher.SetCell(context.Background(), &stdoutPublisher{})
	_, err = launcher.NotebookLauncher(sleeper, []any{false}, launcher.Options{NumProcesses: 2, UsePort: "0"})
	fmt.Fprintln(os.Stderr, "launcher returned:", err)
	return 1
}

type stdoutPublisher struct{ launchertest.Publisher }

func (*stdoutPublisher) Stream(_, text string) { fmt.Print(text) }

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func asChildFailed(t *testing.T, err error) *launcher.ChildFailedError {
	t.Helper()
	var cf *launcher.ChildFailedError
	if !errors.As(err, &cf) {
		t.Fatalf("error is not a *ChildFailedError: %v", errText(err))
	}
	return cf
}

func containsAll(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}
