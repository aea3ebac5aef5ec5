// Package cellrun runs one program as one notebook cell in a child process
// and reads back what the cell did. The child (fidelity/cmd/runcell) starts
// the engine the way the kernel does and records every output of the cell,
// in order, as JSON lines in an events file, ending with the execute reply;
// the parent (Run) starts the child with a timeout and turns the events and
// the child's fate into an Outcome. A child that crashes or hangs costs one
// program, never the harness.
package cellrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/fidelity/gorun"
	"github.com/goaccel/goaccel/fidelity/internal/proc"
)

// Event kinds, in the events file.
const (
	KindReady         = "ready"          // the engine is up; the cell starts
	KindStream        = "stream"         // Name is "stdout" or "stderr"
	KindDisplay       = "display"        // display_data
	KindUpdateDisplay = "update_display" // update_display_data
	KindClearOutput   = "clear_output"
	KindInput         = "input"     // the cell asked for input (refused)
	KindTruncated     = "truncated" // stream text beyond the limit was dropped
	KindReply         = "reply"     // the execute reply: the cell ended
)

// Event is one line of the events file.
type Event struct {
	Kind string `json:"kind"`
	// Name is the stream name (stream) or the display id (displays).
	Name string         `json:"name,omitempty"`
	Text string         `json:"text,omitempty"`
	Data map[string]any `json:"data,omitempty"`
	// Error is the cell's error (reply only; nil when the cell succeeded).
	Error *Error `json:"error,omitempty"`
	// Result is the trailing expression's value (reply only).
	Result map[string]any `json:"result,omitempty"`
	// T is the time since the child started, in milliseconds.
	T float64 `json:"t"`
}

// Error is a failed cell: Jupyter's ename, evalue and traceback.
type Error struct {
	Name      string   `json:"ename"`
	Value     string   `json:"evalue"`
	Traceback []string `json:"traceback,omitempty"`
}

// Text is the error as one text: ename, evalue and the traceback lines,
// ANSI colour removed.
func (e *Error) Text() string {
	if e == nil {
		return ""
	}
	parts := append([]string{e.Name + ": " + e.Value}, e.Traceback...)
	return StripANSI(strings.Join(parts, "\n"))
}

// StripANSI removes ANSI escape sequences (CSI ... final byte).
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Config says how to run a cell.
type Config struct {
	Binary  string        // the runcell binary
	Source  string        // the program's source file, sent as the cell's code
	WorkDir string        // the child's current directory; must exist
	Timeout time.Duration // 0 means 30 seconds
	// Split runs the program as a notebook user would write it, a cell per
	// declaration (see SplitCells), instead of as one cell.
	Split bool
	// BuildCache is where the child caches compiled cells ("": the
	// kernel's own cache).
	BuildCache string
	// MaxOutput caps the cell's stream output recorded
	// (gorun.DefaultMaxOutput when 0); MaxStderr the child's own stderr
	// kept (its crash output; 64 KiB when 0).
	MaxOutput, MaxStderr int
}

// Outcome is what happened to the cell.
type Outcome struct {
	Events []Event
	// Truncated is set when the cell wrote more than MaxOutput bytes.
	Truncated bool
	// Replied is set when the cell ended with an execute reply; Error is
	// then the cell's error (nil: success).
	Replied bool
	Error   *Error
	// TimedOut is set when the child was killed at the timeout.
	TimedOut bool
	// Status is the child's exit status ("exit status 0", "signal:
	// killed"); ExitCode is -1 after a signal.
	Status   string
	ExitCode int
	// Stderr is what the child process itself wrote to its stderr: its
	// crash report when it died (cells' output is captured, not here).
	Stderr string
	// Startup is how long the engine took to start; Duration the whole
	// child, start to end.
	Startup, Duration time.Duration
}

// Output is the text of the cell's stream output, stdout and stderr in the
// order the engine sent them, up to the reply.
func (o Outcome) Output() string {
	var b strings.Builder
	for _, e := range o.Events {
		if e.Kind == KindStream {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// KernelNote starts the lines the kernel itself writes on a cell's stderr
// (imports it added, earlier declarations a redefinition left behind):
// notes to the user, not the program's output.
const KernelNote = "goaccel: "

// ProgramOutput is Output without the kernel's notes (lines of stderr
// starting with KernelNote): what the program itself wrote.
func (o Outcome) ProgramOutput() string {
	var b strings.Builder
	for _, e := range o.Events {
		if e.Kind != KindStream {
			continue
		}
		if e.Name != "stderr" || !strings.Contains(e.Text, KernelNote) {
			b.WriteString(e.Text)
			continue
		}
		for _, line := range strings.SplitAfter(e.Text, "\n") {
			if !strings.HasPrefix(line, KernelNote) {
				b.WriteString(line)
			}
		}
	}
	return b.String()
}

// Died reports whether the child ended without replying and was not
// killed by the harness's timeout: the kernel died.
func (o Outcome) Died() bool { return !o.Replied && !o.TimedOut }

// Run runs cfg.Source as one cell in a child process. The error reports
// trouble of the harness (no binary, no temporary file); a cell that fails,
// crashes the child or hangs is described by the Outcome.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.MaxOutput == 0 {
		cfg.MaxOutput = gorun.DefaultMaxOutput
	}
	if cfg.MaxStderr == 0 {
		cfg.MaxStderr = 64 << 10
	}
	tmp, err := os.MkdirTemp("", "fidelity-cell-")
	if err != nil {
		return Outcome{}, fmt.Errorf("cellrun: %w", err)
	}
	defer os.RemoveAll(tmp)
	events := filepath.Join(tmp, "events.jsonl")
	if err := os.WriteFile(events, nil, 0o644); err != nil {
		return Outcome{}, fmt.Errorf("cellrun: %w", err)
	}

	rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	args := []string{"-events", events, "-max-output", strconv.Itoa(cfg.MaxOutput)}
	if cfg.Split {
		args = append(args, "-split")
	}
	if cfg.BuildCache != "" {
		args = append(args, "-build-cache", cfg.BuildCache)
	}
	cmd := exec.CommandContext(rctx, cfg.Binary, append(args, cfg.Source)...)
	cmd.Dir = cfg.WorkDir
	stderr := &gorun.CappedBuffer{Max: cfg.MaxStderr}
	cmd.Stdout = stderr // the child's own fds, before and after it captures them
	cmd.Stderr = stderr
	proc.Isolate(cmd)
	start := time.Now()
	err = cmd.Run()
	var o Outcome
	o.Duration = time.Since(start)
	proc.Reap(cmd)
	if cmd.ProcessState == nil {
		return o, fmt.Errorf("cellrun: starting %s: %w", cfg.Binary, err)
	}
	if ctx.Err() != nil {
		return o, ctx.Err()
	}
	o.Status = cmd.ProcessState.String()
	o.ExitCode = cmd.ProcessState.ExitCode()
	o.Stderr = stderr.String()
	o.TimedOut = rctx.Err() != nil
	data, err := os.ReadFile(events)
	if err != nil {
		return o, fmt.Errorf("cellrun: %w", err)
	}
	o.read(data)
	return o, nil
}

// read takes the events of the child's events file into o.
func (o *Outcome) read(data []byte) {
	o.Events = ParseEvents(data)
	for i, e := range o.Events {
		switch e.Kind {
		case KindReady:
			o.Startup = time.Duration(e.T * float64(time.Millisecond))
		case KindTruncated:
			o.Truncated = true
		case KindReply:
			o.Replied = true
			o.Error = e.Error
			o.Events = o.Events[:i+1]
		}
		if o.Replied {
			break
		}
	}
	if o.Replied {
		o.TimedOut = false // replied, then hung on the way out: not the cell's fault
	}
}

// ParseEvents reads an events file, skipping a line the child did not
// finish writing when it died.
func ParseEvents(data []byte) []Event {
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// ErrUsage is returned by the child's argument parsing.
var ErrUsage = errors.New("usage: runcell -events FILE [-max-output BYTES] SOURCE.go")
