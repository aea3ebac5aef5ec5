package gonb

import (
	_ "embed"
	"strings"
	"sync"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

// CommTarget is the target of the comm the browser opens for gonbui.
const CommTarget = "gonb_comm"

// Addresses of the protocol between the kernel and the browser.
const (
	openAckAddress = "#comm_open_ack"
	pingAddress    = "#heartbeat/ping"
	pongAddress    = "#heartbeat/pong"
)

//go:embed frontend.js
var frontendJS string

// FrontendJS is the HTML that installs the browser's end of gonbui's comms
// (globalThis.gonb_comm) for the kernel with the given id: a script that
// connects to the Jupyter server and opens a "gonb_comm" comm.
func FrontendJS(kernelID string) string {
	return "<script>\n" + strings.ReplaceAll(frontendJS, "{{KERNEL_ID}}", kernelID) + "</script>"
}

// Front is the kernel's end of the browser's "gonb_comm" comm: values the
// cells send (comms.Send, widgets) go to the browser, values the browser
// sends to an address the cells subscribed to go to the cells (through
// toCells, Server.Send). Until a browser connects, what the cells send
// waits, and is delivered when one does.
type Front struct {
	toCells func(address string, value any)

	mu        sync.Mutex
	comm      frontend.Comm
	subs      map[string]int
	queue     []map[string]any
	connected chan struct{}
	pong      chan struct{}
}

// NewFront returns a Front that delivers the browser's values with
// toCells.
func NewFront(toCells func(address string, value any)) *Front {
	return &Front{toCells: toCells, subs: map[string]int{}, connected: make(chan struct{}), pong: make(chan struct{}, 1)}
}

// Open is the CommOpener of target CommTarget.
func (f *Front) Open(c frontend.Comm, _ map[string]any) (frontend.CommHandler, error) {
	f.mu.Lock()
	old := f.comm
	f.comm = c
	queue := f.queue
	f.queue = nil
	select {
	case <-f.connected:
	default:
		close(f.connected)
	}
	f.mu.Unlock()
	if old != nil && old.ID() != c.ID() {
		old.Close(nil) // a reloaded page: the newest connection wins
	}
	c.Send(map[string]any{"address": openAckAddress, "value": true}, nil)
	for _, m := range queue {
		c.Send(m, nil)
	}
	return f, nil
}

// OnMessage handles a comm_msg from the browser.
func (f *Front) OnMessage(_ frontend.Comm, data map[string]any) {
	address, _ := data["address"].(string)
	switch address {
	case "":
		return
	case pingAddress:
		f.send(map[string]any{"address": pongAddress, "value": true})
		return
	case pongAddress:
		select {
		case f.pong <- struct{}{}:
		default:
		}
		return
	}
	f.mu.Lock()
	subscribed := f.subs[address] > 0
	f.mu.Unlock()
	if subscribed {
		f.toCells(address, data["value"])
	}
}

// OnClose forgets a comm the browser closed.
func (f *Front) OnClose(c frontend.Comm, _ map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.comm != nil && f.comm.ID() == c.ID() {
		f.comm = nil
		f.connected = make(chan struct{})
	}
}

// Connected reports whether a browser holds the comm.
func (f *Front) Connected() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.comm != nil
}

// WaitConnected waits up to timeout for a browser to connect.
func (f *Front) WaitConnected(timeout time.Duration) bool {
	f.mu.Lock()
	ch := f.connected
	f.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Heartbeat pings the browser and waits up to timeout for its answer.
func (f *Front) Heartbeat(timeout time.Duration) bool {
	select {
	case <-f.pong:
	default:
	}
	if !f.Connected() {
		return false
	}
	f.send(map[string]any{"address": pingAddress, "value": true})
	select {
	case <-f.pong:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Value sends a cell's value for address to the browser (comms.Send), or
// with request asks the browser for the value at address
// (comms.ReadValue).
func (f *Front) Value(address string, value any, request bool) {
	if request {
		f.send(map[string]any{"address": address, "read_request": true})
		return
	}
	f.send(map[string]any{"address": address, "value": value})
}

// Subscribe counts the cells' subscriptions to address: values the
// browser sends there reach the cells while there is one.
func (f *Front) Subscribe(address string, unsubscribe bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if unsubscribe {
		if f.subs[address]--; f.subs[address] <= 0 {
			delete(f.subs, address)
		}
		return
	}
	f.subs[address]++
}

// send sends data on the comm, or queues it until a browser connects.
func (f *Front) send(data map[string]any) {
	f.mu.Lock()
	c := f.comm
	if c == nil {
		if len(f.queue) < 10000 {
			f.queue = append(f.queue, data)
		}
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	c.Send(data, nil)
}
