package gonb

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/comms"
)

// recorder is a Handler that keeps what it gets.
type recorder struct {
	mu   sync.Mutex
	got  []string
	subs map[string]bool
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

func (r *recorder) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	for m, v := range data {
		r.add(fmt.Sprintf("display %s %v id=%q", m, v, id))
	}
}
func (r *recorder) RequestInput(prompt string, password bool) {
	r.add(fmt.Sprintf("input %q %v", prompt, password))
}
func (r *recorder) CommValue(address string, value any, request bool) {
	r.add(fmt.Sprintf("value %s %v %v", address, value, request))
}
func (r *recorder) Subscribe(address string, unsubscribe bool) {
	r.add(fmt.Sprintf("subscribe %s %v", address, unsubscribe))
}
func (r *recorder) Problem(err error) { r.add("problem " + err.Error()) }

func (r *recorder) reset() {
	r.mu.Lock()
	r.got = nil
	r.mu.Unlock()
}

// The session's server, for every test: gonbui opens the pipes its
// environment names once per process, as in a kernel.
var shared struct {
	once sync.Once
	s    *Server
	err  error
	rec  atomic.Pointer[recorder]
}

// gonbuiServer returns the process's server, its messages going from now
// on to a new recorder.
func gonbuiServer(t *testing.T) (*Server, *recorder) {
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "gonb-server-test")
		if err != nil {
			shared.err = err
			return
		}
		shared.s, shared.err = NewServer(dir, func() Handler { return shared.rec.Load() })
		if shared.err != nil {
			return
		}
		for k, v := range shared.s.Env() {
			os.Setenv(k, v)
		}
		gonbui.IsNotebook = true // gonbui read the environment at init
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	rec := &recorder{}
	shared.rec.Store(rec)
	return shared.s, rec
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.s != nil {
		shared.s.Close()
		os.RemoveAll(filepath.Dir(shared.s.Pipe))
	}
	os.Exit(code)
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// TestServerWithGonbui drives the server with GoNB's own gonbui package,
// in this process, as cells do: displays, updates, an input request, a
// sync (answered by the server), a comm value, a subscription and a value
// sent back to a listener.
func TestServerWithGonbui(t *testing.T) {
	s, rec := gonbuiServer(t)

	gonbui.DisplayHTML("<b>hi</b>")
	gonbui.UpdateHTML("counter", "1")
	gonbui.UpdateHTML("counter", "2")
	gonbui.DisplayPNG([]byte{1, 2, 3})
	gonbui.RequestInput("Enter:", true)
	gonbui.Sync() // returns only when the server acknowledged it
	comms.Send("/to/frontend", 7)
	ch := comms.Listen[int]("/to/cell")
	s.Drain(5 * time.Second)
	s.Send("/to/cell", float64(42)) // JSON numbers arrive as float64
	select {
	case v := <-ch.C:
		if v != 42 {
			t.Errorf("listener got %d", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the value sent back never reached the listener")
	}
	ch.Close() // unsubscribes from a goroutine of its own
	for end := time.Now().Add(10 * time.Second); len(rec.lines()) < 8 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	want := []string{
		`display text/html <b>hi</b> id=""`,
		`display text/html 1 id="counter"`,
		`display text/html 2 id="counter"`,
		`display image/png AQID id=""`,
		`input "Enter:" true`,
		`value /to/frontend 7 false`,
		`subscribe /to/cell false`,
		`subscribe /to/cell true`,
	}
	got := rec.lines()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handled:\n%q\nwant:\n%q", got, want)
	}
	if _, err := os.Stat(s.Pipe); err != nil {
		t.Error(err)
	}
}

func TestCommValueConversion(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{float64(3), "3"},
		{true, "1"},
		{[]any{"a", "b"}, "[a b]"},
		{[]any{1.0, 2.0}, "[1 2]"},
		{map[string]any{"x": "y"}, "map[x:y]"},
	} {
		if got := fmt.Sprint(commValue(c.in)); got != c.want {
			t.Errorf("commValue(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestDrainSeesEveryMessageWritten is the race an input box's prompt hit
// on a busy machine: a message taken out of the pipe by a read that had
// not returned yet was counted neither as waiting nor as handled, so
// Drain returned before the prompt was known.
func TestDrainSeesEveryMessageWritten(t *testing.T) {
	s, rec := gonbuiServer(t)
	stop := make(chan struct{})
	defer close(stop)
	for range 2 { // competition for the CPUs, as on a busy machine
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	for i := range 500 {
		prompt := fmt.Sprintf("prompt %d:", i)
		gonbui.RequestInput(prompt, false)
		s.Drain(time.Minute)
		got := rec.lines()
		if want := fmt.Sprintf("input %q false", prompt); len(got) != 1 || got[0] != want {
			t.Fatalf("after Drain, run %d: handled %q, want %q", i, got, want)
		}
		rec.reset()
	}
}
