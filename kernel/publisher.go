package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/goaccel/goaccel/frontend"
)

// Stream coalescing: text written by a cell is buffered and sent as one
// stream message when flushDelay has passed since the first unsent write,
// when flushSize bytes are pending, when the stream name changes, before
// any other IOPub message of the cell, and when the cell ends.
const (
	flushDelay = 5 * time.Millisecond
	flushSize  = 64 << 10
)

// cellIO is the frontend.CellIO of one execute request: IOPub output with
// that request as parent, and stdin input_requests to its frontend. It stays
// usable after the cell ends (goroutines the cell started may still write);
// Input then fails because ctx, the cell's context, has ended.
type cellIO struct {
	k          *Kernel
	parent     *message
	allowStdin bool
	ctx        context.Context

	mu    sync.Mutex
	name  string // stream of buf
	buf   []byte
	timer *time.Timer
	armed bool
}

var _ frontend.CellIO = (*cellIO)(nil)

func newCellIO(k *Kernel, parent *message, allowStdin bool, ctx context.Context) *cellIO {
	return &cellIO{k: k, parent: parent, allowStdin: allowStdin, ctx: ctx}
}

// Stream implements frontend.Publisher.
func (c *cellIO) Stream(name, text string) {
	if text == "" {
		return
	}
	if name != "stderr" {
		name = "stdout"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) > 0 && c.name != name {
		c.flushLocked(true)
	}
	c.name = name
	c.buf = append(c.buf, text...)
	if len(c.buf) >= flushSize {
		c.flushLocked(false)
		return
	}
	if !c.armed && len(c.buf) > 0 {
		c.armed = true
		if c.timer == nil {
			c.timer = time.AfterFunc(flushDelay, c.timedFlush)
		} else {
			c.timer.Reset(flushDelay)
		}
	}
}

// flush sends pending stream text.
func (c *cellIO) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked(true)
}

func (c *cellIO) timedFlush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked(false)
}

// flushLocked sends the buffer. Unless all, an incomplete UTF-8 sequence at
// its end is kept for the next write (a rune split across two writes).
func (c *cellIO) flushLocked(all bool) {
	if c.armed {
		c.timer.Stop()
		c.armed = false
	}
	if len(c.buf) == 0 {
		return
	}
	n := len(c.buf)
	if !all {
		n = completeUTF8Prefix(c.buf)
		if n == 0 {
			return
		}
	}
	text := string(c.buf[:n])
	rest := copy(c.buf, c.buf[n:])
	c.buf = c.buf[:rest]
	if cap(c.buf) > 4*flushSize {
		c.buf = append([]byte(nil), c.buf...)
	}
	c.k.publish("stream", c.parent, map[string]any{"name": c.name, "text": text}, nil)
}

// completeUTF8Prefix is the length of b without a trailing incomplete rune.
func completeUTF8Prefix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// publish sends a non-stream message after the pending stream text.
func (c *cellIO) publish(msgType string, content any, metadata any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flushLocked(true)
	c.k.publish(msgType, c.parent, content, metadata)
}

func displayContent(data frontend.MIMEBundle, metadata map[string]any, displayID string) map[string]any {
	if data == nil {
		data = frontend.MIMEBundle{}
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	transient := map[string]any{}
	if displayID != "" {
		transient["display_id"] = displayID
	}
	return map[string]any{"data": data, "metadata": metadata, "transient": transient}
}

// Display implements frontend.Publisher.
func (c *cellIO) Display(data frontend.MIMEBundle, metadata map[string]any, displayID string) {
	c.publish("display_data", displayContent(data, metadata, displayID), nil)
}

// UpdateDisplay implements frontend.Publisher.
func (c *cellIO) UpdateDisplay(data frontend.MIMEBundle, metadata map[string]any, displayID string) {
	if displayID == "" {
		c.k.log.Warn("update_display_data without a display id dropped")
		return
	}
	c.publish("update_display_data", displayContent(data, metadata, displayID), nil)
}

// ClearOutput implements frontend.Publisher.
func (c *cellIO) ClearOutput(wait bool) {
	c.publish("clear_output", map[string]any{"wait": wait}, nil)
}

// Input implements frontend.CellIO: an input_request on stdin to the
// frontend that sent the execute request, answered by its input_reply.
func (c *cellIO) Input(ctx context.Context, prompt string, password bool) (string, error) {
	if !c.allowStdin {
		return "", frontend.ErrStdinNotAllowed
	}
	c.flush()
	return c.k.requestInput(ctx, c.ctx, c.parent, prompt, password)
}

var (
	errKernelStopping = errors.New("kernel is shutting down")
	errNoStdin        = errors.New("the frontend that ran this cell has no stdin connection to the kernel")
)

// requestInput sends one input_request and waits for the reply, ctx's or
// cellCtx's end (interrupt), or the kernel's end.
func (k *Kernel) requestInput(ctx, cellCtx context.Context, parent *message, prompt string, password bool) (string, error) {
	k.inputMu.Lock()
	defer k.inputMu.Unlock()
	if err := cellCtx.Err(); err != nil {
		return "", err
	}
	ch := make(chan string, 1)
	k.pendingMu.Lock()
	k.pendingInput = ch
	k.pendingMu.Unlock()
	defer func() {
		k.pendingMu.Lock()
		k.pendingInput = nil
		k.pendingMu.Unlock()
	}()
	if !k.sendTo(k.stdin, parent.identities, "input_request", parent.rawHeader,
		map[string]any{"prompt": prompt, "password": password}, nil) {
		return "", errNoStdin
	}
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return "", ctx.Err()
	case <-cellCtx.Done():
		return "", cellCtx.Err()
	case <-k.stop:
		return "", errKernelStopping
	}
}

// deliverInput hands an input_reply to the waiting Input call.
func (k *Kernel) deliverInput(m *message) {
	var c struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(m.content, &c); err != nil {
		k.log.WithError(err).Warn("stdin: malformed input_reply dropped")
		return
	}
	k.pendingMu.Lock()
	ch := k.pendingInput
	k.pendingMu.Unlock()
	if ch == nil {
		k.log.Warn("stdin: input_reply with no input_request waiting; dropped")
		return
	}
	select {
	case ch <- c.Value:
	default:
		k.log.Warn("stdin: second input_reply for one input_request dropped")
	}
}
