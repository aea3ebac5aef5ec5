package cellrun

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/fidelity/gorun"
	"github.com/goaccel/goaccel/fidelity/internal/proc"
)

// Request is one program for a session child (runcell -session) to run
// as its next cell.
type Request struct {
	Source  string        // the program's source file
	Events  string        // the events file to record into (exists, empty)
	Dir     string        // the current directory for the cell
	Timeout time.Duration // the child interrupts the cell after it
}

// What a session child writes on fd 4 when a program's cell has replied.
const (
	AckDone     = "done"
	AckTimedOut = "timeout" // the child interrupted the cell at the timeout
)

// sessionGrace is how long past a program's timeout the session waits for
// the child's reply before it kills the child: the child interrupts the
// cell itself at the timeout, so a child still silent then is stuck.
const sessionGrace = 20 * time.Second

// Session runs programs one after another as cells of one engine, in one
// child process, as a user who keeps one kernel for many programs does. A
// child that dies or gets stuck costs the program it was running; the next
// program starts a new child (Restarts counts them).
type Session struct {
	Binary     string // the runcell binary
	BuildCache string // where the child caches compiled cells ("": the kernel's)
	MaxOutput  int    // see Config
	// Grace is how long past a program's timeout the session waits for the
	// child's reply before it kills the child (sessionGrace when 0).
	Grace time.Duration

	Restarts int // children started after the first

	cmd     *exec.Cmd
	cancel  context.CancelFunc // kills the child's process group
	req     *os.File
	acks    *bufio.Reader
	exited  chan struct{}
	stderr  *gorun.CappedBuffer
	started bool
	tmp     string
}

// start starts a child.
func (s *Session) start() error {
	if s.tmp == "" {
		tmp, err := os.MkdirTemp("", "fidelity-session-")
		if err != nil {
			return fmt.Errorf("cellrun: %w", err)
		}
		s.tmp = tmp
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("cellrun: %w", err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return fmt.Errorf("cellrun: %w", err)
	}
	maxOutput := s.MaxOutput
	if maxOutput == 0 {
		maxOutput = gorun.DefaultMaxOutput
	}
	args := []string{"-session", "-max-output", strconv.Itoa(maxOutput)}
	if s.BuildCache != "" {
		args = append(args, "-build-cache", s.BuildCache)
	}
	cctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(cctx, s.Binary, args...)
	cmd.Dir = s.tmp
	s.stderr = &gorun.CappedBuffer{Max: 64 << 10}
	cmd.Stdout, cmd.Stderr = s.stderr, s.stderr
	cmd.ExtraFiles = []*os.File{reqR, ackW}
	proc.Isolate(cmd)
	err = cmd.Start()
	reqR.Close()
	ackW.Close()
	if err != nil {
		cancel()
		reqW.Close()
		ackR.Close()
		return fmt.Errorf("cellrun: starting %s: %w", s.Binary, err)
	}
	s.cancel = cancel
	if s.started {
		s.Restarts++
	}
	s.started = true
	s.cmd, s.req, s.acks = cmd, reqW, bufio.NewReader(ackR)
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}, ack io.Closer) {
		_ = cmd.Wait()
		ack.Close()
		close(exited)
	}(cmd, s.exited, ackR)
	return nil
}

// stop kills the child and waits for it.
func (s *Session) stop() {
	if s.cmd == nil {
		return
	}
	s.req.Close()
	s.cancel()
	<-s.exited
	proc.Reap(s.cmd)
	s.cmd = nil
}

// Close ends the session: the child, told so by the end of its requests,
// closes its engine (10 s at most, then it is killed).
func (s *Session) Close() {
	if s.cmd != nil {
		s.req.Close()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
		}
	}
	s.stop()
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// Run runs the program in source as the session's next cell, in dir. The
// error reports trouble of the harness; what happened to the cell is in
// the Outcome (Died: the child died running it; TimedOut: it was stuck).
func (s *Session) Run(ctx context.Context, source, dir string, timeout time.Duration) (Outcome, error) {
	if s.cmd == nil {
		if err := s.start(); err != nil {
			return Outcome{}, err
		}
	}
	events := filepath.Join(s.tmp, "events.jsonl")
	if err := os.WriteFile(events, nil, 0o644); err != nil {
		return Outcome{}, fmt.Errorf("cellrun: %w", err)
	}
	line, err := json.Marshal(Request{Source: source, Events: events, Dir: dir, Timeout: timeout})
	if err != nil {
		return Outcome{}, fmt.Errorf("cellrun: %w", err)
	}
	begin := time.Now()
	type ack struct {
		line string
		err  error
	}
	acked := make(chan ack, 1)
	if _, err := s.req.Write(append(line, '\n')); err != nil {
		acked <- ack{err: err}
	} else {
		go func(r *bufio.Reader) {
			line, err := r.ReadString('\n')
			acked <- ack{strings.TrimSpace(line), err}
		}(s.acks)
	}
	expired := false
	var o Outcome
	grace := s.Grace
	if grace == 0 {
		grace = sessionGrace
	}
	timer := time.NewTimer(timeout + grace)
	defer timer.Stop()
	select {
	case a := <-acked:
		if a.err != nil { // the child died
			s.stop()
			o.Status, o.ExitCode = "child exited", -1
			o.Stderr = s.stderr.String()
		}
		expired = a.line == AckTimedOut
	case <-timer.C:
		s.stop()
		o.TimedOut = true
		o.Status, o.ExitCode = "killed: stuck past the timeout", -1
	case <-ctx.Done():
		s.stop()
		return o, ctx.Err()
	}
	o.Duration = time.Since(begin)
	data, err := os.ReadFile(events)
	if err != nil {
		return o, fmt.Errorf("cellrun: %w", err)
	}
	o.read(data)
	if expired { // replied, but only because it was interrupted: a hang
		o.TimedOut = true
	}
	return o, nil
}
