package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
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
		var (
			res     []rankResult
			failure groupFailure
			err     error
		)
		if l.cluster != nil {
			res, failure, err = l.cluster.attempt(ctx, mode, restart, payload)
		} else {
			res, failure, err = l.attempt(ctx, mode, restart, payload)
		}
		if err != nil {
			return nil, err
		}
		if failure == nil {
			if mode != modeRun {
				return nil, nil
			}
			return l.decode(s, payload, res)
		}
		failure.setRestarts(restart)
		if mode == modePreflight || restart >= l.opts.MaxRestarts {
			return nil, failure
		}
		where := ""
		if l.numNodes > 1 {
			where = fmt.Sprintf(" on %d nodes", l.numNodes)
		}
		l.pub.Stream("stderr", fmt.Sprintf("launcher: %s; restarting all %d workers%s (restart %d of %d)\n",
			failure.describe(), l.world, where, restart+1, l.opts.MaxRestarts))
		log.WithError(failure).Debugf("launcher: restarting the group (%d/%d)", restart+1, l.opts.MaxRestarts)
	}
}

// rankResult is what one rank returned, encoded by its WorkerRuntime.
type rankResult struct {
	rank int
	enc  []byte
}

func (l *launch) decode(s Session, payload []byte, res []rankResult) ([][]any, error) {
	sort.Slice(res, func(i, j int) bool { return res[i].rank < res[j].rank })
	out := make([][]any, len(res))
	for i, r := range res {
		vals, err := s.DecodeResults(payload, r.rank, r.enc)
		if err != nil {
			return nil, fmt.Errorf("launcher: decoding the results of rank %d: %w", r.rank, err)
		}
		out[i] = vals
	}
	return out, nil
}

// localGroup is the worker processes of one attempt on this node.
type localGroup struct {
	ws       []*worker
	exited   chan *worker // each worker once, when reaped
	allDone  chan struct{}
	stoppers sync.WaitGroup
}

// startGroup starts every local rank. When one cannot start, the ones
// started are stopped and reaped and the error is returned.
func (l *launch) startGroup(mode string, restart int, payload []byte) (*localGroup, error) {
	n := l.opts.NumProcesses
	g := &localGroup{exited: make(chan *worker, n), allDone: make(chan struct{})}
	for local := 0; local < n; local++ {
		w, err := l.startWorker(local, restart, mode, payload)
		if err != nil {
			g.stop(stopStep{0, syscall.SIGTERM}, stopStep{l.opts.MonitorInterval, syscall.SIGKILL})
			for range g.ws {
				<-g.exited
			}
			g.close()
			return nil, err
		}
		g.ws = append(g.ws, w)
		go func() { <-w.done; g.exited <- w }() // owner: the group's supervisor, which receives every worker
	}
	return g, nil
}

// stop signals the workers still running, step by step, until close.
func (g *localGroup) stop(steps ...stopStep) {
	g.stoppers.Add(1)
	go func() { // owner: the group; close waits for it
		defer g.stoppers.Done()
		escalate(g.ws, steps, g.allDone)
	}()
}

// close ends the stop sequences; call it once every worker was received.
func (g *localGroup) close() {
	close(g.allDone)
	g.stoppers.Wait()
}

// Stop sequences: after a failure, SIGTERM at once and SIGKILL when
// MonitorInterval has passed; on interrupt SIGINT, SIGTERM, SIGKILL.
func (l *launch) failureSteps() []stopStep {
	return []stopStep{{0, syscall.SIGTERM}, {l.opts.MonitorInterval, syscall.SIGKILL}}
}

var interruptSteps = []stopStep{{0, syscall.SIGINT}, {interruptTerm, syscall.SIGTERM}, {interruptKill, syscall.SIGKILL}}

// attempt runs one attempt on this node alone.
func (l *launch) attempt(ctx context.Context, mode string, restart int, payload []byte) ([]rankResult, groupFailure, error) {
	g, err := l.startGroup(mode, restart, payload)
	if err != nil {
		return nil, nil, err
	}
	return l.supervise(ctx, mode, g, nil)
}

// supervise waits for the local workers of g (and, with rm, for the other
// nodes of the round) and returns their results, or the failure that ended
// the attempt (everything is then stopped: SIGTERM at once, SIGKILL after
// MonitorInterval), or an error when ctx ended (everything is then
// interrupted). Every local worker has been reaped, and every node agent
// has reported its workers gone or been given up on, when it returns.
func (l *launch) supervise(ctx context.Context, mode string, g *localGroup, rm *remotes) ([]rankResult, groupFailure, error) {
	defer g.close()
	var (
		results     []rankResult
		failure     groupFailure
		failedAt    time.Time
		interrupted bool
		stopping    bool
	)
	stopAll := func(steps []stopStep, interrupt bool) {
		if stopping {
			return
		}
		stopping = true
		g.stop(steps...)
		rm.stop(interrupt)
	}
	fail := func(f groupFailure) {
		switch {
		case failure == nil && !interrupted:
			failure, failedAt = f, time.Now()
			stopAll(l.failureSteps(), false)
			rm.reportFailure(f)
		case failure != nil && time.Since(failedAt) < settleWindow && failurePriority(f) > failurePriority(failure):
			// A dead node or a rank's own failure explains the failures
			// of the ranks that talked to it, reported moments before.
			failure = f
		}
	}
	ctxDone := ctx.Done()
	for remaining := len(g.ws); remaining > 0 || rm.pending() > 0; {
		select {
		case w := <-g.exited:
			remaining--
			if stopping {
				continue
			}
			if f := w.failure(mode); f != nil {
				fail(f)
			} else {
				w.mu.Lock()
				results = append(results, rankResult{w.rank, w.result})
				w.mu.Unlock()
			}
		case ev := <-rm.linkEvents():
			if r, f := rm.handle(ev, stopping); f != nil {
				fail(f)
			} else if r != nil {
				results = append(results, *r)
			}
		case ev, ok := <-rm.roundEvents():
			if !ok {
				rm.noMoreRoundEvents()
				continue
			}
			fail(rm.roundFailure(ev))
		case <-rm.giveUp():
			rm.abandon()
		case <-ctxDone:
			ctxDone = nil
			if failure == nil {
				interrupted = true
				stopAll(interruptSteps, true)
			}
		}
	}
	if !failedAt.IsZero() {
		log.WithError(failure).Debugf("launcher: every worker stopped %s after the failure", time.Since(failedAt))
	}
	switch {
	case failure != nil:
		return nil, failure, nil
	case interrupted:
		return nil, nil, fmt.Errorf("launcher: interrupted; all %d workers stopped: %w", l.world, ctx.Err())
	}
	return results, nil, nil
}

// settleWindow is how long after the first failure of an attempt a
// failure that explains it better (see failurePriority) may replace it.
const settleWindow = time.Second

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
	rank := l.rankBase + local
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
	switch {
	case l.opts.LogLinePrefixTemplate != "":
		prefix = expandPrefix(l.opts.LogLinePrefixTemplate, rank, local, l.nodeRank)
	case l.numNodes > 1:
		prefix = expandPrefix(DefaultMultiNodePrefixTemplate, rank, local, l.nodeRank)
	case l.world > 1:
		prefix = expandPrefix(DefaultLogLinePrefixTemplate, rank, local, l.nodeRank)
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
	switch mode {
	case modePreflight:
		ok = w.gotOK
	case modeProgram:
		ok = true // its exit status says
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
