package tensorboard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// fileCounter numbers the event files this process creates (the last part
// of the file name), so two writers opened in the same second never collide.
var fileCounter atomic.Int64

const (
	// kickBytes is the buffer size at which the background flusher is woken
	// early instead of waiting for its tick.
	kickBytes = 1 << 20
	// maxPending is the buffer size at which a caller writes the buffer
	// itself (back-pressure when the disk cannot keep up).
	maxPending = 64 << 20
)

// eventFile is one events.out.tfevents file: records are appended to an
// in-memory buffer under mu and written to the file by flush, which the
// owning Writer's flusher goroutine calls at least once per interval.
type eventFile struct {
	path string

	mu  sync.Mutex // guards buf and werr
	buf []byte
	// werr is the first write error; later appends return it.
	werr error
	kick func()

	wmu   sync.Mutex // serialises writes to f, in buffer order
	f     *os.File
	spare []byte
}

// openEventFile creates dir and a new event file in it, with the
// file_version record buffered.
func openEventFile(dir string, kick func()) (*eventFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: creating log directory %s: %w", dir, err)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	now := time.Now()
	name := fmt.Sprintf("events.out.tfevents.%010d.%s.%d.%d", now.Unix(), host, os.Getpid(), fileCounter.Add(1)-1)
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tensorboard: creating event file: %w", err)
	}
	e := &eventFile{path: path, f: f, kick: kick, buf: make([]byte, 0, 64<<10)}
	e.buf = AppendRecord(e.buf, fileVersionEvent(wallSeconds(now)))
	return e, nil
}

func wallSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// appendRaw appends a framed record for an already-encoded event.
func (e *eventFile) appendRaw(event []byte) error {
	e.mu.Lock()
	if e.werr != nil {
		err := e.werr
		e.mu.Unlock()
		return err
	}
	e.buf = AppendRecord(e.buf, event)
	n := len(e.buf)
	e.mu.Unlock()
	e.afterAppend(n)
	return nil
}

// appendScalars appends one Event holding a Summary with the given scalar
// values, encoding straight into the buffer (the hot path: no allocation).
func (e *eventFile) appendScalars(wall float64, step int64, tags []string, vals []float64) error {
	size := 0
	for _, t := range tags {
		size += scalarValueSize(t)
	}
	e.mu.Lock()
	if e.werr != nil {
		err := e.werr
		e.mu.Unlock()
		return err
	}
	b, start := beginRecord(e.buf)
	b = appendEventHeader(b, wall, step)
	b = appendSummaryTag(b, size)
	for i, t := range tags {
		b = appendScalarValue(b, t, vals[i])
	}
	e.buf = finishRecord(b, start)
	n := len(e.buf)
	e.mu.Unlock()
	e.afterAppend(n)
	return nil
}

func (e *eventFile) afterAppend(n int) {
	if n >= maxPending {
		_ = e.flush() // the error is kept in werr and returned by the next append
	} else if n >= kickBytes && e.kick != nil {
		e.kick()
	}
}

// flush writes the buffered records to the file.
func (e *eventFile) flush() error {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.mu.Lock()
	if e.werr != nil {
		err := e.werr
		e.mu.Unlock()
		return err
	}
	data := e.buf
	e.buf = e.spare[:0]
	e.mu.Unlock()
	if len(data) == 0 || e.f == nil {
		e.spare = data
		return nil
	}
	_, err := e.f.Write(data)
	if cap(data) <= 4<<20 {
		e.spare = data[:0]
	} else {
		e.spare = nil // do not keep a burst-sized buffer forever
	}
	if err != nil {
		err = fmt.Errorf("tensorboard: writing %s: %w", e.path, err)
		e.mu.Lock()
		e.werr = err
		e.mu.Unlock()
	}
	return err
}

// close flushes, syncs and closes the file.
func (e *eventFile) close() error {
	err := e.flush()
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if e.f == nil {
		return err
	}
	if serr := e.f.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("tensorboard: syncing %s: %w", e.path, serr)
	}
	if cerr := e.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("tensorboard: closing %s: %w", e.path, cerr)
	}
	e.f = nil
	e.mu.Lock()
	if e.werr == nil {
		e.werr = errClosed
	}
	e.mu.Unlock()
	return err
}

var errClosed = errors.New("tensorboard: writer is closed")

// appendScalarsWall is appendScalars with a time.Time.
func (e *eventFile) appendScalarsWall(wall time.Time, step int64, tags []string, vals []float64) error {
	return e.appendScalars(wallSeconds(wall), step, tags, vals)
}
