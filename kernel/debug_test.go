package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// debugInterp is a fake interpreter with a debugger: it answers each DAP
// request with a response echoing the command, an "initialized" event after
// attach, and sends a "stopped" event later (as a breakpoint would) when
// asked by a "stopSoon" request: once the test closes later.
type debugInterp struct {
	*fakeInterp
	mu      sync.Mutex
	publish func(json.RawMessage)
	seen    []string
	later   chan struct{}
}

func (d *debugInterp) SetDebugEvents(publish func(json.RawMessage)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.publish = publish
}

func (d *debugInterp) HandleDebug(ctx context.Context, request json.RawMessage) (json.RawMessage, []json.RawMessage) {
	var req struct {
		Seq     int    `json:"seq"`
		Command string `json:"command"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		panic(err)
	}
	d.mu.Lock()
	d.seen = append(d.seen, req.Command)
	publish := d.publish
	d.mu.Unlock()
	resp := json.RawMessage(fmt.Sprintf(`{"seq":%d,"type":"response","request_seq":%d,"command":%q,"success":true,"body":{}}`, 100+req.Seq, req.Seq, req.Command))
	var events []json.RawMessage
	switch req.Command {
	case "attach":
		events = append(events, json.RawMessage(`{"seq":1,"type":"event","event":"initialized","body":{}}`))
	case "stopSoon":
		go func() {
			<-d.later
			publish(json.RawMessage(`{"seq":2,"type":"event","event":"stopped","body":{"reason":"breakpoint","threadId":1}}`))
		}()
	}
	return resp, events
}

func TestDebugRequestsOnTheControlChannel(t *testing.T) {
	fake := &fakeInterp{}
	d := &debugInterp{fakeInterp: fake, later: make(chan struct{})}
	tk := startKernelWith(t, d, fake, "secret")
	c := newClient(t, tk, "secret")

	id := c.send("shell", "kernel_info_request", map[string]any{})
	rep := c.recv("shell")
	cm := contentMap(t, rep)
	if cm["debugger"] != true || fmt.Sprint(cm["supported_features"]) != "[debugger]" {
		t.Errorf("kernel_info_reply: debugger %v, supported_features %v", cm["debugger"], cm["supported_features"])
	}
	c.iopubUntilIdle(id)

	// The reply is the debugger's response; its events follow on IOPub, with
	// the request as parent, between busy and idle.
	id = c.send("control", "debug_request", map[string]any{"type": "request", "seq": 7, "command": "attach", "arguments": map[string]any{}})
	rep = c.recv("control")
	cm = contentMap(t, rep)
	if rep.header.MsgType != "debug_reply" || parentID(rep) != id || cm["command"] != "attach" || cm["request_seq"] != 7.0 || cm["success"] != true {
		t.Errorf("debug_reply: %s %v", rep.header.MsgType, cm)
	}
	msgs := c.iopubUntilIdle(id)
	if got := types(msgs); fmt.Sprint(got) != "[status debug_event status]" {
		t.Fatalf("iopub for debug_request: %v", got)
	}
	if ev := contentMap(t, msgs[1]); ev["event"] != "initialized" || ev["type"] != "event" {
		t.Errorf("debug_event: %v", ev)
	}

	// An event the debugger sends later is published with the latest
	// debug_request as parent.
	id = c.send("control", "debug_request", map[string]any{"type": "request", "seq": 8, "command": "stopSoon"})
	c.recv("control")
	c.iopubUntilIdle(id)
	close(d.later) // the stop comes after the request's idle
	deadline := time.After(patience)
	for {
		select {
		case m := <-c.ch["iopub"]:
			if m.header.MsgType != "debug_event" {
				continue
			}
			if ev := contentMap(t, m); ev["event"] != "stopped" || parentID(m) != id {
				t.Errorf("late debug_event: %v (parent %s, want %s)", ev, parentID(m), id)
			}
			return
		case <-deadline:
			t.Fatalf("no debug_event for the stop within %v", patience)
		}
	}
}

func TestDebugRequestWithBadContent(t *testing.T) {
	fake := &fakeInterp{}
	d := &debugInterp{fakeInterp: fake}
	tk := startKernelWith(t, d, fake, "secret")
	c := newClient(t, tk, "secret")
	h := newHeader("debug_request", c.session)
	c.sendRaw("control", encode(nil, marshal(h), []byte("{}"), []byte("{}"), []byte("[not json"), nil, c.sg))
	rep := c.recv("control")
	if cm := contentMap(t, rep); rep.header.MsgType != "debug_reply" || cm["status"] != "error" {
		t.Errorf("bad debug_request: %s %v", rep.header.MsgType, cm)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.seen) != 0 {
		t.Errorf("the debugger saw %v", d.seen)
	}
}
