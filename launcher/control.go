package launcher

import (
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

// The control connection between the launcher of node 0 and a node agent
// (`goaccel node`). The agent dials the coordinator address the round
// names and proves the launch secret (package pg's handshake, label
// ctlLabel); then both sides exchange JSON lines (ctlMsg):
//
//	agent → launcher   hello {round, node}
//	launcher → agent   start {the payload and everything the workers need}
//	agent → launcher   stream, display, update, clear   (worker output, prefixed)
//	agent → launcher   exit {rank, result | failure, stopped}   one per worker
//	launcher → agent   stop {interrupt}
//	agent → launcher   done                              every worker reaped
//	either             error {err}                       and the connection closes
//
// The connection is authenticated, not encrypted: it carries the payload
// (the notebook's declarations and global values) in clear, as the process
// group's links carry tensors.
const ctlLabel = "agent"

// Message types of the control connection.
const (
	ctlHello   = "hello"
	ctlStart   = "start"
	ctlStream  = "stream"
	ctlDisplay = "display"
	ctlUpdate  = "update"
	ctlClear   = "clear"
	ctlExit    = "exit"
	ctlStop    = "stop"
	ctlDone    = "done"
	ctlError   = "error"
)

// ctlMsg is one line on the control connection.
type ctlMsg struct {
	T string `json:"t"`
	// hello
	Round int64 `json:"round,omitempty"`
	Node  int   `json:"node"`
	// start
	Start *startMsg `json:"start,omitempty"`
	// stream, display, update, clear
	Name     string              `json:"name,omitempty"`
	Text     string              `json:"text,omitempty"`
	Data     frontend.MIMEBundle `json:"data,omitempty"`
	Metadata map[string]any      `json:"meta,omitempty"`
	ID       string              `json:"id,omitempty"`
	Wait     bool                `json:"wait,omitempty"`
	// exit
	Rank    int               `json:"rank"`
	Result  []byte            `json:"result,omitempty"`
	Failure *ChildFailedError `json:"failure,omitempty"`
	// Stopped: the worker exited after the agent was told to stop.
	Stopped bool `json:"stopped,omitempty"`
	// stop
	Interrupt bool `json:"interrupt,omitempty"`
	// error
	Err string `json:"err,omitempty"`
}

// startMsg is what a node agent needs to start its workers: what a local
// launch has in its Options and topology.
type startMsg struct {
	Mode     string `json:"mode"`
	Restart  int    `json:"restart"`
	Payload  []byte `json:"payload,omitempty"`
	World    int    `json:"world"`
	RankBase int    `json:"rank_base"`
	NodeRank int    `json:"node_rank"`
	NumNodes int    `json:"num_nodes"`
	NProc    int    `json:"nproc"`
	// Store is host:port of the process group's store.
	Store    string `json:"store"`
	LaunchID string `json:"launch_id"`

	RdzvBackend     string            `json:"rdzv_backend"`
	RdzvID          string            `json:"rdzv_id"`
	RdzvConf        map[string]string `json:"rdzv_conf,omitempty"`
	MixedPrecision  string            `json:"mixed_precision"`
	MaxRestarts     int               `json:"max_restarts"`
	MonitorInterval time.Duration     `json:"monitor_interval"`
	Prefix          string            `json:"prefix,omitempty"`
	UseCPU          bool              `json:"use_cpu,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
}

// ctlWriteTimeout bounds one write on the control connection: a peer that
// stopped reading is a lost peer.
const ctlWriteTimeout = 10 * time.Second

// ctlConn is one end of a control connection. send is safe for concurrent
// use; recv is for one reader.
type ctlConn struct {
	conn net.Conn
	dec  *json.Decoder

	mu  sync.Mutex
	enc *json.Encoder
	err error
}

func newCtlConn(c net.Conn) *ctlConn {
	if tc, ok := c.(*net.TCPConn); ok {
		// A host that vanishes without closing its connections is noticed
		// within ~15 s even where no rendezvous lease is watched.
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 5})
	}
	return &ctlConn{conn: c, dec: json.NewDecoder(c), enc: json.NewEncoder(c)}
}

func (c *ctlConn) send(m ctlMsg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	_ = c.conn.SetWriteDeadline(time.Now().Add(ctlWriteTimeout))
	if err := c.enc.Encode(m); err != nil {
		c.err = fmt.Errorf("sending %s: %w", m.T, err)
	}
	return c.err
}

// recv reads the next message; timeout > 0 bounds the wait.
func (c *ctlConn) recv(timeout time.Duration) (ctlMsg, error) {
	var m ctlMsg
	if timeout > 0 {
		_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
		defer c.conn.SetReadDeadline(time.Time{})
	}
	err := c.dec.Decode(&m)
	return m, err
}

func (c *ctlConn) close() error { return c.conn.Close() }

// ctlPublisher is the Publisher of a node agent's workers: their output
// travels to the launcher, which shows it in the cell.
type ctlPublisher struct{ c *ctlConn }

func (p ctlPublisher) Stream(name, text string) {
	_ = p.c.send(ctlMsg{T: ctlStream, Name: name, Text: text})
}

func (p ctlPublisher) Display(data frontend.MIMEBundle, metadata map[string]any, id string) {
	_ = p.c.send(ctlMsg{T: ctlDisplay, Data: data, Metadata: metadata, ID: id})
}

func (p ctlPublisher) UpdateDisplay(data frontend.MIMEBundle, metadata map[string]any, id string) {
	_ = p.c.send(ctlMsg{T: ctlUpdate, Data: data, Metadata: metadata, ID: id})
}

func (p ctlPublisher) ClearOutput(wait bool) { _ = p.c.send(ctlMsg{T: ctlClear, Wait: wait}) }

// republish shows an agent's output message in the cell; it reports
// whether m was output.
func republish(pub frontend.Publisher, m ctlMsg) bool {
	switch m.T {
	case ctlStream:
		pub.Stream(m.Name, m.Text)
	case ctlDisplay:
		pub.Display(m.Data, m.Metadata, m.ID)
	case ctlUpdate:
		pub.UpdateDisplay(m.Data, m.Metadata, m.ID)
	case ctlClear:
		pub.ClearOutput(m.Wait)
	default:
		return false
	}
	return true
}
