package kernel

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/goaccel/goaccel/frontend"
)

// commRegistry implements frontend.Comms: targets cells register, and the
// open comms of either side.
type commRegistry struct {
	k       *Kernel
	mu      sync.Mutex
	targets map[string]frontend.CommOpener
	comms   map[string]*comm
}

var _ frontend.Comms = (*commRegistry)(nil)

func newCommRegistry(k *Kernel) *commRegistry {
	return &commRegistry{k: k, targets: map[string]frontend.CommOpener{}, comms: map[string]*comm{}}
}

// comm is one open comm. Its frontend.Comm methods publish on IOPub.
type comm struct {
	r      *commRegistry
	id     string
	target string
	mu     sync.Mutex
	h      frontend.CommHandler
	closed atomic.Bool
}

var (
	_ frontend.Comm              = (*comm)(nil)
	_ frontend.CommHandlerSetter = (*comm)(nil)
)

func (c *comm) ID() string     { return c.id }
func (c *comm) Target() string { return c.target }

// SetHandler implements frontend.CommHandlerSetter: the frontend's later
// messages on a comm the kernel opened go to h.
func (c *comm) SetHandler(h frontend.CommHandler) {
	c.mu.Lock()
	c.h = h
	c.mu.Unlock()
}

func (c *comm) handler() frontend.CommHandler {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.h
}

// Send implements frontend.Comm.
func (c *comm) Send(data map[string]any, metadata map[string]any) {
	if c.closed.Load() {
		c.r.k.log.WithField("comm_id", c.id).Warn("comm_msg on a closed comm dropped")
		return
	}
	c.r.publish("comm_msg", map[string]any{"comm_id": c.id, "data": orEmpty(data)}, metadata)
}

// Close implements frontend.Comm.
func (c *comm) Close(data map[string]any) {
	if c.closed.Swap(true) {
		return
	}
	c.r.forget(c.id)
	c.r.publish("comm_close", map[string]any{"comm_id": c.id, "data": orEmpty(data)}, nil)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// publish sends a comm message after the running cell's pending output,
// with the request being handled (or the running cell) as parent.
func (r *commRegistry) publish(msgType string, content, metadata map[string]any) {
	if io := r.k.activeIO.Load(); io != nil {
		io.flush()
	}
	var md any
	if metadata != nil {
		md = metadata
	}
	r.k.publish(msgType, r.k.commParent.Load(), content, md)
}

// parentFor makes m the parent of comm messages while a comm handler runs
// and returns the function that restores the previous parent (the running
// cell's request, usually).
func (r *commRegistry) parentFor(m *message) func() {
	prev := r.k.commParent.Swap(m)
	return func() { r.k.commParent.CompareAndSwap(m, prev) }
}

func (r *commRegistry) forget(id string) {
	r.mu.Lock()
	delete(r.comms, id)
	r.mu.Unlock()
}

func (r *commRegistry) lookup(id string) *comm {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.comms[id]
}

// RegisterTarget implements frontend.Comms.
func (r *commRegistry) RegisterTarget(target string, open frontend.CommOpener) {
	r.mu.Lock()
	r.targets[target] = open
	r.mu.Unlock()
}

// UnregisterTarget implements frontend.Comms.
func (r *commRegistry) UnregisterTarget(target string) {
	r.mu.Lock()
	delete(r.targets, target)
	r.mu.Unlock()
}

// Open implements frontend.Comms: comm_open on IOPub.
func (r *commRegistry) Open(target string, data map[string]any, metadata map[string]any) (frontend.Comm, error) {
	if target == "" {
		return nil, errors.New("comm: empty target name")
	}
	c := &comm{r: r, id: uuid.NewString(), target: target}
	r.mu.Lock()
	r.comms[c.id] = c
	r.mu.Unlock()
	r.publish("comm_open", map[string]any{"comm_id": c.id, "target_name": target, "data": orEmpty(data)}, metadata)
	return c, nil
}

type commContent struct {
	CommID     string         `json:"comm_id"`
	TargetName string         `json:"target_name"`
	Data       map[string]any `json:"data"`
}

func (r *commRegistry) handleOpen(ctx context.Context, req *request) {
	var cc commContent
	if err := decodeContent(req, &cc); err != nil || cc.CommID == "" {
		r.k.log.WithError(err).Warn("malformed comm_open dropped")
		return
	}
	defer r.parentFor(req.msg)()
	r.mu.Lock()
	open := r.targets[cc.TargetName]
	r.mu.Unlock()
	c := &comm{r: r, id: cc.CommID, target: cc.TargetName}
	refuse := func(why string) {
		r.k.log.WithFields(map[string]any{"comm_id": cc.CommID, "target_name": cc.TargetName}).Warn("comm_open refused: " + why)
		c.closed.Store(true)
		r.publish("comm_close", map[string]any{"comm_id": cc.CommID, "data": map[string]any{}}, nil)
	}
	if open == nil {
		refuse("no such comm target")
		return
	}
	r.mu.Lock()
	r.comms[c.id] = c
	r.mu.Unlock()
	h, err := callOpener(open, c, orEmpty(cc.Data))
	if err != nil {
		r.forget(c.id)
		refuse(err.Error())
		return
	}
	c.SetHandler(h)
}

func callOpener(open frontend.CommOpener, c *comm, data map[string]any) (h frontend.CommHandler, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("comm opener panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return open(c, data)
}

func (r *commRegistry) handleMsg(ctx context.Context, req *request) {
	var cc commContent
	if err := decodeContent(req, &cc); err != nil {
		r.k.log.WithError(err).Warn("malformed comm_msg dropped")
		return
	}
	c := r.lookup(cc.CommID)
	if c == nil {
		r.k.log.WithField("comm_id", cc.CommID).Warn("comm_msg for an unknown comm dropped")
		return
	}
	defer r.parentFor(req.msg)()
	if h := c.handler(); h != nil {
		h.OnMessage(c, orEmpty(cc.Data))
	}
}

func (r *commRegistry) handleClose(ctx context.Context, req *request) {
	var cc commContent
	if err := decodeContent(req, &cc); err != nil {
		r.k.log.WithError(err).Warn("malformed comm_close dropped")
		return
	}
	c := r.lookup(cc.CommID)
	if c == nil {
		r.k.log.WithField("comm_id", cc.CommID).Debug("comm_close for an unknown comm")
		return
	}
	c.closed.Store(true)
	r.forget(c.id)
	defer r.parentFor(req.msg)()
	if h := c.handler(); h != nil {
		h.OnClose(c, orEmpty(cc.Data))
	}
}

func (r *commRegistry) handleInfo(ctx context.Context, req *request) {
	var c struct {
		TargetName string `json:"target_name"`
	}
	if err := decodeContent(req, &c); err != nil {
		r.k.replyError(req, "BadRequest", err.Error())
		return
	}
	out := map[string]any{}
	r.mu.Lock()
	for id, cm := range r.comms {
		if c.TargetName == "" || cm.target == c.TargetName {
			out[id] = map[string]any{"target_name": cm.target}
		}
	}
	r.mu.Unlock()
	r.k.reply(req, "comm_info_reply", map[string]any{"status": "ok", "comms": out})
}
