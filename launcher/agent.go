package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/frontend"
)

// Interrupt escalation: SIGINT at once (the worker cancels its context),
// SIGTERM after interruptTerm, SIGKILL after interruptKill — 5 s in all
// with the reaping.
const (
	interruptTerm = 2 * time.Second
	interruptKill = 4 * time.Second
)

// worker is one rank of one attempt: its process and what it reported.
type worker struct {
	proc
	tail *lineTail

	mu        sync.Mutex
	result    []byte
	gotResult bool
	gotOK     bool
	reported  *wireMsg // a structured error from the events channel
}

// run runs the group in mode, restarting it up to MaxRestarts times (run
// mode only), and returns the decoded results.
func (l *launch) run(ctx context.Context, mode string, s Session, payload []byte) ([][]any, error) {
	for restart := 0; ; restart++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("launcher: interrupted before the workers started: %w", err)
		}
		ws, failure, err := l.attempt(ctx, mode, restart, payload)
		if err != nil {
			return nil, err
		}
		if failure == nil {
			if mode != modeRun {
				return nil, nil
			}
			return l.decode(s, payload, ws)
		}
		failure.Restarts = restart
		if mode != modeRun || restart >= l.opts.MaxRestarts {
			return nil, failure
		}
		what := failure.Signal
		if what == "" {
			what = fmt.Sprintf("exit status %d", failure.ExitCode)
		}
		l.pub.Stream("stderr", fmt.Sprintf("launcher: rank %d failed (%s); restarting all %d workers (restart %d of %d)\n",
			failure.Rank, what, l.opts.NumProcesses, restart+1, l.opts.MaxRestarts))
		log.WithField("rank", failure.Rank).Debugf("launcher: restarting the group (%d/%d)", restart+1, l.opts.MaxRestarts)
	}
}

func (l *launch) decode(s Session, payload []byte, ws []*worker) ([][]any, error) {
	out := make([][]any, len(ws))
	for i, w := range ws {
		res, err := s.DecodeResults(payload, w.rank, w.result)
		if err != nil {
			return nil, fmt.Errorf("launcher: decoding the results of rank %d: %w", w.rank, err)
		}
		out[i] = res
	}
	return out, nil
}

// attempt starts every local rank and waits for all of them. It returns
// the workers, the first failure (the others are then stopped: SIGTERM at
// once, SIGKILL after MonitorInterval), or an error when the workers could
// not start or ctx ended (the workers are then interrupted and stopped).
// Every worker has been reaped when it returns.
func (l *launch) attempt(ctx context.Context, mode string, restart int, payload []byte) ([]*worker, *ChildFailedError, error) {
	n := l.opts.NumProcesses
	ws := make([]*worker, 0, n)
	exited := make(chan *worker, n)
	var startErr error
	for local := 0; local < n; local++ {
		w, err := l.startWorker(local, restart, mode, payload)
		if err != nil {
			startErr = err
			break
		}
		ws = append(ws, w)
		go func() { <-w.done; exited <- w }() // owner: attempt, which receives every worker below
	}

	allDone := make(chan struct{})
	var stoppers sync.WaitGroup
	stop := func(steps ...stopStep) {
		stoppers.Add(1)
		go func() { // owner: attempt, which waits for it before returning
			defer stoppers.Done()
			escalate(ws, steps, allDone)
		}()
	}
	defer func() {
		close(allDone)
		stoppers.Wait()
	}()

	interrupt := []stopStep{{0, syscall.SIGINT}, {interruptTerm, syscall.SIGTERM}, {interruptKill, syscall.SIGKILL}}
	if startErr != nil {
		stop(stopStep{0, syscall.SIGTERM}, stopStep{l.opts.MonitorInterval, syscall.SIGKILL})
	}
	var failure *ChildFailedError
	var failedAt time.Time
	interrupted := false
	ctxDone := ctx.Done()
	for remaining := len(ws); remaining > 0; {
		select {
		case w := <-exited:
			remaining--
			if failure != nil || interrupted || startErr != nil {
				continue
			}
			if f := w.failure(mode); f != nil {
				failure = f
				failedAt = time.Now()
				stop(stopStep{0, syscall.SIGTERM}, stopStep{l.opts.MonitorInterval, syscall.SIGKILL})
			}
		case <-ctxDone:
			ctxDone = nil
			interrupted = true
			stop(interrupt...)
		}
	}
	if !failedAt.IsZero() {
		log.WithField("rank", failure.Rank).Debugf("launcher: other workers stopped %s after the failure", time.Since(failedAt))
	}
	switch {
	case startErr != nil:
		return nil, nil, startErr
	case failure != nil:
		return ws, failure, nil
	case interrupted:
		return nil, nil, fmt.Errorf("launcher: interrupted; all %d workers stopped: %w", n, ctx.Err())
	}
	return ws, nil, nil
}

// stopStep sends sig to every worker still running after delay.
type stopStep struct {
	delay time.Duration
	sig   syscall.Signal
}

// escalate runs steps until done is closed.
func escalate(ws []*worker, steps []stopStep, done <-chan struct{}) {
	start := time.Now()
	for _, s := range steps {
		if d := s.delay - time.Since(start); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		for _, w := range ws {
			w.signal(s.sig)
		}
	}
}

// startWorker starts local rank local with its pipes and readers.
func (l *launch) startWorker(local, restart int, mode string, payload []byte) (*worker, error) {
	rank := l.opts.NumProcesses*l.opts.NodeRank + local
	w := &worker{tail: &lineTail{max: stderrTail}}
	w.rank, w.localRank = rank, local

	var pipes [4][2]*os.File // stdout, stderr, events, payload: {read, write}
	for i := range pipes {
		r, wr, err := os.Pipe()
		if err != nil {
			for _, p := range pipes[:i] {
				p[0].Close()
				p[1].Close()
			}
			return nil, fmt.Errorf("launcher: creating pipes for rank %d: %w", rank, err)
		}
		pipes[i] = [2]*os.File{r, wr}
	}
	stdoutR, stdoutW := pipes[0][0], pipes[0][1]
	stderrR, stderrW := pipes[1][0], pipes[1][1]
	eventsR, eventsW := pipes[2][0], pipes[2][1]
	payloadR, payloadW := pipes[3][0], pipes[3][1]

	cmd := exec.Command(l.cmd.Path, l.cmd.Args...)
	cmd.Env = l.workerEnv(local, restart, mode)
	cmd.Stdout = stdoutW
	cmd.Stderr = stderrW
	cmd.ExtraFiles = []*os.File{eventsW, payloadR} // fd 3, fd 4
	w.cmd = cmd
	w.parentEnds = []*os.File{stdoutR, stderrR, eventsR, payloadW}

	prefix := ""
	if tmpl := l.opts.LogLinePrefixTemplate; tmpl != "" {
		prefix = expandPrefix(tmpl, rank, local)
	} else if l.opts.NumProcesses*l.opts.NumNodes > 1 {
		prefix = expandPrefix(DefaultLogLinePrefixTemplate, rank, local)
	}
	w.readers.Add(4)
	go func() { defer w.readers.Done(); pumpLines(stdoutR, l.pub, "stdout", prefix, nil) }()
	go func() { defer w.readers.Done(); pumpLines(stderrR, l.pub, "stderr", prefix, w.tail) }()
	go func() { defer w.readers.Done(); w.readEvents(eventsR, l.pub) }()
	go func() { // the payload, then EOF
		defer w.readers.Done()
		if len(payload) > 0 {
			if _, err := payloadW.Write(payload); err != nil {
				log.WithError(err).WithField("rank", rank).Debug("launcher: writing the payload")
			}
		}
		payloadW.Close()
	}()
	if err := startProc(&w.proc, []*os.File{stdoutW, stderrW, eventsW, payloadR}); err != nil {
		w.readers.Wait()
		return nil, err
	}
	return w, nil
}

// readEvents handles the worker's events channel until EOF: displays are
// republished at once, results and errors kept for the end.
func (w *worker) readEvents(r io.Reader, pub frontend.Publisher) {
	dec := json.NewDecoder(r)
	for {
		var m wireMsg
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				log.WithError(err).WithField("rank", w.rank).Debug("launcher: reading worker events")
			}
			return
		}
		switch m.Type {
		case msgDisplay:
			pub.Display(m.Data, m.Metadata, m.ID)
		case msgUpdate:
			pub.UpdateDisplay(m.Data, m.Metadata, m.ID)
		case msgClear:
			pub.ClearOutput(m.Wait)
		case msgResult:
			w.mu.Lock()
			w.result, w.gotResult = m.Result, true
			w.mu.Unlock()
		case msgOK:
			w.mu.Lock()
			w.gotOK = true
			w.mu.Unlock()
		case msgError:
			w.mu.Lock()
			if w.reported == nil {
				mm := m
				w.reported = &mm
			}
			w.mu.Unlock()
		case msgLog:
			lvl, err := logrus.ParseLevel(m.Level)
			if err != nil {
				lvl = logrus.InfoLevel
			}
			logrus.WithFields(m.Fields).WithField("rank", w.rank).Log(lvl, m.Message)
		default:
			log.WithField("rank", w.rank).Debugf("launcher: unknown worker event %q", m.Type)
		}
	}
}

// failure returns nil when the reaped worker succeeded in mode, else what
// went wrong.
func (w *worker) failure(mode string) *ChildFailedError {
	code, sig := w.exitStatus()
	w.mu.Lock()
	defer w.mu.Unlock()
	ok := w.gotResult
	if mode == modePreflight {
		ok = w.gotOK
	}
	if code == 0 && sig == "" && ok {
		return nil
	}
	f := &ChildFailedError{
		Rank:       w.rank,
		LocalRank:  w.localRank,
		ExitCode:   code,
		Signal:     sig,
		LastStderr: w.tail.get(),
	}
	switch {
	case w.reported != nil && w.reported.Panic != "":
		f.Panic, f.Traceback = w.reported.Panic, w.reported.Stack
	case w.reported != nil:
		f.Message = w.reported.Message
	case w.tail.report() != "":
		// The Go runtime's own report of a panic it could not recover
		// (e.g. in a goroutine the function started) or a fatal error.
		if p, found := strings.CutPrefix(w.tail.report(), "panic: "); found {
			f.Panic = p
		} else {
			f.Message = w.tail.report()
		}
	case code == 0 && sig == "":
		f.Message = "the worker exited with status 0 without reporting its results (did the function call os.Exit?)"
	}
	return f
}
