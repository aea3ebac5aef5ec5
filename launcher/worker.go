package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/accelerate/pg"
	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/internal/launchenv"
)

// defaultJoinTimeout bounds the pre-flight's join (torch's join_timeout
// default); RdzvConf["join_timeout"] (seconds) overrides it. A rank that
// dies makes the launcher stop the others long before.
const defaultJoinTimeout = 600 * time.Second

// WorkerMain is the body of a worker process, the hidden subcommand
// `goaccel worker` (argv: [exe, "worker"]). cmd/kernel calls it and exits
// with the code it returns; rt is the notebook engine's runtime.
//
// The launcher starts it with: stdin /dev/null; stdout and stderr pipes that
// the launcher reads line by line into the cell; fd 3 (EventsFD) a pipe the
// worker writes JSON lines to (displays, results, errors); fd 4 (PayloadFD)
// a pipe holding the payload; and the environment described in the package
// documentation (RANK, LOCAL_RANK, ..., GOACCEL_WORKER_MODE).
//
// WorkerMain installs a display sink that forwards display calls to the
// cell, sends the standard logrus logger's entries to the kernel's log (at
// the kernel's level) and its warnings and errors also to the cell, reads
// the payload, runs it with rt.Run and reports the results (exit
// code 0) or the error (exit code 1). In pre-flight mode it only joins the
// process group, runs rt's Preflight if it has one, and exits. The first
// SIGINT cancels ctx given to rt.Run; a second one exits at once (130).
func WorkerMain(ctx context.Context, rt WorkerRuntime) int {
	mode := os.Getenv(EnvWorkerMode)
	if mode != modeRun && mode != modePreflight {
		fmt.Fprintln(os.Stderr, "goaccel worker: this command is started by launcher.NotebookLauncher and debuglauncher.DebugLauncher, not by hand")
		return 2
	}
	if want := os.Getenv(EnvLauncherPID); want != strconv.Itoa(os.Getppid()) {
		// The launcher died before Pdeathsig was armed.
		fmt.Fprintf(os.Stderr, "goaccel worker: the launching process (pid %s) is gone\n", want)
		return 1
	}
	events := os.NewFile(EventsFD, "goaccel-events")
	payloadFile := os.NewFile(PayloadFD, "goaccel-payload")
	if events == nil || payloadFile == nil {
		fmt.Fprintln(os.Stderr, "goaccel worker: fds 3 and 4 from the launcher are missing")
		return 2
	}
	// The function's own subprocesses must not hold the launcher's pipes.
	syscall.CloseOnExec(EventsFD)
	syscall.CloseOnExec(PayloadFD)
	defer events.Close()
	defer payloadFile.Close()

	ww := newWireWriter(events)
	// The worker's logs go to the kernel's log (warnings also to stderr, below)
	// (which is the cell's).
	if lvl, err := logrus.ParseLevel(os.Getenv(EnvLogLevel)); err == nil {
		logrus.SetLevel(lvl)
	}
	logrus.SetOutput(io.Discard)
	logrus.AddHook(&logForwarder{w: ww})
	// Warnings and errors are also the user's business (a tracker that
	// cannot record a value says so): they go to stderr, which the cell
	// shows with the rank's prefix, as in the kernel's own process.
	logrus.AddHook(&userLogHook{w: os.Stderr})
	restore := display.SetSink(&forwardingSink{w: ww, stdout: os.Stdout, stderr: os.Stderr})
	defer restore()

	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopSignals := handleInterrupt(cancel)
	defer stopSignals()

	report := func(err error) int {
		m := wireMsg{Type: msgError, Message: err.Error()}
		var pe *PanicError
		if errors.As(err, &pe) {
			m.Panic, m.Stack = pe.Value, pe.Stack
		}
		if serr := ww.send(m); serr != nil {
			fmt.Fprintf(os.Stderr, "goaccel worker: %v\n", err)
		}
		return 1
	}

	if mode == modePreflight {
		if err := preflight(ctx, rt); err != nil {
			return report(err)
		}
		if err := ww.send(wireMsg{Type: msgOK}); err != nil {
			fmt.Fprintf(os.Stderr, "goaccel worker: reporting to the launcher: %v\n", err)
			return 1
		}
		return 0
	}

	payload, err := io.ReadAll(payloadFile)
	if err != nil {
		return report(fmt.Errorf("goaccel worker: reading the payload from the launcher: %w", err))
	}
	res, err := safeRun(ctx, rt, payload)
	if err != nil {
		return report(err)
	}
	if err := ww.send(wireMsg{Type: msgResult, Result: res}); err != nil {
		fmt.Fprintf(os.Stderr, "goaccel worker: reporting results to the launcher: %v\n", err)
		return 1
	}
	return 0
}

// safeRun calls rt.Run, turning a panic that escaped the runtime into a
// *PanicError.
func safeRun(ctx context.Context, rt WorkerRuntime, payload []byte) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &PanicError{Value: fmt.Sprint(r), Stack: string(debug.Stack())}
		}
	}()
	return rt.Run(ctx, payload)
}

// handleInterrupt makes the first SIGINT call cancel and a second exit the
// process with status 130. SIGTERM keeps its default action (the process
// ends at once). The returned function stops the handling.
func handleInterrupt(cancel context.CancelFunc) (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() { // owner: WorkerMain, through stop
		defer close(finished)
		n := 0
		for {
			select {
			case <-done:
				return
			case <-ch:
				n++
				if n == 1 {
					cancel()
					continue
				}
				os.Exit(130)
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		<-finished
	}
}

// preflight joins the process group as a real launch would, leaves it, and
// runs the runtime's own checks.
func preflight(ctx context.Context, rt WorkerRuntime) error {
	rank, err := envInt(launchenv.Rank)
	if err != nil {
		return err
	}
	world, err := envInt(launchenv.WorldSize)
	if err != nil {
		return err
	}
	timeout := defaultJoinTimeout
	var conf map[string]string
	if c := os.Getenv(EnvRdzvConf); c != "" {
		if err := json.Unmarshal([]byte(c), &conf); err != nil {
			return fmt.Errorf("%s is not a JSON object of strings: %w", EnvRdzvConf, err)
		}
	}
	if s := conf["join_timeout"]; s != "" {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || secs <= 0 {
			return fmt.Errorf("rdzv_conf join_timeout %q is not a positive number of seconds", s)
		}
		timeout = time.Duration(secs * float64(time.Second))
	}
	g, err := pg.Join(ctx, pg.Config{
		Rank:      rank,
		WorldSize: world,
		StoreAddr: os.Getenv(EnvRdzvEndpoint),
		Secret:    os.Getenv(EnvLaunchSecret),
		HostStore: os.Getenv(EnvRdzvBackend) == "c10d",
		Namespace: os.Getenv(EnvRdzvNamespace),
		Timeout:   timeout,
		Logger:    log,
	})
	if err != nil {
		return fmt.Errorf("rank %d could not join the process group: %w", rank, err)
	}
	if err := g.Close(); err != nil {
		log.WithError(err).Debug("launcher: leaving the pre-flight group")
	}
	if err := currentProbes().BindDevice(os.Getenv(launchenv.CUDAVisible)); err != nil {
		return fmt.Errorf("rank %d could not use its GPU: %w", rank, err)
	}
	if p, ok := rt.(Preflighter); ok {
		if err := p.Preflight(ctx); err != nil {
			return fmt.Errorf("rank %d: %w", rank, err)
		}
	}
	return nil
}

func envInt(key string) (int, error) {
	v, err := strconv.Atoi(os.Getenv(key))
	if err != nil {
		return 0, fmt.Errorf("environment variable %s=%q is not an integer", key, os.Getenv(key))
	}
	return v, nil
}
