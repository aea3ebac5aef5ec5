// Package gorun produces the reference behaviour of a program: it builds the
// program with the installed Go toolchain, in a throw-away module, and runs
// the binary — what `go run` does — capturing stdout and stderr together, in
// the order a terminal would show them, and the exit status.
package gorun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/goaccel/goaccel/fidelity/internal/proc"
)

// DefaultMaxOutput is how much of a program's output is kept. Outputs
// longer than that are compared by their first DefaultMaxOutput bytes.
const DefaultMaxOutput = 4 << 20

// Program is the program to build and run.
type Program struct {
	Path string // the source file; built as the module's only file, main.go
	// FilesDir, when set, is copied into the build directory (for
	// //go:embed). The caller prepares the working directory.
	FilesDir string
}

// Config configures one build and run.
type Config struct {
	Go           string        // the go command; "go" when empty
	GoVersion    string        // the go.mod `go` line, e.g. "1.26.8"; from `go env GOVERSION` when empty
	WorkDir      string        // where the program runs (its current directory); must exist
	BuildTimeout time.Duration // 0 means 2 minutes
	RunTimeout   time.Duration // 0 means 30 seconds
	// MaxOutput caps the output kept (DefaultMaxOutput when 0); Truncated
	// says when more was written.
	MaxOutput int
}

// Result is the reference behaviour.
type Result struct {
	// BuildFailed is set when `go build` failed or timed out; BuildOutput
	// says why. Nothing ran.
	BuildFailed bool
	BuildOutput string
	// Output is what the program wrote to stdout and stderr, interleaved.
	Output    string
	Truncated bool
	// ExitCode is the exit status; -1 when a signal ended the program.
	ExitCode int
	// Status is "exit status 0", "exit status 2", "signal: killed", ...
	Status   string
	TimedOut bool
	Build    time.Duration
	Run      time.Duration
}

// Run builds and runs p. The error reports trouble of the harness (no
// temporary directory, no go command); a program that fails to build or
// run is described by the Result.
func Run(ctx context.Context, p Program, cfg Config) (Result, error) {
	goCmd := cfg.Go
	if goCmd == "" {
		goCmd = "go"
	}
	if cfg.BuildTimeout == 0 {
		cfg.BuildTimeout = 2 * time.Minute
	}
	if cfg.RunTimeout == 0 {
		cfg.RunTimeout = 30 * time.Second
	}
	if cfg.MaxOutput == 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	version := cfg.GoVersion
	if version == "" {
		v, err := GoVersion(ctx, goCmd)
		if err != nil {
			return Result{}, err
		}
		version = v
	}
	buildDir, err := os.MkdirTemp("", "fidelity-build-")
	if err != nil {
		return Result{}, fmt.Errorf("gorun: %w", err)
	}
	defer os.RemoveAll(buildDir)
	if p.FilesDir != "" {
		if err := CopyDir(buildDir, p.FilesDir); err != nil {
			return Result{}, err
		}
	}
	src, err := os.ReadFile(p.Path)
	if err != nil {
		return Result{}, fmt.Errorf("gorun: %w", err)
	}
	gomod := fmt.Sprintf("module fidelity.invalid/prog\n\ngo %s\n", version)
	if err := os.WriteFile(filepath.Join(buildDir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return Result{}, fmt.Errorf("gorun: %w", err)
	}
	if err := os.WriteFile(filepath.Join(buildDir, "main.go"), src, 0o644); err != nil {
		return Result{}, fmt.Errorf("gorun: %w", err)
	}

	var res Result
	bin := filepath.Join(buildDir, "prog")
	bctx, cancel := context.WithTimeout(ctx, cfg.BuildTimeout)
	build := exec.CommandContext(bctx, goCmd, "build", "-o", bin, ".")
	build.Dir = buildDir
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOWORK=off")
	start := time.Now()
	out, err := build.CombinedOutput()
	res.Build = time.Since(start)
	buildTimedOut := bctx.Err() != nil
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) && !buildTimedOut {
			return res, fmt.Errorf("gorun: running %s build: %w", goCmd, err)
		}
		res.BuildFailed = true
		res.BuildOutput = strings.TrimSpace(string(out))
		if buildTimedOut {
			res.BuildOutput = fmt.Sprintf("go build timed out after %v\n%s", cfg.BuildTimeout, res.BuildOutput)
		}
		return res, nil
	}

	rctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
	defer cancel()
	run := exec.CommandContext(rctx, bin)
	run.Dir = cfg.WorkDir
	buf := &CappedBuffer{Max: cfg.MaxOutput}
	run.Stdout = buf // one writer for both: one pipe, terminal order
	run.Stderr = buf
	proc.Isolate(run)
	start = time.Now()
	err = run.Run()
	res.Run = time.Since(start)
	res.Output, res.Truncated = buf.String(), buf.Truncated()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	res.TimedOut = rctx.Err() != nil
	if run.ProcessState == nil {
		return res, fmt.Errorf("gorun: starting %s: %w", p.Path, err)
	}
	res.ExitCode = run.ProcessState.ExitCode()
	res.Status = run.ProcessState.String()
	return res, nil
}

// GoVersion returns the toolchain's version for a go.mod `go` line
// ("1.26.8" for go1.26.8).
func GoVersion(ctx context.Context, goCmd string) (string, error) {
	out, err := exec.CommandContext(ctx, goCmd, "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("gorun: go env GOVERSION: %w", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "go")
	if i := strings.IndexAny(v, " -"); i >= 0 { // "1.27rc1 X:..." or devel builds
		v = v[:i]
	}
	return v, nil
}

// CappedBuffer keeps the first Max bytes written to it and counts the rest.
// It is not safe for concurrent use; exec.Cmd serializes writes to a writer
// shared by Stdout and Stderr.
type CappedBuffer struct {
	Max     int
	buf     bytes.Buffer
	dropped int
}

func (b *CappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	room := max(b.Max-b.buf.Len(), 0)
	if room < len(p) {
		b.dropped += len(p) - room
		p = p[:room]
	}
	b.buf.Write(p)
	return n, nil
}

// String returns the kept bytes.
func (b *CappedBuffer) String() string { return b.buf.String() }

// Truncated reports whether bytes were dropped.
func (b *CappedBuffer) Truncated() bool { return b.dropped > 0 }
