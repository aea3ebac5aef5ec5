package kernel

import (
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/go-zeromq/zmq4/security/null"

	"github.com/goaccel/goaccel/frontend"
)

func TestKernelInfoAndStatusOrder(t *testing.T) {
	tk := startKernel(t, nil, "secret")
	c := newClient(t, tk, "secret")
	id := c.send("shell", "kernel_info_request", map[string]any{})
	rep := c.recv("shell")
	if rep.header.MsgType != "kernel_info_reply" || parentID(rep) != id {
		t.Fatalf("got %s to %s", rep.header.MsgType, parentID(rep))
	}
	if rep.header.Version != "5.4" {
		t.Errorf("header version %q", rep.header.Version)
	}
	cm := contentMap(t, rep)
	if cm["status"] != "ok" || cm["protocol_version"] != "5.4" || cm["implementation"] != "goaccel" ||
		cm["implementation_version"] != "test" || cm["banner"] != "fake banner" {
		t.Errorf("kernel_info_reply content: %v", cm)
	}
	li := cm["language_info"].(map[string]any)
	for k, want := range map[string]string{"name": "go", "version": "1.26", "mimetype": "text/x-go",
		"file_extension": ".go", "pygments_lexer": "go", "codemirror_mode": "go", "nbconvert_exporter": "script"} {
		if li[k] != want {
			t.Errorf("language_info.%s = %v, want %q", k, li[k], want)
		}
	}
	if links := cm["help_links"].([]any); len(links) != 1 {
		t.Errorf("help_links %v", links)
	}
	msgs := c.iopubUntilIdle(id)
	if got := types(msgs); !reflect.DeepEqual(got, []string{"status", "status"}) {
		t.Errorf("iopub for kernel_info: %v, want busy, idle", got)
	}
}

func TestExecuteOrder(t *testing.T) {
	tk := startKernel(t, nil, "secret")
	c := newClient(t, tk, "secret")
	rep, msgs := c.execute("print hello, world\nresult 42", nil)
	cm := contentMap(t, rep)
	if cm["status"] != "ok" || cm["execution_count"] != 1.0 {
		t.Errorf("reply %v", cm)
	}
	if _, ok := cm["payload"].([]any); !ok {
		t.Errorf("payload not an array: %v", cm["payload"])
	}
	want := []string{"status", "execute_input", "stream", "execute_result", "status"}
	if got := types(msgs); !reflect.DeepEqual(got, want) {
		t.Fatalf("iopub order %v, want %v", got, want)
	}
	if in := contentMap(t, msgs[1]); in["code"] != "print hello, world\nresult 42" || in["execution_count"] != 1.0 {
		t.Errorf("execute_input %v", in)
	}
	if s := contentMap(t, msgs[2]); s["name"] != "stdout" || s["text"] != "hello, world\n" {
		t.Errorf("stream %v", s)
	}
	if r := contentMap(t, msgs[3]); r["execution_count"] != 1.0 || r["data"].(map[string]any)["text/plain"] != "42" {
		t.Errorf("execute_result %v", r)
	}

	// Counting: store_history false and silent do not increment.
	rep, _ = c.execute("print x", map[string]any{"store_history": false})
	if n := contentMap(t, rep)["execution_count"]; n != 1.0 {
		t.Errorf("store_history=false: execution_count %v, want 1", n)
	}
	rep, msgs = c.execute("print y\nresult 1", map[string]any{"silent": true})
	if n := contentMap(t, rep)["execution_count"]; n != 1.0 {
		t.Errorf("silent: execution_count %v, want 1", n)
	}
	if got := types(msgs); !reflect.DeepEqual(got, []string{"status", "stream", "status"}) {
		t.Errorf("silent iopub %v, want busy, stream, idle (no execute_input/result)", got)
	}
	rep, _ = c.execute("print z", nil)
	if n := contentMap(t, rep)["execution_count"]; n != 2.0 {
		t.Errorf("execution_count %v, want 2", n)
	}
	// user_expressions pass through.
	rep, _ = c.execute("", map[string]any{"user_expressions": map[string]any{"a": "1+1"}})
	ue := contentMap(t, rep)["user_expressions"].(map[string]any)
	if ue["a"].(map[string]any)["status"] != "ok" {
		t.Errorf("user_expressions %v", ue)
	}
}

func TestExecuteErrorAndOutputs(t *testing.T) {
	tk := startKernel(t, nil, "")
	c := newClient(t, tk, "")
	rep, msgs := c.execute("eprint oops\nerror CompileError bad syntax", nil)
	cm := contentMap(t, rep)
	if cm["status"] != "error" || cm["ename"] != "CompileError" || cm["evalue"] != "bad syntax" {
		t.Errorf("reply %v", cm)
	}
	if tb, ok := cm["traceback"].([]any); !ok || len(tb) != 1 {
		t.Errorf("traceback %v", cm["traceback"])
	}
	want := []string{"status", "execute_input", "stream", "error", "status"}
	if got := types(msgs); !reflect.DeepEqual(got, want) {
		t.Fatalf("iopub %v, want %v", got, want)
	}
	if s := contentMap(t, msgs[2]); s["name"] != "stderr" {
		t.Errorf("stream %v", s)
	}

	_, msgs = c.execute("display d1 first\nupdate d1 second\nclear\nprint after", nil)
	want = []string{"status", "execute_input", "display_data", "update_display_data", "clear_output", "stream", "status"}
	if got := types(msgs); !reflect.DeepEqual(got, want) {
		t.Fatalf("iopub %v, want %v", got, want)
	}
	if tr := contentMap(t, msgs[3])["transient"].(map[string]any); tr["display_id"] != "d1" {
		t.Errorf("update_display_data transient %v", tr)
	}
	if w := contentMap(t, msgs[4])["wait"]; w != true {
		t.Errorf("clear_output wait %v", w)
	}

	// An interpreter panic is a cell error, and the kernel lives on.
	rep, _ = c.execute("panic", nil)
	if cm := contentMap(t, rep); cm["status"] != "error" || cm["ename"] != "KernelPanic" {
		t.Errorf("panic reply %v", cm)
	}
	rep, _ = c.execute("print alive", nil)
	if contentMap(t, rep)["status"] != "ok" {
		t.Error("kernel not working after an interpreter panic")
	}
}

func TestStreamCoalescing(t *testing.T) {
	tk := startKernel(t, nil, "secret")
	c := newClient(t, tk, "secret")
	const n = 100000
	start := time.Now()
	_, msgs := c.execute(fmt.Sprintf("lines %d\nresult done", n), nil)
	elapsed := time.Since(start)
	var sb strings.Builder
	streams := 0
	for _, m := range msgs {
		if m.header.MsgType == "stream" {
			streams++
			sb.WriteString(contentMap(t, m)["text"].(string))
		}
	}
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if sb.String() != want.String() {
		t.Fatalf("stream text differs: got %d bytes, want %d", sb.Len(), want.Len())
	}
	// Coalesced: a stream message is sent flushDelay after the first
	// unsent write or when flushSize bytes are pending, so however slow the
	// machine, there are at most that many of each. Uncoalesced would be n.
	if most := int(elapsed/flushDelay) + want.Len()/flushSize + 2; streams > most {
		t.Errorf("%d stream messages for %d lines in %v: not coalesced (at most %d)", streams, n, elapsed, most)
	}
	if got := types(msgs); got[len(got)-2] != "execute_result" {
		t.Errorf("execute_result not after the streams: %v", got[len(got)-3:])
	}
	t.Logf("%d lines (%d bytes) in %d stream messages, %v", n, want.Len(), streams, elapsed)
}

func TestStopOnErrorAbortsQueue(t *testing.T) {
	interp := &fakeInterp{started: make(chan string, 10), gate: make(chan struct{})}
	tk := startKernel(t, interp, "secret")
	c := newClient(t, tk, "secret")
	base := map[string]any{"silent": false, "store_history": true, "user_expressions": map[string]any{}, "allow_stdin": false}
	with := func(code string, stop bool) map[string]any {
		m := map[string]any{"code": code, "stop_on_error": stop}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	id1 := c.send("shell", "execute_request", with("gate\nerror Boom failed", true))
	<-interp.started // the first cell runs; the next two queue behind it
	id2 := c.send("shell", "execute_request", with("print two", true))
	id3 := c.send("shell", "execute_request", with("print three", true))
	waitFor(t, "two queued execute requests", func() bool { return len(tk.k.execQ) == 2 })
	close(interp.gate) // the first cell fails with both queued
	statuses := map[string]string{}
	for range 3 {
		r := c.recv("shell")
		statuses[parentID(r)] = contentMap(t, r)["status"].(string)
	}
	if statuses[id1] != "error" || statuses[id2] != "aborted" || statuses[id3] != "aborted" {
		t.Errorf("statuses %v", statuses)
	}
	for _, id := range []string{id2, id3} {
		if got := types(c.iopubUntilIdle(id)); !reflect.DeepEqual(got, []string{"status", "status"}) {
			t.Errorf("aborted request iopub %v, want busy, idle", got)
		}
	}
	if ran := interp.ran(); len(ran) != 1 {
		t.Errorf("cells run: %q, want only the first", ran)
	}
	// After the abort, new requests run again.
	rep, _ := c.execute("print four", nil)
	if contentMap(t, rep)["status"] != "ok" {
		t.Error("request after the abort did not run")
	}
	<-interp.started

	// stop_on_error false: the queue is not aborted.
	interp.mu.Lock()
	interp.executed = nil
	interp.mu.Unlock()
	interp.gate = make(chan struct{})
	c.send("shell", "execute_request", with("gate\nerror Boom failed", false))
	<-interp.started
	c.send("shell", "execute_request", with("print two", true))
	waitFor(t, "a queued execute request", func() bool { return len(tk.k.execQ) == 1 })
	close(interp.gate)
	for range 2 {
		c.recv("shell")
	}
	<-interp.started
	if ran := interp.ran(); len(ran) != 2 {
		t.Errorf("stop_on_error=false: cells run %q, want both", ran)
	}
}

func TestInterruptAndControlWhileRunning(t *testing.T) {
	interp := &fakeInterp{started: make(chan string, 10)}
	tk := startKernel(t, interp, "secret")
	c := newClient(t, tk, "secret")
	execID := c.send("shell", "execute_request", map[string]any{"code": "block", "silent": false,
		"store_history": true, "user_expressions": map[string]any{}, "allow_stdin": false})
	<-interp.started

	// Control is answered while the cell runs (it blocks until interrupted).
	kid := c.send("control", "kernel_info_request", map[string]any{})
	rep := c.recv("control")
	if rep.header.MsgType != "kernel_info_reply" || parentID(rep) != kid {
		t.Fatalf("control got %s", rep.header.MsgType)
	}
	// So are non-execute shell requests.
	c.send("shell", "is_complete_request", map[string]any{"code": "func f() {"})
	rep = c.recv("shell")
	if cm := contentMap(t, rep); rep.header.MsgType != "is_complete_reply" || cm["status"] != "incomplete" || cm["indent"] != "\t" {
		t.Fatalf("is_complete while running: %s %v", rep.header.MsgType, cm)
	}

	iid := c.send("control", "interrupt_request", map[string]any{})
	rep = c.recv("control")
	if rep.header.MsgType != "interrupt_reply" || parentID(rep) != iid || contentMap(t, rep)["status"] != "ok" {
		t.Fatalf("interrupt: %s %v", rep.header.MsgType, contentMap(t, rep))
	}
	rep = c.recv("shell")
	if rep.header.MsgType != "execute_reply" || parentID(rep) != execID {
		t.Fatalf("got %s, want the blocked cell's execute_reply", rep.header.MsgType)
	}
	// The cell blocks until its context ends: its reply proves the
	// interrupt reached it.
	if cm := contentMap(t, rep); cm["status"] != "error" || cm["ename"] != "Interrupted" {
		t.Errorf("interrupted cell reply %v", cm)
	}
}

func TestBadSignatureDropped(t *testing.T) {
	interp := &fakeInterp{}
	tk := startKernel(t, interp, "secret")
	c := newClient(t, tk, "secret")
	// Signed with the wrong key.
	wrong, _ := newSigner("hmac-sha256", []byte("not-the-key"))
	c.sendRaw("shell", encode(nil, marshal(newHeader("execute_request", "s")), []byte("{}"), []byte("{}"),
		[]byte(`{"code":"print evil"}`), nil, wrong))
	// Missing signature.
	h := marshal(newHeader("execute_request", "s"))
	c.sendRaw("shell", [][]byte{delimiter, {}, h, []byte("{}"), []byte("{}"), []byte(`{"code":"print evil2"}`)})
	// Garbage, no delimiter; and too few frames.
	c.sendRaw("shell", [][]byte{[]byte("PING"), []byte("x")})
	c.sendRaw("shell", [][]byte{delimiter, []byte("sig")})
	c.noMessage("shell", 300*time.Millisecond)
	if ran := interp.ran(); len(ran) != 0 {
		t.Fatalf("executed %q from badly signed messages", ran)
	}
	rep, _ := c.execute("print fine", nil)
	if contentMap(t, rep)["status"] != "ok" {
		t.Error("kernel not working after bad messages")
	}
}

func TestUnknownAndMalformedRequests(t *testing.T) {
	tk := startKernel(t, nil, "secret")
	c := newClient(t, tk, "secret")
	id := c.send("shell", "foo_request", map[string]any{})
	rep := c.recv("shell")
	cm := contentMap(t, rep)
	if rep.header.MsgType != "foo_reply" || parentID(rep) != id || cm["status"] != "error" || cm["ename"] != "UnknownMessageType" {
		t.Errorf("unknown request: %s %v", rep.header.MsgType, cm)
	}
	c.iopubUntilIdle(id)

	// Signed, good header, content not JSON.
	h := newHeader("complete_request", c.session)
	hb := marshal(h)
	c.sendRaw("shell", encode(nil, hb, []byte("{}"), []byte("{}"), []byte("{not json"), nil, c.sg))
	rep = c.recv("shell")
	if cm := contentMap(t, rep); rep.header.MsgType != "complete_reply" || cm["status"] != "error" {
		t.Errorf("malformed content: %s %v", rep.header.MsgType, cm)
	}
	// A handler panic (the fake's Complete panics on "panic") becomes an error reply.
	c.send("shell", "complete_request", map[string]any{"code": "panic", "cursor_pos": 5})
	rep = c.recv("shell")
	if cm := contentMap(t, rep); rep.header.MsgType != "complete_reply" || cm["status"] != "error" || cm["ename"] != "KernelError" {
		t.Errorf("panicking handler: %s %v", rep.header.MsgType, cm)
	}
	// debug_request: an interpreter without a debugger refuses it (see
	// debug_test.go for one with).
	c.send("control", "debug_request", map[string]any{"type": "request", "seq": 1, "command": "initialize"})
	rep = c.recv("control")
	if cm := contentMap(t, rep); rep.header.MsgType != "debug_reply" || cm["status"] != "error" || cm["ename"] != "NotSupported" {
		t.Errorf("debug_request: %s %v", rep.header.MsgType, cm)
	}
	// complete and inspect work.
	c.send("shell", "complete_request", map[string]any{"code": "fmt.Pr", "cursor_pos": 6})
	rep = c.recv("shell")
	if cm := contentMap(t, rep); cm["status"] != "ok" || len(cm["matches"].([]any)) != 2 || cm["cursor_start"] != 4.0 {
		t.Errorf("complete_reply %v", cm)
	}
	c.send("shell", "inspect_request", map[string]any{"code": "fmt", "cursor_pos": 3, "detail_level": 0})
	rep = c.recv("shell")
	if cm := contentMap(t, rep); cm["status"] != "ok" || cm["found"] != true {
		t.Errorf("inspect_reply %v", cm)
	}
}

type recordingHandler struct {
	mu   sync.Mutex
	msgs []map[string]any
	done chan struct{}
}

func (h *recordingHandler) OnMessage(c frontend.Comm, data map[string]any) {
	h.mu.Lock()
	h.msgs = append(h.msgs, data)
	h.mu.Unlock()
	c.Send(map[string]any{"echo": data["x"]}, nil)
}

func (h *recordingHandler) OnClose(c frontend.Comm, data map[string]any) { close(h.done) }

func TestComms(t *testing.T) {
	interp := &fakeInterp{}
	tk := startKernel(t, interp, "secret")
	c := newClient(t, tk, "secret")
	h := &recordingHandler{done: make(chan struct{})}
	var openData map[string]any
	interp.comms.RegisterTarget("echo", func(cm frontend.Comm, data map[string]any) (frontend.CommHandler, error) {
		openData = data
		return h, nil
	})

	// Unknown target: the kernel closes the comm.
	id := c.send("shell", "comm_open", map[string]any{"comm_id": "c-unknown", "target_name": "nope", "data": map[string]any{}})
	msgs := c.iopubUntilIdle(id)
	if got := types(msgs); !reflect.DeepEqual(got, []string{"status", "comm_close", "status"}) {
		t.Fatalf("comm_open to unknown target: %v", got)
	}
	if cm := contentMap(t, msgs[1]); cm["comm_id"] != "c-unknown" {
		t.Errorf("comm_close %v", cm)
	}

	c.send("shell", "comm_open", map[string]any{"comm_id": "c1", "target_name": "echo", "data": map[string]any{"a": 1}})
	id = c.send("shell", "comm_msg", map[string]any{"comm_id": "c1", "data": map[string]any{"x": "hi"}})
	msgs = c.iopubUntilIdle(id)
	if got := types(msgs); !reflect.DeepEqual(got, []string{"status", "comm_msg", "status"}) {
		t.Fatalf("comm_msg: %v", got)
	}
	if d := contentMap(t, msgs[1])["data"].(map[string]any); d["echo"] != "hi" {
		t.Errorf("echo %v", d)
	}
	if openData["a"] != 1.0 {
		t.Errorf("opener data %v", openData)
	}

	c.send("shell", "comm_info_request", map[string]any{"target_name": "echo"})
	rep := c.recv("shell")
	comms := contentMap(t, rep)["comms"].(map[string]any)
	if len(comms) != 1 || comms["c1"].(map[string]any)["target_name"] != "echo" {
		t.Errorf("comm_info %v", comms)
	}
	c.send("shell", "comm_info_request", map[string]any{"target_name": "other"})
	if comms := contentMap(t, c.recv("shell"))["comms"].(map[string]any); len(comms) != 0 {
		t.Errorf("comm_info filtered %v", comms)
	}

	c.send("shell", "comm_close", map[string]any{"comm_id": "c1", "data": map[string]any{}})
	select {
	case <-h.done:
	case <-time.After(patience):
		t.Fatal("OnClose not called")
	}

	// A cell opens a comm from the kernel side.
	_, msgs = c.execute("commopen kside", nil)
	found := false
	for _, m := range msgs {
		if m.header.MsgType == "comm_open" {
			cm := contentMap(t, m)
			found = cm["target_name"] == "kside" && cm["data"].(map[string]any)["hello"] == "frontend"
		}
	}
	if !found {
		t.Errorf("no comm_open from the kernel side in %v", types(msgs))
	}
}

func TestStdinRoundTrip(t *testing.T) {
	tk := startKernel(t, nil, "secret")
	c := newClient(t, tk, "secret")
	id := c.send("shell", "execute_request", map[string]any{"code": "password secret?", "silent": false,
		"store_history": true, "user_expressions": map[string]any{}, "allow_stdin": true})
	req := c.recv("stdin")
	cm := contentMap(t, req)
	if req.header.MsgType != "input_request" || parentID(req) != id || cm["prompt"] != "secret?" || cm["password"] != true {
		t.Fatalf("input_request %s %v parent %s", req.header.MsgType, cm, parentID(req))
	}
	c.send("stdin", "input_reply", map[string]any{"value": "hunter2"})
	rep := c.recv("shell")
	if contentMap(t, rep)["status"] != "ok" {
		t.Fatal(contentMap(t, rep))
	}
	var text string
	for _, m := range c.iopubUntilIdle(id) {
		if m.header.MsgType == "stream" {
			text += contentMap(t, m)["text"].(string)
		}
	}
	if text != "got: hunter2\n" {
		t.Errorf("cell printed %q", text)
	}

	// allow_stdin false: the interpreter gets ErrStdinNotAllowed, no request goes out.
	_, msgs := c.execute("input name?", nil)
	text = ""
	for _, m := range msgs {
		if m.header.MsgType == "stream" {
			text += contentMap(t, m)["text"].(string)
		}
	}
	if text != "input error: "+frontend.ErrStdinNotAllowed.Error()+"\n" {
		t.Errorf("allow_stdin=false: %q", text)
	}
	c.noMessage("stdin", 50*time.Millisecond)

	// Interrupt while waiting for input ends the cell (no input_reply
	// ever comes: only the interrupt can end the wait).
	id = c.send("shell", "execute_request", map[string]any{"code": "input never", "allow_stdin": true})
	c.recv("stdin")
	c.send("control", "interrupt_request", map[string]any{})
	c.recv("control")
	rep = c.recv("shell")
	if parentID(rep) != id {
		t.Fatal("wrong reply")
	}
	var text2 string
	for _, m := range c.iopubUntilIdle(id) {
		if m.header.MsgType == "stream" {
			text2 += contentMap(t, m)["text"].(string)
		}
	}
	if !strings.HasPrefix(text2, "input error: ") {
		t.Errorf("interrupted input: the cell printed %q, want an input error", text2)
	}
}

func TestShutdown(t *testing.T) {
	interp := &fakeInterp{}
	tk := startKernel(t, interp, "secret")
	c := newClient(t, tk, "secret")
	id := c.send("control", "shutdown_request", map[string]any{"restart": true})
	rep := c.recv("control")
	if cm := contentMap(t, rep); rep.header.MsgType != "shutdown_reply" || cm["status"] != "ok" || cm["restart"] != true || parentID(rep) != id {
		t.Fatalf("shutdown_reply %s %v", rep.header.MsgType, cm)
	}
	got := types(c.iopubUntilIdle(id))
	if !reflect.DeepEqual(got, []string{"status", "shutdown_reply", "status"}) {
		t.Errorf("iopub on shutdown %v", got)
	}
	select {
	case err := <-tk.done:
		if err != nil {
			t.Errorf("Run returned %v after shutdown_request", err)
		}
	case <-time.After(patience):
		t.Fatal("Run did not return after shutdown_request")
	}
	if !interp.closed.Load() {
		t.Error("interpreter not closed")
	}
	tk.done <- nil // for the cleanup
}

func TestShutdownOnShellWhileRunning(t *testing.T) {
	interp := &fakeInterp{started: make(chan string, 1)}
	tk := startKernel(t, interp, "")
	c := newClient(t, tk, "")
	c.send("shell", "execute_request", map[string]any{"code": "block"})
	<-interp.started
	c.send("shell", "shutdown_request", map[string]any{"restart": false})
	for {
		rep := c.recv("shell")
		if rep.header.MsgType == "shutdown_reply" {
			break
		}
	}
	select {
	case <-tk.done:
	case <-time.After(patience):
		t.Fatal("Run did not return")
	}
	tk.done <- nil
}

func TestHistoryRequest(t *testing.T) {
	tk := startKernel(t, nil, "secret")
	c := newClient(t, tk, "secret")
	for _, code := range []string{"result 1", "result 2", "print x"} {
		c.execute(code, nil)
	}
	c.send("shell", "history_request", map[string]any{"output": true, "raw": true, "hist_access_type": "tail", "n": 2})
	h := contentMap(t, c.recv("shell"))["history"].([]any)
	if len(h) != 2 {
		t.Fatalf("tail %v", h)
	}
	e := h[0].([]any)
	io := e[2].([]any)
	if e[1] != 2.0 || io[0] != "result 2" || io[1] != "2" {
		t.Errorf("tail entry %v", e)
	}
	if h[1].([]any)[2].([]any)[1] != nil {
		t.Errorf("no-output entry %v", h[1])
	}
	c.send("shell", "history_request", map[string]any{"output": false, "raw": true, "hist_access_type": "search", "pattern": "result*"})
	if h := contentMap(t, c.recv("shell"))["history"].([]any); len(h) != 2 {
		t.Errorf("search %v", h)
	}
	c.send("shell", "history_request", map[string]any{"output": false, "raw": true, "hist_access_type": "bogus"})
	if cm := contentMap(t, c.recv("shell")); cm["status"] != "error" {
		t.Errorf("bogus access type %v", cm)
	}
}

// A subscriber that never reads is disconnected; the others get everything.
// peerEnqueueWait keeps its default (5 s): the live subscriber must never be
// taken for a stalled one, and on a busy machine its reader may pause for
// longer than a shortened wait.
func TestStalledSubscriber(t *testing.T) {
	tk := startKernel(t, nil, "")
	c := newClient(t, tk, "")

	nc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", tk.k.ConnectionInfo().IOPubPort))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	zc, err := zmq4.Open(nc, null.Security(), zmq4.Sub, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := zc.SendMsg(zmq4.NewMsg([]byte{1})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stalled subscriber's subscription", func() bool { return tk.k.iopub.subscribers() >= 2 })
	if tk.k.iopub.subscribers() != 2 {
		t.Fatal("stalled subscriber not subscribed")
	}
	start := time.Now()
	const n = 600 // 600 × 64 KiB: more than the queue and socket buffers hold
	_, msgs := c.execute(fmt.Sprintf("big %d", n), nil)
	displays := 0
	for _, m := range msgs {
		if m.header.MsgType == "display_data" {
			displays++
		}
	}
	if displays != n {
		t.Errorf("live subscriber got %d of %d displays", displays, n)
	}
	if got := tk.k.iopub.subscribers(); got != 1 {
		t.Errorf("%d subscribers after the stall, want 1 (stalled one disconnected)", got)
	}
	t.Logf("%d × 64 KiB with a stalled subscriber: %v", n, time.Since(start))
}
