package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"

	"github.com/goaccel/goaccel/frontend"
)

// fakeInterp runs a tiny command language, one command per line:
//
//	print TEXT        stdout TEXT + "\n"
//	eprint TEXT       stderr TEXT + "\n"
//	lines N           N lines "line i\n" on stdout, one Stream call each
//	result TEXT       execute_result text/plain TEXT
//	error NAME VALUE  cell fails
//	block             wait for ctx (interrupt), then fail with Interrupted
//	sleep MS          sleep
//	gate              wait until the test closes fakeInterp.gate
//	input PROMPT      ask for input, print "got: VALUE" (or the error)
//	password PROMPT   same with password
//	display ID TEXT   display_data; update ID TEXT: update_display_data
//	clear             clear_output(wait=true)
//	panic             the interpreter panics
//	commopen TARGET   open a comm from the kernel side
type fakeInterp struct {
	mu       sync.Mutex
	executed []string
	comms    frontend.Comms
	closed   atomic.Bool
	started  chan string // receives each cell's code when it starts (if non-nil)
	gate     chan struct{}
}

// patience bounds every wait for the kernel (a reply, a connection, its
// stop). It is a hang guard, not a budget: the kernel answers a fake
// interpreter in milliseconds, but a busy CI machine may stall it for
// seconds, and only a kernel that never answers should fail a test.
const patience = 5 * time.Minute

func (f *fakeInterp) Info() (frontend.LanguageInfo, string, []frontend.HelpLink) {
	return frontend.LanguageInfo{
		Name: "go", Version: "1.26", MIMEType: "text/x-go", FileExtension: ".go",
		PygmentsLexer: "go", CodeMirrorMode: "go", NBConvertExporter: "script",
	}, "fake banner", []frontend.HelpLink{{Text: "Go", URL: "https://go.dev"}}
}

func (f *fakeInterp) SetComms(c frontend.Comms) { f.comms = c }

func (f *fakeInterp) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.executed...)
}

func (f *fakeInterp) Execute(ctx context.Context, req frontend.ExecuteRequest, io frontend.CellIO) frontend.ExecuteReply {
	f.mu.Lock()
	f.executed = append(f.executed, req.Code)
	f.mu.Unlock()
	if f.started != nil {
		f.started <- req.Code
	}
	var rep frontend.ExecuteReply
	for _, line := range strings.Split(req.Code, "\n") {
		cmd, arg, _ := strings.Cut(line, " ")
		switch cmd {
		case "print":
			io.Stream("stdout", arg+"\n")
		case "eprint":
			io.Stream("stderr", arg+"\n")
		case "lines":
			n, _ := strconv.Atoi(arg)
			for i := range n {
				io.Stream("stdout", "line "+strconv.Itoa(i)+"\n")
			}
		case "result":
			rep.Result = frontend.MIMEBundle{"text/plain": arg}
		case "error":
			name, value, _ := strings.Cut(arg, " ")
			return frontend.ExecuteReply{Err: &frontend.Error{Name: name, Value: value, Traceback: []string{name + ": " + value}}}
		case "block":
			<-ctx.Done()
			return frontend.ExecuteReply{Err: &frontend.Error{Name: "Interrupted", Value: ctx.Err().Error()}}
		case "gate":
			<-f.gate
		case "sleep":
			ms, _ := strconv.Atoi(arg)
			time.Sleep(time.Duration(ms) * time.Millisecond)
		case "input", "password":
			v, err := io.Input(ctx, arg, cmd == "password")
			if err != nil {
				io.Stream("stdout", "input error: "+err.Error()+"\n")
			} else {
				io.Stream("stdout", "got: "+v+"\n")
			}
		case "display":
			id, text, _ := strings.Cut(arg, " ")
			io.Display(frontend.MIMEBundle{"text/plain": text}, nil, id)
		case "update":
			id, text, _ := strings.Cut(arg, " ")
			io.UpdateDisplay(frontend.MIMEBundle{"text/plain": text}, nil, id)
		case "big":
			n, _ := strconv.Atoi(arg)
			chunk := strings.Repeat("x", 64<<10)
			for range n {
				io.Display(frontend.MIMEBundle{"text/plain": chunk}, nil, "")
			}
		case "clear":
			io.ClearOutput(true)
		case "panic":
			panic("fake interpreter bug")
		case "commopen":
			if _, err := f.comms.Open(arg, map[string]any{"hello": "frontend"}, nil); err != nil {
				io.Stream("stderr", err.Error())
			}
		}
	}
	if req.UserExpressions != nil && len(req.UserExpressions) > 0 {
		rep.UserExpressions = map[string]any{}
		for k, v := range req.UserExpressions {
			rep.UserExpressions[k] = map[string]any{"status": "ok", "data": map[string]any{"text/plain": v}, "metadata": map[string]any{}}
		}
	}
	return rep
}

func (f *fakeInterp) Complete(ctx context.Context, code string, cursor int) (frontend.Completion, error) {
	if code == "panic" {
		panic("complete bug")
	}
	return frontend.Completion{Matches: []string{"Println", "Printf"}, CursorStart: cursor - 2, CursorEnd: cursor}, nil
}

func (f *fakeInterp) Inspect(ctx context.Context, code string, cursor int, detail int) (frontend.Inspection, error) {
	return frontend.Inspection{Found: true, Data: frontend.MIMEBundle{"text/plain": "doc of " + code}}, nil
}

func (f *fakeInterp) IsComplete(ctx context.Context, code string) (frontend.Completeness, string) {
	if strings.HasSuffix(code, "{") {
		return frontend.Incomplete, "\t"
	}
	return frontend.Complete, ""
}

func (f *fakeInterp) Close() error { f.closed.Store(true); return nil }

// testKernel is a running kernel on 127.0.0.1 random ports.
type testKernel struct {
	k      *Kernel
	interp *fakeInterp
	done   chan error
	cancel context.CancelFunc
}

func startKernel(t *testing.T, interp *fakeInterp, key string) *testKernel {
	t.Helper()
	if interp == nil {
		interp = &fakeInterp{}
	}
	return startKernelWith(t, interp, interp, key)
}

// startKernelWith starts a kernel on it, whose fake part is interp.
func startKernelWith(t *testing.T, it Interpreter, interp *fakeInterp, key string) *testKernel {
	t.Helper()
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	log.Out = testWriter{t}
	conn := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", Key: key, SignatureScheme: "hmac-sha256"}
	k, err := New(conn, it, Options{Logger: log, HistoryPath: filepath.Join(t.TempDir(), "history.jsonl"), ImplementationVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tk := &testKernel{k: k, interp: interp, done: make(chan error, 1), cancel: cancel}
	go func() { tk.done <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-tk.done:
		case <-time.After(patience):
			t.Errorf("kernel did not stop within %v of its context ending", patience)
		}
	})
	return tk
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// client is a frontend made of zmq4 DEALER and SUB sockets.
type client struct {
	t       *testing.T
	sg      signer
	session string
	id      string
	shell   zmq4.Socket
	control zmq4.Socket
	stdin   zmq4.Socket
	iopub   zmq4.Socket
	ch      map[string]chan *message
	cancel  context.CancelFunc
}

func newClient(t *testing.T, tk *testKernel, key string) *client {
	t.Helper()
	sg, _ := newSigner("hmac-sha256", []byte(key))
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{t: t, sg: sg, session: uuid.NewString(), id: "client-" + uuid.NewString()[:8], cancel: cancel,
		ch: map[string]chan *message{}}
	ci := tk.k.ConnectionInfo()
	ep := func(port int) string { return fmt.Sprintf("tcp://127.0.0.1:%d", port) }
	mk := func(name string, s zmq4.Socket, port int) zmq4.Socket {
		if err := s.Dial(ep(port)); err != nil {
			t.Fatalf("dial %s: %v", name, err)
		}
		ch := make(chan *message, 100000)
		c.ch[name] = ch
		go func() {
			for {
				m, err := s.Recv()
				if err != nil {
					return
				}
				msg, err := decode(m.Frames, c.sg)
				if err != nil {
					t.Errorf("%s: client could not decode a kernel message: %v", name, err)
					continue
				}
				ch <- msg
			}
		}()
		return s
	}
	c.iopub = zmq4.NewSub(ctx)
	if err := c.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	mk("iopub", c.iopub, ci.IOPubPort)
	c.shell = mk("shell", zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(c.id))), ci.ShellPort)
	c.control = mk("control", zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(c.id))), ci.ControlPort)
	c.stdin = mk("stdin", zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity(c.id))), ci.StdinPort)
	t.Cleanup(func() {
		cancel()
		for _, s := range []zmq4.Socket{c.shell, c.control, c.stdin, c.iopub} {
			s.Close()
		}
	})
	// Wait until the kernel has the three DEALERs' connections, as a real
	// frontend has long before its first request.
	deadline := time.Now().Add(patience)
	for _, s := range []*zsock{tk.k.shell, tk.k.control, tk.k.stdin} {
		for !s.hasPeer([]byte(c.id)) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: client not connected", s.name)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	// JEP 65: the first IOPub message is the welcome.
	w := c.recv("iopub")
	if w.header.MsgType != "iopub_welcome" {
		t.Fatalf("first iopub message is %s, want iopub_welcome", w.header.MsgType)
	}
	return c
}

func (c *client) send(channel, msgType string, content any) string {
	c.t.Helper()
	h := newHeader(msgType, c.session)
	h.Username = "tester"
	frames := encode(nil, marshal(h), []byte("{}"), []byte("{}"), marshal(content), nil, c.sg)
	var s zmq4.Socket
	switch channel {
	case "shell":
		s = c.shell
	case "control":
		s = c.control
	case "stdin":
		s = c.stdin
	}
	if err := s.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatalf("send %s: %v", msgType, err)
	}
	return h.MsgID
}

func (c *client) sendRaw(channel string, frames [][]byte) {
	c.t.Helper()
	s := map[string]zmq4.Socket{"shell": c.shell, "control": c.control, "stdin": c.stdin}[channel]
	if err := s.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
}

// recv returns the next message on channel; it fails the test only when
// none comes within patience.
func (c *client) recv(channel string) *message {
	c.t.Helper()
	select {
	case m := <-c.ch[channel]:
		return m
	case <-time.After(patience):
		c.t.Fatalf("no %s message within %v", channel, patience)
		return nil
	}
}

// noMessage checks that nothing arrives on channel within d.
func (c *client) noMessage(channel string, d time.Duration) {
	c.t.Helper()
	select {
	case m := <-c.ch[channel]:
		c.t.Fatalf("unexpected %s message %s: %s", channel, m.header.MsgType, m.content)
	case <-time.After(d):
	}
}

func parentID(m *message) string {
	var h header
	_ = json.Unmarshal(m.parent, &h)
	return h.MsgID
}

func contentMap(t *testing.T, m *message) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(m.content, &v); err != nil {
		t.Fatalf("content of %s: %v", m.header.MsgType, err)
	}
	return v
}

// iopubUntilIdle collects the IOPub messages with parent id up to and
// including its idle status; it checks the first is busy. It waits for
// progress: patience runs from the last message.
func (c *client) iopubUntilIdle(id string) []*message {
	c.t.Helper()
	var out []*message
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		select {
		case m := <-c.ch["iopub"]:
			deadline.Reset(patience)
			if parentID(m) != id {
				continue
			}
			out = append(out, m)
			if len(out) == 1 && (m.header.MsgType != "status" || contentMap(c.t, m)["execution_state"] != "busy") {
				c.t.Fatalf("first iopub message for %s is %s %s, want status busy", id, m.header.MsgType, m.content)
			}
			if m.header.MsgType == "status" && contentMap(c.t, m)["execution_state"] == "idle" {
				return out
			}
		case <-deadline.C:
			c.t.Fatalf("no idle for %s: no IOPub message for %v (got %d messages)", id, patience, len(out))
		}
	}
}

func types(ms []*message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.header.MsgType)
	}
	return out
}

// execute sends an execute_request and returns its reply and IOPub messages.
func (c *client) execute(code string, extra map[string]any) (*message, []*message) {
	c.t.Helper()
	content := map[string]any{"code": code, "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true}
	for k, v := range extra {
		content[k] = v
	}
	id := c.send("shell", "execute_request", content)
	rep := c.recv("shell")
	if rep.header.MsgType != "execute_reply" || parentID(rep) != id {
		c.t.Fatalf("got %s (parent %s), want execute_reply to %s", rep.header.MsgType, parentID(rep), id)
	}
	return rep, c.iopubUntilIdle(id)
}

// hasPeer reports whether a peer with routing identity id is connected.
func (s *zsock) hasPeer(id []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID[string(id)]) > 0
}

// subscribers is the number of peers subscribed to anything.
func (s *zsock) subscribers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p := range s.peers {
		if len(p.topics) > 0 {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds; it fails the test only when cond does
// not hold within patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, patience)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
