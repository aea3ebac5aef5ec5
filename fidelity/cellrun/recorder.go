package cellrun

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"sync"
	"time"

	"github.com/goaccel/goaccel/frontend"
)

// Recorder is the child's frontend.CellIO: it writes every output of the
// cell to w as one JSON line, immediately and in order, so that what a
// cell printed before the child died is kept.
type Recorder struct {
	mu        sync.Mutex
	enc       *json.Encoder
	start     time.Time
	room      int   // stream bytes still recorded
	truncated bool  // stream text was dropped
	err       error // the first write error
}

// NewRecorder records to w (an unbuffered file). start is when the child
// started, for the events' times. Stream text beyond maxStream bytes (in
// all) is dropped, once marked by a KindTruncated event; 0 means no limit.
func NewRecorder(w io.Writer, start time.Time, maxStream int) *Recorder {
	if maxStream <= 0 {
		maxStream = math.MaxInt
	}
	return &Recorder{enc: json.NewEncoder(w), start: start, room: maxStream}
}

var _ frontend.CellIO = (*Recorder)(nil)

func (r *Recorder) emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Kind == KindStream {
		if r.truncated {
			return
		}
		if len(e.Text) > r.room {
			r.truncated = true
			e.Text = e.Text[:r.room]
			defer r.write(Event{Kind: KindTruncated})
		}
		r.room -= len(e.Text)
	}
	r.write(e)
}

// write encodes e; r.mu is held.
func (r *Recorder) write(e Event) {
	e.T = float64(time.Since(r.start).Microseconds()) / 1000
	if err := r.enc.Encode(e); err != nil && r.err == nil {
		r.err = err
	}
}

// Err returns the first error writing the events.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Ready records that the engine started and the cell is about to run.
func (r *Recorder) Ready() { r.emit(Event{Kind: KindReady}) }

// Reply records the execute reply: the cell ended.
func (r *Recorder) Reply(rep frontend.ExecuteReply) {
	e := Event{Kind: KindReply, Result: jsonable(rep.Result)}
	if rep.Err != nil {
		e.Error = &Error{Name: rep.Err.Name, Value: rep.Err.Value, Traceback: rep.Err.Traceback}
	}
	r.emit(e)
}

// Stream implements frontend.Publisher.
func (r *Recorder) Stream(name, text string) { r.emit(Event{Kind: KindStream, Name: name, Text: text}) }

// Display implements frontend.Publisher.
func (r *Recorder) Display(data frontend.MIMEBundle, _ map[string]any, id string) {
	r.emit(Event{Kind: KindDisplay, Name: id, Data: jsonable(data)})
}

// UpdateDisplay implements frontend.Publisher.
func (r *Recorder) UpdateDisplay(data frontend.MIMEBundle, _ map[string]any, id string) {
	r.emit(Event{Kind: KindUpdateDisplay, Name: id, Data: jsonable(data)})
}

// ClearOutput implements frontend.Publisher.
func (r *Recorder) ClearOutput(bool) { r.emit(Event{Kind: KindClearOutput}) }

// Input implements frontend.CellIO: the harness has no user to ask, so
// input is refused (the programs' stdin is empty in the reference run too).
func (r *Recorder) Input(_ context.Context, prompt string, _ bool) (string, error) {
	r.emit(Event{Kind: KindInput, Text: prompt})
	return "", frontend.ErrStdinNotAllowed
}

// jsonable returns b if it encodes as JSON, else its text/plain part.
func jsonable(b frontend.MIMEBundle) map[string]any {
	if len(b) == 0 {
		return nil
	}
	if _, err := json.Marshal(b); err == nil {
		return b
	}
	out := map[string]any{}
	if t, ok := b["text/plain"].(string); ok {
		out["text/plain"] = t
	}
	return out
}
