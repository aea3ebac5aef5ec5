package launcher

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/internal/launchenv"
)

// Environment variables the launcher sets in each worker besides the
// torchelastic ones (RANK, LOCAL_RANK, WORLD_SIZE, ...). The accelerate
// package reads the rendezvous ones to join the process group.
const (
	// EnvLaunchSecret is the launch's random secret: the rendezvous store
	// and the ranks admit only processes that know it.
	EnvLaunchSecret = launchenv.LaunchSecret
	// EnvRdzvBackend is "static", "c10d" (the first rank able to bind the
	// endpoint hosts the store) or "etcd" (node 0's launcher hosts the
	// store, as with "static").
	EnvRdzvBackend = launchenv.RdzvBackend
	// EnvRdzvEndpoint is host:port of the rendezvous store (the same as
	// MASTER_ADDR:MASTER_PORT).
	EnvRdzvEndpoint = launchenv.RdzvEndpoint
	// EnvRdzvNamespace prefixes the store keys of one attempt (it changes
	// when the group is restarted), for pg.Config.Namespace.
	EnvRdzvNamespace = launchenv.RdzvNamespace
	// EnvRdzvConf holds Options.RdzvConf as a JSON object.
	EnvRdzvConf = "GOACCEL_RDZV_CONF"
	// EnvWorkerMode is "run", "preflight" or, for a program that
	// LaunchProgram runs, "program".
	EnvWorkerMode = "GOACCEL_WORKER_MODE"
	// EnvLogLevel is the kernel's logrus level; a worker logs at the same
	// level, and its log entries travel to the kernel's log (warnings and
	// errors are shown in the cell too).
	EnvLogLevel = "GOACCEL_LOG_LEVEL"
	// EnvLauncherPID is the launching process's pid: a worker whose parent
	// is already gone exits at once (closing the Pdeathsig race).
	EnvLauncherPID = "GOACCEL_LAUNCHER_PID"
)

// The worker's extra file descriptors.
const (
	// EventsFD (fd 3) is written by the worker: JSON lines (wireMsg) with
	// its displays, its results and its structured errors.
	EventsFD = 3
	// PayloadFD (fd 4) is read by the worker: the payload from
	// Session.Prepare, then EOF. Empty in pre-flight mode.
	PayloadFD = 4
)

const (
	modeRun       = "run"
	modePreflight = "preflight"
	// modeProgram: the workers are a program (LaunchProgram), which
	// succeeds by exiting with status 0.
	modeProgram = "program"
)

// Message types on the events channel.
const (
	msgDisplay = "display"
	msgUpdate  = "update"
	msgClear   = "clear"
	msgResult  = "result"
	msgError   = "error"
	msgOK      = "ok" // pre-flight passed
	msgLog     = "log"
)

// wireMsg is one line on the events channel.
type wireMsg struct {
	Type string `json:"t"`
	// display / update
	Data     frontend.MIMEBundle `json:"data,omitempty"`
	Metadata map[string]any      `json:"meta,omitempty"`
	ID       string              `json:"id,omitempty"`
	// clear
	Wait bool `json:"wait,omitempty"`
	// result
	Result []byte `json:"result,omitempty"`
	// error
	Message string `json:"msg,omitempty"`
	Panic   string `json:"panic,omitempty"`
	Stack   string `json:"stack,omitempty"`
	// log
	Level  string         `json:"level,omitempty"`
	Fields map[string]any `json:"fields,omitempty"`
}

// wireWriter writes wireMsg lines; safe for concurrent use (worker goroutines
// may display at any time).
type wireWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func newWireWriter(w io.Writer) *wireWriter { return &wireWriter{enc: json.NewEncoder(w)} }

func (w *wireWriter) send(m wireMsg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.err = w.enc.Encode(m)
	return w.err
}

// forwardingSink is the display sink of a worker: displays travel to the
// launcher on the events channel, streams to the worker's own stdout and
// stderr (which the launcher reads and prefixes).
type forwardingSink struct {
	w              *wireWriter
	stdout, stderr io.Writer
}

func (s *forwardingSink) Stream(name, text string) {
	out := s.stdout
	if name == "stderr" {
		out = s.stderr
	}
	_, _ = io.WriteString(out, text)
}

func (s *forwardingSink) Display(data frontend.MIMEBundle, metadata map[string]any, id string) {
	_ = s.w.send(wireMsg{Type: msgDisplay, Data: data, Metadata: metadata, ID: id})
}

func (s *forwardingSink) UpdateDisplay(data frontend.MIMEBundle, metadata map[string]any, id string) {
	_ = s.w.send(wireMsg{Type: msgUpdate, Data: data, Metadata: metadata, ID: id})
}

func (s *forwardingSink) ClearOutput(wait bool) {
	_ = s.w.send(wireMsg{Type: msgClear, Wait: wait})
}

// logForwarder is a logrus hook of a worker: every entry travels to the
// launcher, which logs it in the kernel's log with the worker's rank.
type logForwarder struct{ w *wireWriter }

func (h *logForwarder) Levels() []logrus.Level { return logrus.AllLevels }

func (h *logForwarder) Fire(e *logrus.Entry) error {
	fields := make(map[string]any, len(e.Data))
	for k, v := range e.Data {
		if err, ok := v.(error); ok {
			v = err.Error()
		} else if _, isStr := v.(string); !isStr {
			v = fmt.Sprint(v)
		}
		fields[k] = v
	}
	return h.w.send(wireMsg{Type: msgLog, Level: e.Level.String(), Message: e.Message, Fields: fields})
}

// userLogHook writes warnings and errors of the standard logger to w
// (the worker's stderr), formatted by the logger's formatter.
type userLogHook struct{ w io.Writer }

func (h *userLogHook) Levels() []logrus.Level {
	return []logrus.Level{logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel, logrus.WarnLevel}
}

func (h *userLogHook) Fire(e *logrus.Entry) error {
	b, err := e.Logger.Formatter.Format(e)
	if err != nil {
		return err
	}
	_, err = h.w.Write(b)
	return err
}
