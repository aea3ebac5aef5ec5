package fidelity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/fidelity/cellrun"
	"github.com/goaccel/goaccel/fidelity/corpus"
	"github.com/goaccel/goaccel/fidelity/gorun"
	"github.com/goaccel/goaccel/fidelity/report"
)

// Defaults.
const (
	DefaultParallel = 2
	DefaultTimeout  = 30 * time.Second
)

// maxKept caps each output stored in the report; longer outputs are
// compared in full but stored cut, with a note.
const maxKept = 64 << 10

// Options configure a run of the harness.
type Options struct {
	// Runcell is the child binary (fidelity/cmd/runcell), built with plain
	// `go build` (see BuildRuncell).
	Runcell string
	// Go is the go command; "go" when empty.
	Go string
	// GOROOT is the toolchain's root; `go env GOROOT` when empty.
	GOROOT string
	// ExamplesDir holds the examples suite.
	ExamplesDir string
	Suites      []string // empty: all
	Globs       []string // empty: every program of the suites
	Parallel    int      // programs run at once; DefaultParallel when 0
	// Timeout bounds each run of a program, by go run and as a cell;
	// DefaultTimeout when 0.
	Timeout time.Duration
	Label   string // recorded in the report
	// Split runs each program as a cell per declaration (cellrun.SplitCells)
	// instead of as one cell.
	Split bool
	// Session runs the programs back to back as cells of ONE engine, in
	// discovery order, as a user who keeps one kernel does (go run still
	// runs each in parallel); each program is judged as in a fresh one.
	Session bool

	buildCache string // the run's cache of compiled cells
	// Progress, when set, is called as each program ends (from the worker
	// goroutines, one call at a time) with its index and the total.
	Progress func(done, total int, p report.Program)
}

// Run discovers the selected programs, runs each by go run and as one cell,
// and judges them. It returns the report of every program, in discovery
// order. An error means the harness could not work (no toolchain, no
// runcell binary, a cancelled context), not that programs failed.
func Run(ctx context.Context, opts Options) (*report.Report, error) {
	if opts.Runcell == "" {
		return nil, errors.New("fidelity: no runcell binary")
	}
	runcell, err := filepath.Abs(opts.Runcell)
	if err != nil {
		return nil, fmt.Errorf("fidelity: %w", err)
	}
	if _, err := os.Stat(runcell); err != nil {
		return nil, fmt.Errorf("fidelity: runcell binary: %w", err)
	}
	opts.Runcell = runcell
	// Every program's cells are new builds, tens of MB each: they go into a
	// cache of the run's own, removed at the end, not into the kernel's.
	buildCache, err := os.MkdirTemp("", "fidelity-cells-")
	if err != nil {
		return nil, fmt.Errorf("fidelity: %w", err)
	}
	defer os.RemoveAll(buildCache)
	opts.buildCache = buildCache
	if opts.Go == "" {
		opts.Go = "go"
	}
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	env, err := goEnv(ctx, opts.Go, "GOROOT", "GOVERSION", "CGO_ENABLED")
	if err != nil {
		return nil, err
	}
	if opts.GOROOT == "" {
		opts.GOROOT = env["GOROOT"]
	}
	modVersion, err := gorun.GoVersion(ctx, opts.Go)
	if err != nil {
		return nil, err
	}
	tags := corpus.DefaultTags(env["CGO_ENABLED"] == "1")
	progs, err := corpus.Discover(corpus.Config{
		GOROOT: opts.GOROOT, ExamplesDir: opts.ExamplesDir,
		Suites: opts.Suites, Globs: opts.Globs, Tags: tags,
	})
	if err != nil {
		return nil, err
	}
	suites := opts.Suites
	if len(suites) == 0 {
		suites = corpus.Suites
	}
	rep := &report.Report{
		FormatVersion: report.FormatVersion,
		Started:       time.Now(),
		GoVersion:     env["GOVERSION"],
		Platform:      tags.Platform(),
		Label:         opts.Label,
		Timeout:       opts.Timeout.String(),
		Parallel:      opts.Parallel,
		Suites:        suites,
		Globs:         opts.Globs,
		Programs:      make([]report.Program, len(progs)),
	}

	if opts.Session {
		err := runSession(ctx, progs, opts, modVersion, rep)
		rep.Seconds = time.Since(rep.Started).Seconds()
		if err != nil {
			return nil, err
		}
		return rep, nil
	}
	done := 0
	err = inParallel(ctx, len(progs), opts.Parallel, func(ctx context.Context, i int) error {
		p, err := runOne(ctx, progs[i], opts, modVersion)
		if err == nil {
			rep.Programs[i] = p
		}
		return err
	}, func(i int) {
		done++
		if opts.Progress != nil {
			opts.Progress(done, len(progs), rep.Programs[i])
		}
	})
	rep.Seconds = time.Since(rep.Started).Seconds()
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// inParallel calls work for 0 ≤ i < n, parallel calls at once. The first
// error cancels the calls still to come and is returned; a cancelled ctx
// is an error too. finish, when set, hears each call that succeeded, one
// at a time.
func inParallel(ctx context.Context, n, parallel int, work func(ctx context.Context, i int) error, finish func(i int)) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex // serializes finish and guards firstErr
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range parallel {
		wg.Go(func() {
			for i := range jobs {
				err := work(ctx, i)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
						cancel()
					}
				} else if finish != nil {
					finish(i)
				}
				mu.Unlock()
			}
		})
	}
feed:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fidelity: %w", err)
	}
	return nil
}

// runOne runs one program both ways and judges it.
func runOne(ctx context.Context, prog corpus.Program, opts Options, modVersion string) (report.Program, error) {
	p, ref, err := runRef(ctx, prog, opts, modVersion)
	if err != nil || ref == nil {
		return p, err
	}
	return judgeCell(ctx, prog, p, ref, func(dir string) (cellrun.Outcome, error) {
		return cellrun.Run(ctx, cellrun.Config{
			Binary: opts.Runcell, Source: prog.Path, WorkDir: dir, Timeout: opts.Timeout, Split: opts.Split,
			BuildCache: opts.buildCache,
		})
	})
}

// runRef runs a program by go run. A nil result with no error means the
// program is not applicable (p says so).
func runRef(ctx context.Context, prog corpus.Program, opts Options, modVersion string) (report.Program, *gorun.Result, error) {
	start := time.Now()
	p := report.Program{Suite: prog.Suite, Name: prog.Name, Path: prog.Path, Nondeterministic: prog.Nondeterministic}
	if !prog.Applicable {
		p.Category, p.Detail = report.NotApplicable, prog.Reason
		return p, nil, nil
	}
	refDir, cleanup, err := workDir(prog)
	if err != nil {
		return p, nil, err
	}
	defer cleanup()
	ref, err := gorun.Run(ctx, gorun.Program{Path: prog.Path, FilesDir: prog.FilesDir}, gorun.Config{
		Go: opts.Go, GoVersion: modVersion, WorkDir: refDir, RunTimeout: opts.Timeout,
	})
	if err != nil {
		return p, nil, fmt.Errorf("fidelity: %s: %w", prog.Name, err)
	}
	p.GoRun = &report.GoRun{
		Output: keep(ref.Output), Truncated: ref.Truncated, ExitCode: ref.ExitCode, Status: ref.Status,
		BuildFailed: ref.BuildFailed, BuildOutput: keep(ref.BuildOutput), TimedOut: ref.TimedOut,
		BuildSeconds: ref.Build.Seconds(), RunSeconds: ref.Run.Seconds(),
	}
	if ref.ExitCode != 0 && !ref.BuildFailed && !ref.TimedOut {
		f := ParseFailure(ref)
		p.GoRun.Failure = &report.Failure{Kind: f.Kind, Message: f.Message, Code: f.Code, Before: keep(f.Before)}
	}
	p.Seconds = time.Since(start).Seconds()
	return p, &ref, nil
}

// judgeCell runs the program as a cell (runCell, in the directory it
// should run in), unless go run could not run it, and judges it.
func judgeCell(ctx context.Context, prog corpus.Program, p report.Program, ref *gorun.Result, runCell func(dir string) (cellrun.Outcome, error)) (report.Program, error) {
	start := time.Now()
	var cell cellrun.Outcome
	if !ref.BuildFailed && !ref.TimedOut {
		cellDir, cleanup, err := workDir(prog)
		if err != nil {
			return p, err
		}
		defer cleanup()
		cell, err = runCell(cellDir)
		if err != nil {
			return p, fmt.Errorf("fidelity: %s: %w", prog.Name, err)
		}
		p.Cell = &report.Cell{
			Output: keep(cell.Output()), Truncated: cell.Truncated, Error: cell.Error, Replied: cell.Replied, TimedOut: cell.TimedOut,
			Status: cell.Status, Stderr: keep(cell.Stderr),
			StartupSeconds: cell.Startup.Seconds(), Seconds: cell.Duration.Seconds(),
		}
		for _, e := range cell.Events {
			if e.Kind == cellrun.KindDisplay || e.Kind == cellrun.KindUpdateDisplay {
				p.Cell.Displays++
			}
		}
	}
	p.Category, p.Detail = Judge(*ref, cell, prog.Nondeterministic)
	p.Seconds += time.Since(start).Seconds()
	return p, nil
}

// workDir returns the directory a program runs in, by go run and as a
// cell, and how to clean it up. Go's test programs run in $GOROOT/test, as
// Go's own test harness runs them (some read files there); examples run in
// a fresh directory holding their companion files.
func workDir(prog corpus.Program) (dir string, cleanup func(), err error) {
	if prog.WorkDir != "" {
		return prog.WorkDir, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "fidelity-run-")
	if err != nil {
		return "", nil, fmt.Errorf("fidelity: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	if prog.FilesDir != "" {
		if err := gorun.CopyDir(dir, prog.FilesDir); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	return dir, cleanup, nil
}

// keep cuts s to maxKept bytes for the report.
func keep(s string) string {
	if len(s) <= maxKept {
		return s
	}
	return s[:maxKept] + fmt.Sprintf("\n… [%d more bytes not kept in the report]\n", len(s)-maxKept)
}

// goEnv returns `go env` values.
func goEnv(ctx context.Context, goCmd string, names ...string) (map[string]string, error) {
	out, err := exec.CommandContext(ctx, goCmd, append([]string{"env"}, names...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("fidelity: go env: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(names) {
		return nil, fmt.Errorf("fidelity: go env printed %d lines for %d names", len(lines), len(names))
	}
	env := map[string]string{}
	for i, n := range names {
		env[n] = lines[i]
	}
	return env, nil
}

// BuildRuncell builds the child binary into dir as the Makefile builds the
// kernel and returns its path. moduleDir is the goaccel module's root.
//
// The flags matter: a binary that can load Go plugins is linked with
// immediate binding, which go-nvml's deliberately unresolved NVML symbols
// cannot survive, so lazy binding is asked for again; and compiled cells
// need to know where the goaccel source is.
func BuildRuncell(ctx context.Context, goCmd, moduleDir, dir string) (string, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	bin := filepath.Join(dir, "runcell")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build",
		"-ldflags=-checklinkname=0 -extldflags=-Wl,-z,lazy -X 'github.com/goaccel/goaccel/notebook/build.SourceDir="+moduleDir+"'",
		"-o", bin, "./fidelity/cmd/runcell")
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fidelity: building runcell: %w\n%s", err, out)
	}
	return bin, nil
}
