package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"reflect"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/internal/allocator"
	"github.com/goaccel/goaccel/kernel"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/rendezvous"
	"github.com/goaccel/goaccel/notebook"
	"github.com/goaccel/goaccel/notebook/fdcapture"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/pjrt"
	"github.com/goaccel/goaccel/symbols"
)

// processStart is when the process started, for start-up timing in the log.
var processStart = time.Now()

// runKernel is `goaccel kernel -f CONNECTION_FILE`: the process Jupyter starts.
func runKernel(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("kernel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	connFile := fs.String("f", "", "Jupyter connection `file`")
	logFile := fs.String("log-file", os.Getenv("GOACCEL_LOG_FILE"), "write the kernel's log to `path` instead of stderr")
	logLevel := fs.String("log-level", envOr("GOACCEL_LOG_LEVEL", "info"), "log `level` (debug, info, warn, error)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *connFile == "" {
		return errors.New("missing -f CONNECTION_FILE (Jupyter passes it; see `goaccel install`)")
	}
	// tcmalloc for XLA's buffers (see package allocator); this returns only
	// when there is nothing to do or the exec failed.
	_ = allocator.Reexec()
	lvl, err := logrus.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	conn, err := kernel.ParseConnectionFile(*connFile)
	if err != nil {
		return err
	}

	// Cells' os.Stdout/os.Stderr writes (and compiled packages') must reach
	// the notebook, and the kernel's own log must never: redirect fds 1/2
	// first and log to a copy of the original stderr (or a file).
	capture, err := fdcapture.Redirect()
	if err != nil {
		return fmt.Errorf("capturing cell output: %w", err)
	}
	// Put fds 1/2 back on the way out, so an error reaches the real stderr.
	defer func() { _ = capture.Restore() }()
	// Cells read the notebook's input through input requests; fd 0 (the
	// launcher's pipe) reads end of file instead of blocking for good.
	if err := fdcapture.NullStdin(); err != nil {
		return err
	}
	log := logrus.New()
	log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: "15:04:05.000000"})
	log.SetOutput(capture.OriginalStderr())
	log.SetLevel(lvl)
	logrus.SetFormatter(cellLogFormatter{}) // libraries' warnings, shown in the cell
	// gRPC (etcd's client and embedded server) logs to stderr, which is the
	// cell's: route it to the kernel's log.
	rendezvous.RouteGRPCLogs(log)
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("opening log file: %w", err)
		}
		defer f.Close()
		log.SetOutput(f)
	}

	configurePJRT(log)
	engine, err := notebook.New(notebook.Options{
		Capture:   capture,
		Symbols:   []map[string]map[string]reflect.Value{symbols.Symbols},
		Version:   versionString(),
		Interpret: interpretRequested(),
		KernelID:  gonb.KernelID(*connFile),
	})
	if err != nil {
		return fmt.Errorf("starting the Go interpreter: %w", err)
	}
	log.WithField("since_start", time.Since(processStart)).Debug("interpreter ready")
	launcher.SetSession(engine)
	installLaunchProbes()
	k, err := kernel.New(conn, engine, kernel.Options{Logger: log, ImplementationVersion: versionString()})
	if err != nil {
		_ = engine.Close()
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, parentGone := context.WithCancel(ctx)
	defer parentGone()
	go watchParent(ctx, parentGone, log, parentPollInterval)
	// SIGINT interrupts the running cell (Jupyter may send it even with
	// interrupt_mode "message"); it never kills the kernel.
	sigint := make(chan os.Signal, 1)
	signal.Notify(sigint, os.Interrupt)
	go func() {
		for range sigint {
			k.Interrupt()
		}
	}()
	defer signal.Stop(sigint)

	log.WithField("connection", *connFile).Info("goaccel kernel started")
	// Run closes the interpreter (engine) on its way out.
	if err := k.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// configurePJRT points GoMLX at the PJRT plugins goaccel installed (cells
// and launched workers inherit the environment); see package pjrt.
func configurePJRT(log logrus.FieldLogger) {
	plugins, err := pjrt.Configure(pjrt.DefaultSearch(), os.Setenv)
	if err != nil {
		log.WithError(err).Warn("looking for PJRT plugins")
	}
	if len(plugins) > 0 {
		log.WithField("plugins", pjrt.Names(plugins)).WithField("dir", os.Getenv(pjrt.EnvLibraryPath)).Debug("PJRT plugins for GoMLX")
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
