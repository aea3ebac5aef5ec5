package gxrt

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Goroutines and cells: every goroutine that runs a cell's code (the
// cell's own, and those it starts with go statements) is registered with
// the run of the cell it belongs to, so that an interrupt stops exactly
// those, a stopped cell can wait for all of them, and %goroutines can list
// them.

// member is a registered goroutine.
type member struct {
	run    int64
	origin string // where a cell started it ("cell[3]:7"); "" for a cell's own goroutine
	// interrupted is when it was first interrupted (under regMu).
	interrupted time.Time
}

var (
	regMu   sync.Mutex
	members = map[int64]*member{} // goroutine id → what it belongs to
	live    = map[int64]int{}     // run → its registered (or starting) goroutines
)

// goid is the current goroutine's id (Go offers no API; its stack header
// names it).
func goid() int64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	b := bytes.TrimPrefix(buf[:n], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		id, _ := strconv.ParseInt(string(b[:i]), 10, 64)
		return id
	}
	return 0
}

// reserve counts a goroutine about to start for run: from then on, a Stop
// of run waits for it.
func reserve(run int64) {
	regMu.Lock()
	live[run]++
	regMu.Unlock()
}

// adopt registers the calling goroutine, reserved for run.
func adopt(run int64, origin string) int64 {
	id := goid()
	regMu.Lock()
	members[id] = &member{run: run, origin: origin}
	regMu.Unlock()
	return id
}

// leave unregisters goroutine id (reserved for run).
func leave(id, run int64) {
	regMu.Lock()
	delete(members, id)
	live[run]--
	if live[run] > 0 {
		regMu.Unlock()
		return
	}
	delete(live, run)
	s := stopped[run]
	if s != nil {
		delete(stopped, run)
		flagsLocked()
	}
	regMu.Unlock()
	if s != nil {
		applyStopHook()
		close(s.gone)
	}
}

// forget unregisters the calling goroutine for good (a goroutine parked by
// Exit).
func forget() {
	id := goid()
	regMu.Lock()
	m := members[id]
	regMu.Unlock()
	if m != nil {
		leave(id, m.run)
	}
}

// Start runs f in a new goroutine that belongs to run (the cell's own
// goroutine: the engine's Go for a cell's code). A Stop of run that comes
// after Start waits for it.
func Start(run int64, f func()) { start(run, "", f) }

func start(run int64, origin string, f func()) {
	reserve(run)
	go func() {
		id := adopt(run, origin)
		defer leave(id, run)
		f()
	}()
}

// Enter makes the calling goroutine belong to run until the returned
// function is called.
func Enter(run int64) (leave func()) {
	reserve(run)
	id := adopt(run, "")
	return func() { leaveOnce(id, run) }
}

func leaveOnce(id, run int64) {
	regMu.Lock()
	m := members[id]
	regMu.Unlock()
	if m != nil && m.run == run {
		leave(id, run)
	}
}

// CurrentCell is the run the calling goroutine belongs to (0 if none).
func CurrentCell() int64 {
	id := goid()
	regMu.Lock()
	defer regMu.Unlock()
	if m := members[id]; m != nil {
		return m.run
	}
	return 0
}

// Go runs f in a new goroutine of the calling goroutine's cell. A panic in
// it is reported to the engine instead of ending the process, as it would
// in a Go program; an interrupt of its cell ends it quietly. A goroutine
// of an interrupted cell starts none.
func Go(f func()) {
	origin := ""
	if _, file, line, ok := runtime.Caller(1); ok {
		origin = file + ":" + strconv.Itoa(line)
	}
	GoAt(origin, f)
}

// GoAt is Go for the go statement at origin ("cell[3]:7").
func GoAt(origin string, f func()) {
	checkAny()
	run := CurrentCell()
	start(run, origin, func() {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if _, ok := r.(Interrupt); ok {
				return
			}
			if _, ok := r.(exited); ok {
				return
			}
			if h := current(); h.GoPanic != nil {
				h.GoPanic(run, r, debug.Stack())
				return
			}
			panic(r)
		}()
		f()
	})
}

// Goroutine is a live goroutine of a cell.
type Goroutine struct {
	ID  int64
	Run int64
	// Origin is where a cell's go statement started it ("cell[3]:7"); ""
	// for the cell's own goroutine.
	Origin string
	// Stopped reports that its cell was interrupted (it has not stopped
	// yet).
	Stopped bool
	// State is what it is doing: Go's wait reason ("running", "chan
	// receive", "syscall", ...), made precise where it waits in this
	// package ("sync.Mutex.Lock", "sleep", "waiting for input", ...).
	State string
	// Where is the innermost position in a cell's code on its stack
	// ("cell[3]:12"), Func the cell function there (main.worker).
	Where, Func string
	// Stack is its stack as runtime.Stack prints it.
	Stack string
}

// Goroutines lists the live goroutines of run (all runs' for 0), by id.
func Goroutines(run int64) []Goroutine {
	regMu.Lock()
	snap := map[int64]member{}
	for id, m := range members {
		if run == 0 || m.run == run {
			snap[id] = *m
		}
	}
	stoppedRuns := map[int64]bool{}
	for r := range stopped {
		stoppedRuns[r] = true
	}
	regMu.Unlock()
	if len(snap) == 0 {
		return nil
	}
	var out []Goroutine
	for _, st := range splitStacks(allStacks()) {
		m, ok := snap[st.id]
		if !ok {
			continue
		}
		g := Goroutine{ID: st.id, Run: m.run, Origin: m.origin, Stopped: stoppedRuns[m.run], State: st.state, Stack: st.text}
		g.State, g.Where, g.Func = describe(st)
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func allStacks() []byte {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

type stackText struct {
	id    int64
	state string
	text  string
	lines []string
}

// splitStacks parses runtime.Stack(all) output.
func splitStacks(all []byte) []stackText {
	var out []stackText
	for _, block := range strings.Split(string(all), "\n\n") {
		lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
		head := strings.TrimPrefix(lines[0], "goroutine ")
		if head == lines[0] {
			continue
		}
		sp := strings.IndexByte(head, ' ')
		if sp < 0 {
			continue
		}
		id, err := strconv.ParseInt(head[:sp], 10, 64)
		if err != nil {
			continue
		}
		state := head[sp+1:]
		if i, j := strings.IndexByte(state, '['), strings.IndexByte(state, ']'); i >= 0 && j > i {
			state = state[i+1 : j]
		}
		// "chan receive, 2 minutes" → "chan receive"
		if i := strings.Index(state, ", "); i >= 0 {
			state = state[:i]
		}
		out = append(out, stackText{id: id, state: state, text: block, lines: lines[1:]})
	}
	return out
}

const pkgPrefix = "github.com/goaccel/goaccel/notebook/gxrt."

// waits names what a goroutine waiting in one of this package's functions
// waits for.
var waits = map[string]string{
	"Recv":                    "chan receive",
	"Recv2":                   "chan receive",
	"Sender.Send":             "chan send",
	"Block":                   "select (no cases)",
	"Sleep":                   "sleep",
	"Lock":                    "sync.Mutex.Lock",
	"LockRW":                  "sync.RWMutex.Lock",
	"RLock":                   "sync.RWMutex.RLock",
	"LockLocker":              "sync.Locker.Lock",
	"Wait":                    "sync.WaitGroup.Wait",
	"Scan":                    "waiting for input",
	"Scanln":                  "waiting for input",
	"Scanf":                   "waiting for input",
	"(*stdinReader).Read":     "waiting for input",
	"(*stdinReader).ReadRune": "waiting for input",
}

// funcName is the name of a function in a stack's frame line, without
// package path, type arguments and arguments ("Sender.Send").
func funcName(line string) string {
	if i := strings.LastIndexByte(line, '('); i > 0 {
		line = line[:i]
	}
	return strings.ReplaceAll(line, "[...]", "")
}

// describe finds a goroutine's state and its innermost cell position: the
// state of a goroutine waiting in this package's functions names the
// outermost of them in the first run of this package's frames.
func describe(st stackText) (state, where, fn string) {
	state = st.state
	run := 0 // 0 before this package's frames, 1 in them, 2 after
	for i := 0; i+1 < len(st.lines); i += 2 {
		f, loc := st.lines[i], strings.TrimSpace(st.lines[i+1])
		if strings.HasPrefix(loc, "cell[") {
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			where, fn = loc, funcName(f)
			break
		}
		switch {
		case strings.HasPrefix(f, pkgPrefix) && run < 2:
			run = 1
			if s, ok := waits[funcName(strings.TrimPrefix(f, pkgPrefix))]; ok {
				state = s
			}
		case run == 1:
			run = 2
		}
	}
	return state, where, fn
}
