package gonb

import (
	"bufio"
	"encoding/base64"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// Handler receives what cells send through gonbui. The Server calls it
// from one goroutine, in the order the messages were sent.
type Handler interface {
	// Display shows data (display_data); with a display id, the first
	// display of that id is display_data and later ones update it
	// (update_display_data), as GoNB does.
	Display(data frontend.MIMEBundle, metadata map[string]any, displayID string)
	// RequestInput is gonbui.RequestInput: the cell will read a line of
	// standard input, to be asked for with this prompt.
	RequestInput(prompt string, password bool)
	// CommValue is a value for the front end at address (comms.Send), or
	// with request a request for the front end's value (comms.ReadValue).
	CommValue(address string, value any, request bool)
	// Subscribe (or unsubscribe) the cells to values the front end sends
	// to address.
	Subscribe(address string, unsubscribe bool)
	// Problem reports a message that could not be understood.
	Problem(err error)
}

// Env names of gonbui's protocol.
const (
	EnvPipe     = protocol.GONB_PIPE_ENV
	EnvPipeBack = protocol.GONB_PIPE_BACK_ENV
)

// Server is the kernel's end of gonbui's two named pipes: cells write
// gob-encoded *protocol.DisplayData to Pipe, the kernel writes
// protocol.CommValue values back to PipeBack. Both pipes are opened for
// reading and writing on this side, so that gonbui's opens never block
// and the kernel never sees an end of file: one pair serves the whole
// session, whenever gonbui opens it.
type Server struct {
	Pipe, PipeBack string

	in   *os.File
	back *os.File
	br   *bufio.Reader // the pipe, read by serve only

	out     chan protocol.CommValue
	closed  chan struct{}
	handler func() Handler

	// Drain compares handled with what cells had written when it was
	// called: read plus what still waits in the pipe. The pipe is read
	// under mu, so no message can be in neither count (taken out of the
	// pipe by a read that has not returned yet).
	mu       sync.Mutex
	read     int64         // bytes read from the pipe
	handled  int64         // bytes of the messages handled (or found undecodable)
	progress chan struct{} // closed (and replaced) when handled grows
}

// NewServer makes the pipes in dir (created if missing) and starts
// serving them: each message goes to the Handler h returns at the time it
// arrives (nil drops it).
func NewServer(dir string, h func() Handler) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Server{Pipe: filepath.Join(dir, "gonb_pipe"), PipeBack: filepath.Join(dir, "gonb_pipe_back"),
		out: make(chan protocol.CommValue, 1024), closed: make(chan struct{}), handler: h, progress: make(chan struct{})}
	for _, p := range []string{s.Pipe, s.PipeBack} {
		_ = os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			return nil, fmt.Errorf("gonb: making the named pipe %s: %w", p, err)
		}
	}
	var err error
	if s.in, err = os.OpenFile(s.Pipe, os.O_RDWR, 0); err != nil {
		return nil, err
	}
	if s.back, err = os.OpenFile(s.PipeBack, os.O_RDWR, 0); err != nil {
		s.in.Close()
		return nil, err
	}
	rc, err := s.in.SyscallConn()
	if err != nil {
		s.in.Close()
		s.back.Close()
		return nil, err
	}
	s.br = bufio.NewReaderSize(&pipeReader{s: s, rc: rc}, 64*1024)
	go s.serve()
	go s.writeBack()
	return s, nil
}

// Env is the environment gonbui reads.
func (s *Server) Env() map[string]string {
	return map[string]string{EnvPipe: s.Pipe, EnvPipeBack: s.PipeBack}
}

// Send sends a value to the cells' gonbui (a front end's value for a
// subscribed address, an acknowledgement). It never blocks: when gonbui
// reads nothing, values beyond a buffer are dropped.
func (s *Server) Send(address string, value any) {
	select {
	case s.out <- protocol.CommValue{Address: address, Value: value}:
	default:
	}
}

// Close stops serving and removes the pipes.
func (s *Server) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
	}
	close(s.closed)
	s.in.Close()
	s.back.Close()
	os.Remove(s.Pipe)
	os.Remove(s.PipeBack)
	return nil
}

// Drain waits (up to timeout) until every message cells wrote so far has
// been handled, so that a cell's displays land under it before it ends,
// and an input box's prompt is known before the cell reads its answer.
// A message that was being written when Drain was called is waited for
// to its end.
func (s *Server) Drain(timeout time.Duration) {
	s.mu.Lock()
	target := s.read + int64(pending(s.in))
	s.mu.Unlock()
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	for {
		s.mu.Lock()
		done, progress := s.handled >= target, s.progress
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-progress:
		case <-expired.C:
			return
		case <-s.closed:
			return
		}
	}
}

func (s *Server) serve() {
	dec := gob.NewDecoder(s.br)
	for {
		var dd protocol.DisplayData
		err := dec.Decode(&dd)
		select {
		case <-s.closed:
			return
		default:
		}
		if err == nil {
			s.dispatch(&dd)
		}
		// gob reads exactly one message's bytes from a bufio.Reader (an
		// io.ByteReader), so what is still buffered is the next one's.
		s.mu.Lock()
		s.handled = s.read - int64(s.br.Buffered())
		close(s.progress)
		s.progress = make(chan struct{})
		s.mu.Unlock()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return
			}
			// A stream that cannot be decoded cannot be resynchronized:
			// start a new decoder (gonbui's next open starts a new
			// encoder too).
			if h := s.handler(); h != nil {
				h.Problem(fmt.Errorf("gonbui sent a message the kernel cannot decode: %v", err))
			}
			dec = gob.NewDecoder(s.br)
		}
	}
}

// dispatch hands one message to the handler; the protocol's own sync
// requests are answered here.
func (s *Server) dispatch(dd *protocol.DisplayData) {
	if v, ok := dd.Data[protocol.MIMECommValue]; ok {
		cv, ok := v.(protocol.CommValue)
		if !ok {
			s.problem(fmt.Errorf("gonbui sent %s with a %T", protocol.MIMECommValue, v))
			return
		}
		if cv.Address == protocol.GonbuiSyncAddress {
			s.Send(protocol.GonbuiSyncAckAddress, cv.Value)
			return
		}
		if h := s.handler(); h != nil {
			h.CommValue(cv.Address, cv.Value, cv.Request)
		}
		return
	}
	if v, ok := dd.Data[protocol.MIMECommSubscribe]; ok {
		sub, ok := v.(protocol.CommSubscription)
		if !ok {
			s.problem(fmt.Errorf("gonbui sent %s with a %T", protocol.MIMECommSubscribe, v))
			return
		}
		if h := s.handler(); h != nil {
			h.Subscribe(sub.Address, sub.Unsubscribe)
		}
		return
	}
	if v, ok := dd.Data[protocol.MIMEJupyterInput]; ok {
		req, ok := v.(protocol.InputRequest)
		if !ok {
			s.problem(fmt.Errorf("gonbui sent %s with a %T", protocol.MIMEJupyterInput, v))
			return
		}
		if h := s.handler(); h != nil {
			h.RequestInput(req.Prompt, req.Password)
		}
		return
	}
	bundle := frontend.MIMEBundle{}
	for mime, content := range dd.Data {
		switch c := content.(type) {
		case []byte:
			bundle[string(mime)] = base64.StdEncoding.EncodeToString(c)
		default:
			bundle[string(mime)] = c
		}
	}
	md := map[string]any{}
	for k, v := range dd.Metadata {
		md[k] = v
	}
	if h := s.handler(); h != nil {
		h.Display(bundle, md, dd.DisplayID)
	}
}

func (s *Server) problem(err error) {
	if h := s.handler(); h != nil {
		h.Problem(err)
	}
}

// writeBack writes the values for gonbui, one at a time, on one encoder
// (gonbui keeps one decoder for the life of the process).
func (s *Server) writeBack() {
	enc := gob.NewEncoder(s.back)
	for {
		select {
		case <-s.closed:
			return
		case v := <-s.out:
			v.Value = commValue(v.Value)
			if err := enc.Encode(v); err != nil {
				// The value's type cannot travel; gonbui sees nothing.
				continue
			}
		}
	}
}

// commValue converts a JSON value from the front end to one of the types
// gonbui's protocol registers with gob (protocol.CommValueTypes).
func commValue(v any) any {
	switch x := v.(type) {
	case nil, int, float64, string, []int, []float64, []string, map[string]int, map[string]float64, map[string]string:
		return x
	case bool:
		if x {
			return 1
		}
		return 0
	case float32:
		return float64(x)
	case int64:
		return int(x)
	case []any:
		strs, nums := make([]string, 0, len(x)), make([]float64, 0, len(x))
		for _, e := range x {
			switch e := e.(type) {
			case string:
				strs = append(strs, e)
			case float64:
				nums = append(nums, e)
			}
		}
		if len(strs) == len(x) {
			return strs
		}
		return nums
	case map[string]any:
		strs, nums := map[string]string{}, map[string]float64{}
		for k, e := range x {
			switch e := e.(type) {
			case string:
				strs[k] = e
			case float64:
				nums[k] = e
			}
		}
		if len(strs) == len(x) {
			return strs
		}
		return nums
	}
	return fmt.Sprint(v)
}

// pipeReader reads the pipe without blocking, under the server's mu,
// counting what it read; it waits for more in the runtime's poller, with
// mu released.
type pipeReader struct {
	s  *Server
	rc syscall.RawConn
}

func (r *pipeReader) Read(p []byte) (int, error) {
	var n int
	var err error
	werr := r.rc.Read(func(fd uintptr) bool {
		r.s.mu.Lock()
		n, err = syscall.Read(int(fd), p)
		if n > 0 {
			r.s.read += int64(n)
		}
		r.s.mu.Unlock()
		return err != syscall.EAGAIN && err != syscall.EINTR
	})
	switch {
	case werr != nil:
		return 0, werr
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
