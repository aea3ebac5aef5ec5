package comm

import (
	"errors"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/frontend"
)

type fakeComm struct {
	sent   []map[string]any
	closed bool
}

func (f *fakeComm) ID() string                              { return "c1" }
func (f *fakeComm) Target() string                          { return "echo" }
func (f *fakeComm) Send(d map[string]any, _ map[string]any) { f.sent = append(f.sent, d) }
func (f *fakeComm) Close(map[string]any)                    { f.closed = true }

type fakeRegistry struct {
	openers map[string]frontend.CommOpener
}

func (r *fakeRegistry) RegisterTarget(t string, o frontend.CommOpener) { r.openers[t] = o }
func (r *fakeRegistry) UnregisterTarget(t string)                      { delete(r.openers, t) }
func (r *fakeRegistry) Open(string, map[string]any, map[string]any) (frontend.Comm, error) {
	return nil, errors.New("unused")
}

func TestWithoutKernelRegisterFailsClearly(t *testing.T) {
	SetRegistry(nil)
	err := RegisterTarget("x", func(*Comm, map[string]any) {})
	if err == nil || !strings.Contains(err.Error(), "not running inside a goaccel kernel") {
		t.Fatalf("err = %v", err)
	}
}

func TestEchoTarget(t *testing.T) {
	reg := &fakeRegistry{openers: map[string]frontend.CommOpener{}}
	SetRegistry(reg)
	defer SetRegistry(nil)
	var closedWith map[string]any
	err := RegisterTarget("echo", func(c *Comm, data map[string]any) {
		c.OnMessage(func(d map[string]any) { c.Send(d) })
		c.OnClose(func(d map[string]any) { closedWith = d })
	})
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeComm{}
	h, err := reg.openers["echo"](fc, map[string]any{"hello": 1})
	if err != nil {
		t.Fatal(err)
	}
	h.OnMessage(fc, map[string]any{"ping": 2})
	if len(fc.sent) != 1 || fc.sent[0]["ping"] != 2 {
		t.Fatalf("sent = %v", fc.sent)
	}
	h.OnClose(fc, map[string]any{"bye": true})
	if closedWith["bye"] != true {
		t.Fatalf("close data = %v", closedWith)
	}
	if err := RegisterTarget("", func(*Comm, map[string]any) {}); err == nil {
		t.Fatal("empty target accepted")
	}
	if err := UnregisterTarget("echo"); err != nil || reg.openers["echo"] != nil {
		t.Fatalf("unregister: %v", err)
	}
}
