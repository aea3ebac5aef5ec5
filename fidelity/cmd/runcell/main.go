// Command runcell is the fidelity harness's child: it starts the notebook
// engine the way the kernel does (fds 1 and 2 captured, the kernel's symbol
// tables), runs one Go source file as one cell (execution count 1) and
// records the cell's outputs and its reply as JSON lines (see package
// cellrun). It uses only the engine's public API: notebook.New, Execute and
// Close.
//
//	runcell -events FILE [-max-output BYTES] [-split] [-build-cache DIR] SOURCE.go
//	runcell -session [-max-output BYTES] [-build-cache DIR]
//
// With -split the program runs as a cell per declaration
// (cellrun.SplitCells), execution counts 1, 2, …, up to the first cell that
// fails; the reply recorded is that cell's, or the last one's.
//
// With -session one engine runs program after program, as a notebook user
// who keeps one kernel does: it reads requests (cellrun.Request, JSON
// lines) from file descriptor 3 and, when a program's cell has replied,
// writes a line to descriptor 4 (see cellrun.Session).
//
// Build it with plain `go build`: the engine may load Go plugins, which
// requires a host built normally by the same toolchain.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	"github.com/goaccel/goaccel/fidelity/cellrun"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook"
	"github.com/goaccel/goaccel/notebook/fdcapture"
	"github.com/goaccel/goaccel/symbols"
)

// closeTimeout bounds Close: goroutines the program left running may keep
// the engine busy, and the harness only needs the reply.
const closeTimeout = 2 * time.Second

// errOut is where the child reports its own trouble: the original stderr,
// also once fds 1 and 2 are captured.
var errOut io.Writer = os.Stderr

func main() {
	start := time.Now()
	events := flag.String("events", "", "write the cell's events to `file` (JSON lines)")
	maxOutput := flag.Int("max-output", 0, "record at most this many `bytes` of stream output (0: no limit)")
	split := flag.Bool("split", false, "run the program as a cell per declaration")
	buildCache := flag.String("build-cache", "", "cache compiled cells in `dir` (default: the kernel's)")
	session := flag.Bool("session", false, "run the programs requested on fd 3 one after another in one engine")
	flag.Parse()
	if *session {
		if err := serve(*maxOutput, *buildCache, start); err != nil {
			fmt.Fprintln(errOut, "runcell:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if *events == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, cellrun.ErrUsage)
		os.Exit(2)
	}
	if err := run(*events, flag.Arg(0), *maxOutput, *split, *buildCache, start); err != nil {
		fmt.Fprintln(errOut, "runcell:", err)
		os.Exit(1)
	}
	// Leftover goroutines of the program must not keep the child alive.
	os.Exit(0)
}

func run(eventsPath, srcPath string, maxOutput int, split bool, buildCache string, start time.Time) error {
	src, err := os.ReadFile(srcPath)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(eventsPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()

	engine, err := startEngine(buildCache)
	if err != nil {
		return err
	}
	rec := cellrun.NewRecorder(f, start, maxOutput)
	rec.Ready()
	cells := []string{string(src)}
	if split {
		cells = cellrun.SplitCells(src)
	}
	var reply frontend.ExecuteReply
	for i, code := range cells {
		reply = engine.Execute(context.Background(), frontend.ExecuteRequest{
			Code:           code,
			StoreHistory:   true,
			ExecutionCount: i + 1,
		}, rec)
		if reply.Err != nil {
			break
		}
	}
	rec.Reply(reply)
	if err := rec.Err(); err != nil {
		return fmt.Errorf("recording the cell: %w", err)
	}
	closeEngine(engine)
	return nil
}

// startEngine starts the notebook engine as cmd/kernel does: fds 1 and 2
// captured first; the child's own messages go to the original stderr,
// which the harness reads.
func startEngine(buildCache string) (*notebook.Engine, error) {
	capture, err := fdcapture.Redirect()
	if err != nil {
		return nil, fmt.Errorf("capturing cell output: %w", err)
	}
	errOut = capture.OriginalStderr()
	engine, err := notebook.New(notebook.Options{
		Capture:    capture,
		BuildCache: buildCache,
		Symbols:    []map[string]map[string]reflect.Value{symbols.Symbols},
		Version:    "fidelity",
	})
	if err != nil {
		return nil, fmt.Errorf("starting the engine: %w", err)
	}
	return engine, nil
}

// closeEngine closes the engine, waiting closeTimeout at most.
func closeEngine(engine *notebook.Engine) {
	closed := make(chan error, 1)
	go func() { closed <- engine.Close() }()
	select {
	case <-closed:
	case <-time.After(closeTimeout):
	}
}
