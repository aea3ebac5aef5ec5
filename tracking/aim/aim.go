package aim

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/tracking/values"
	"github.com/sirupsen/logrus"
)

//go:embed bridge.py
var bridgeScript string

// Timeouts for the Python side: importing aim and opening a run, and
// closing it at Finish.
var (
	openTimeout  = 2 * time.Minute
	closeTimeout = 2 * time.Minute
)

// Tracker records one Aim run through a long-lived Python process running
// the embedded bridge script.
type Tracker struct {
	runName, loggingDir string
	experiment          string
	runKwargs           map[string]any
	python              string

	mu       sync.Mutex
	started  bool
	finished bool
	seq      int64
	runHash  string
	cmd      *exec.Cmd
	queue    *lineQueue
	stderr   *tailBuffer

	// smu guards the state the reader and writer goroutines update; it is
	// taken after mu, never before.
	smu      sync.Mutex
	failures []string // errors the Python side reported, capped
	failed   int
	exited   bool // the bridge closed its output
	closedOK bool // the bridge acknowledged "close"
	writeErr error

	opened     chan openReply
	writerDone chan struct{}
	readerDone chan struct{}
}

type openReply struct {
	hash, fatal string
}

// New prepares a run; it starts nothing (Start does). The run goes to the
// Aim repository at loggingDir (Accelerate's default "."), named runName,
// in the experiment given by the "experiment" init kwarg, else runName.
// Other init kwargs are passed to aim.Run (for example
// system_tracking_interval, log_system_params, capture_terminal_logs) and
// must be JSON-encodable. The Python interpreter is $GOACCEL_AIM_PYTHON,
// else $GOACCEL_VENV/bin/python, else python3.
func New(runName, loggingDir string, initKwargs map[string]any) (*Tracker, error) {
	t := &Tracker{runName: runName, loggingDir: loggingDir, experiment: runName, runKwargs: map[string]any{}}
	for k, v := range initKwargs {
		if k == "experiment" {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("aim: init kwarg \"experiment\" must be a string, got %T", v)
			}
			t.experiment = s
			continue
		}
		if k == "repo" || k == "run_hash" || k == "read_only" {
			return nil, fmt.Errorf("aim: init kwarg %q is set by the tracker (the repository is the logging directory)", k)
		}
		if _, err := json.Marshal(v); err != nil {
			return nil, fmt.Errorf("aim: init kwarg %q cannot be passed to Python: %w", k, err)
		}
		t.runKwargs[k] = v
	}
	if t.loggingDir == "" {
		t.loggingDir = "."
	}
	t.python = os.Getenv("GOACCEL_AIM_PYTHON")
	if t.python == "" {
		if venv := os.Getenv("GOACCEL_VENV"); venv != "" {
			t.python = filepath.Join(venv, "bin", "python")
		}
	}
	if t.python == "" {
		t.python = "python3"
	}
	return t, nil
}

// Name is the LoggerType name.
func (t *Tracker) Name() string { return "aim" }

// RequiresLoggingDirectory is true, as for Accelerate's AimTracker.
func (t *Tracker) RequiresLoggingDirectory() bool { return true }

// MainProcessOnly is true, as for Accelerate's AimTracker.
func (t *Tracker) MainProcessOnly() bool { return true }

// Tracker returns the tracker itself (RunHash, Repo describe the run).
func (t *Tracker) Tracker() any { return t }

// RunHash is the Aim run hash, known after Start.
func (t *Tracker) RunHash() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runHash
}

// Repo is the Aim repository directory.
func (t *Tracker) Repo() string { return t.loggingDir }

// Start launches the Python bridge and waits until it has opened the run.
func (t *Tracker) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return fmt.Errorf("aim: run already started")
	}
	if err := os.MkdirAll(t.loggingDir, 0o755); err != nil {
		return fmt.Errorf("aim: creating the repository directory: %w", err)
	}
	repo, err := filepath.Abs(t.loggingDir)
	if err != nil {
		return fmt.Errorf("aim: resolving the repository directory: %w", err)
	}
	cmd := exec.Command(t.python, "-c", bridgeScript)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1", "PYTHONIOENCODING=utf-8")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("aim: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("aim: %w", err)
	}
	t.stderr = &tailBuffer{max: 8 << 10}
	cmd.Stderr = t.stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("aim: the aim tracker needs Python with the package aim (pip install aim); starting %q failed (set GOACCEL_AIM_PYTHON): %w", t.python, err)
	}
	t.cmd = cmd
	t.opened = make(chan openReply, 1)
	t.readerDone = make(chan struct{})
	go t.reader(stdout)

	spec, err := json.Marshal(map[string]any{"repo": repo, "name": t.runName, "experiment": t.experiment, "kwargs": t.runKwargs})
	if err == nil {
		_, err = stdin.Write(append(spec, '\n'))
	}
	if err != nil {
		_ = stdin.Close()
		return t.abortStart(fmt.Errorf("aim: sending the run spec to Python: %w", err))
	}
	select {
	case r := <-t.opened:
		if r.fatal != "" {
			_ = stdin.Close()
			return t.abortStart(fmt.Errorf("aim: %s", r.fatal))
		}
		t.runHash = r.hash
	case <-t.readerDone:
		_ = stdin.Close()
		return t.abortStart(fmt.Errorf("aim: the Python bridge (%s) exited before opening the run", t.python))
	case <-time.After(openTimeout):
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		return t.abortStart(fmt.Errorf("aim: the Python bridge (%s) did not open the run within %v", t.python, openTimeout))
	}
	t.queue = newLineQueue()
	t.writerDone = make(chan struct{})
	go t.writer(stdin)
	t.started = true
	return nil
}

// abortStart reaps the bridge and adds its exit status and stderr to err.
func (t *Tracker) abortStart(err error) error {
	waitErr := t.cmd.Wait()
	<-t.readerDone
	if waitErr != nil {
		err = fmt.Errorf("%w (%v)", err, waitErr)
	}
	if tail := strings.TrimSpace(t.stderr.String()); tail != "" {
		err = fmt.Errorf("%w\nPython stderr:\n%s", err, tail)
	}
	return err
}

// reader is owned by the Tracker: it consumes the bridge's replies until
// the bridge closes its output.
func (t *Tracker) reader(stdout io.Reader) {
	defer close(t.readerDone)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var r struct {
			Seq    int64  `json:"seq"`
			OK     bool   `json:"ok"`
			Hash   string `json:"hash"`
			Fatal  string `json:"fatal"`
			Error  string `json:"error"`
			Closed bool   `json:"closed"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			logrus.Warnf("aim: unexpected output from the Python bridge: %q", sc.Text())
			continue
		}
		switch {
		case r.Seq == 0 && (r.Fatal != "" || r.Hash != ""):
			t.opened <- openReply{hash: r.Hash, fatal: r.Fatal}
		case r.Error != "":
			logrus.Warnf("aim: the Python bridge reported: %s", r.Error)
			t.smu.Lock()
			t.failed++
			if len(t.failures) < 5 {
				t.failures = append(t.failures, r.Error)
			}
			t.smu.Unlock()
		case r.Closed:
			t.smu.Lock()
			t.closedOK = true
			t.smu.Unlock()
		}
	}
	t.smu.Lock()
	t.exited = true
	t.smu.Unlock()
}

// writer is owned by the Tracker: it sends queued lines to the bridge and
// closes its stdin once the queue is closed and drained.
func (t *Tracker) writer(stdin io.WriteCloser) {
	defer close(t.writerDone)
	w := bufio.NewWriter(stdin)
	for {
		batch, closed := t.queue.take()
		for _, l := range batch {
			if _, err := w.Write(l); err != nil {
				t.setWriteErr(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.setWriteErr(err)
		}
		if closed {
			_ = stdin.Close()
			return
		}
	}
}

func (t *Tracker) setWriteErr(err error) {
	t.smu.Lock()
	defer t.smu.Unlock()
	if t.writeErr == nil {
		t.writeErr = fmt.Errorf("aim: writing to the Python bridge: %w", err)
	}
}

func (t *Tracker) checkOpen(op string) error {
	if !t.started {
		return fmt.Errorf("aim: %s before Start", op)
	}
	if t.finished {
		return fmt.Errorf("aim: %s after Finish", op)
	}
	t.smu.Lock()
	defer t.smu.Unlock()
	if t.exited || t.writeErr != nil {
		return fmt.Errorf("aim: the Python bridge has stopped (%v); stderr:\n%s", t.writeErr, strings.TrimSpace(t.stderr.String()))
	}
	return nil
}

// send queues one request; raw, when set, is spliced in as "value" (so
// NaN and infinities reach Python's json, which accepts them).
func (t *Tracker) send(msg map[string]any, raw string) error {
	t.seq++
	msg["seq"] = t.seq
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("aim: encoding a request: %w", err)
	}
	if raw != "" {
		b = append(append(b[:len(b)-1], `,"value":`...), raw...)
		b = append(b, '}')
	}
	t.queue.push(append(b, '\n'))
	return nil
}

// StoreInitConfiguration sets run["hparams"] = values, as Accelerate does.
// Values JSON cannot encode are skipped with a warning naming the key.
func (t *Tracker) StoreInitConfiguration(vals map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("StoreInitConfiguration"); err != nil {
		return err
	}
	clean := values.JSONEncodable(vals, "aim: hyperparameter")
	return t.send(map[string]any{"op": "hparams", "values": clean}, "")
}

// Log tracks each value at step (Aim numbers the values itself when step
// is NoStep): numbers as metrics, strings as aim.Text, and a map of numbers
// as metric <key> with context {"subset": <inner key>}. Other values are
// skipped with a warning naming the key. kwargs may hold "context" (a map,
// merged into every value's context) and "epoch" (an int), as passed to
// Run.track. Log only queues the requests; it never waits for Python.
func (t *Tracker) Log(vals map[string]any, step int, kwargs map[string]any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.checkOpen("Log"); err != nil {
		return err
	}
	var baseCtx map[string]any
	var epoch any
	for k, v := range kwargs {
		switch k {
		case "context":
			m, ok := v.(map[string]any)
			if !ok {
				return fmt.Errorf("aim: log kwarg \"context\" must be a map[string]any, got %T", v)
			}
			baseCtx = m
		case "epoch":
			if _, isInt, ok := values.Number(v); !ok || !isInt {
				return fmt.Errorf("aim: log kwarg \"epoch\" must be an integer, got %T", v)
			}
			epoch = v
		default:
			logrus.Warnf("aim: log kwarg %q is not supported by the Go bridge and is ignored", k)
		}
	}
	var stepV any
	if step >= 0 {
		stepV = step
	}
	ctx := func(extra map[string]any) any {
		if len(baseCtx) == 0 && len(extra) == 0 {
			return nil
		}
		c := map[string]any{}
		for k, v := range baseCtx {
			c[k] = v
		}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	track := func(name, raw string, text bool, extra map[string]any) error {
		msg := map[string]any{"op": "track", "name": name, "step": stepV, "epoch": epoch, "context": ctx(extra)}
		if text {
			msg["text"] = true
		}
		return t.send(msg, raw)
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		v := vals[k]
		var err error
		if js, ok := values.NumberJSON(v, values.PythonLiterals); ok {
			err = track(k, js, false, nil)
		} else if s, ok := v.(string); ok {
			b, _ := json.Marshal(s)
			err = track(k, string(b), true, nil)
		} else if nums, bad, ok := values.NumberMap(v); ok {
			for _, b := range bad {
				logrus.Warnf("aim: value %q/%q is not a number; not logged", k, b)
			}
			for _, ik := range slices.Sorted(maps.Keys(nums)) {
				js, _ := values.NumberJSON(nums[ik], values.PythonLiterals)
				if err = track(k, js, false, map[string]any{"subset": ik}); err != nil {
					break
				}
			}
		} else {
			logrus.Warnf("aim: value %q has type %T, which the aim tracker cannot log; not logged", k, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Finish asks the bridge to close the run, waits for it to exit and
// reports anything that failed on the Python side.
func (t *Tracker) Finish() error {
	t.mu.Lock()
	if !t.started || t.finished {
		t.mu.Unlock()
		return nil
	}
	t.finished = true
	_ = t.send(map[string]any{"op": "close"}, "")
	t.queue.close()
	t.mu.Unlock()

	<-t.writerDone
	var errs []error
	select {
	case <-t.readerDone:
	case <-time.After(closeTimeout):
		_ = t.cmd.Process.Kill()
		<-t.readerDone
		errs = append(errs, fmt.Errorf("aim: the Python bridge did not close the run within %v and was killed", closeTimeout))
	}
	if err := t.cmd.Wait(); err != nil {
		errs = append(errs, fmt.Errorf("aim: the Python bridge exited with %w", err))
	}
	t.smu.Lock()
	defer t.smu.Unlock()
	if t.writeErr != nil {
		errs = append(errs, t.writeErr)
	}
	if t.failed > 0 {
		errs = append(errs, fmt.Errorf("aim: %d request(s) failed in the Python bridge: %s", t.failed, strings.Join(t.failures, "; ")))
	}
	if !t.closedOK && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("aim: the Python bridge did not confirm closing run %s", t.runHash))
	}
	if err := errors.Join(errs...); err != nil {
		if tail := strings.TrimSpace(t.stderr.String()); tail != "" {
			err = fmt.Errorf("%w\nPython stderr:\n%s", err, tail)
		}
		return err
	}
	return nil
}

// lineQueue is an unbounded FIFO of request lines, so that Log never
// blocks on the Python process.
type lineQueue struct {
	mu     sync.Mutex
	lines  [][]byte
	closed bool
	signal chan struct{}
}

func newLineQueue() *lineQueue { return &lineQueue{signal: make(chan struct{}, 1)} }

func (q *lineQueue) push(l []byte) {
	q.mu.Lock()
	q.lines = append(q.lines, l)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *lineQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// take waits for lines and returns them all, with whether the queue is
// closed (a closed queue's last batch is what remained).
func (q *lineQueue) take() ([][]byte, bool) {
	for {
		q.mu.Lock()
		batch, closed := q.lines, q.closed
		q.lines = nil
		q.mu.Unlock()
		if len(batch) > 0 || closed {
			return batch, closed
		}
		<-q.signal
	}
}

// tailBuffer keeps the last max bytes written to it (the bridge's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
