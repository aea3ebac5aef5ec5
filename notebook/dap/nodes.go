package dap

import (
	"go/token"
	"reflect"
	"sync"
	"time"
	"unsafe"

	"github.com/traefik/yaegi/interp"
)

// yaegi v0.16.1 puts a line breakpoint on the first node of the line in
// source order: for `y := f(x)` that is the assignment, which runs after the
// call, so the cell would stop after f ran (and stepping into f would be
// too late). The statement's entry node (the first that runs: the call) is
// what a Go programmer means. entryBreakpoints also marks the entry node of
// every statement yaegi chose. yaegi's API offers no way to do that, so this
// reads and writes the interpreter's node tree through reflect and unsafe;
// the field names are those of v0.16.1 (go.mod pins it), and if they are not
// found nothing is changed and yaegi's own choice stands.
//
// Both nodes then stop; the adapter reports the entry node's stop and lets
// the statement node's stop that follows it pass (see bpKinds).

// bpKind tells which node of a statement a breakpoint stop happened on.
type bpKind int

const (
	bpEntry bpKind = iota + 1 // the statement's first node to run
	bpStmt                    // yaegi's node, after the entry node
	bpBoth                    // both, at one position: every other stop is the statement's
)

// posKey is a position as an event reports it (lines not decoded).
type posKey struct {
	file      string
	line, col int
}

// entryBreakpoints adds a breakpoint on the entry node of each statement of
// prog yaegi set one on (at the positions in set), records in kinds which
// stop is which, and returns the nodes it marked (for clearBreakpoints).
func entryBreakpoints(prog *interp.Program, fset *token.FileSet, set []interp.Breakpoint, kinds map[posKey]bpKind) (marked []reflect.Value) {
	want := map[posKey]bool{}
	for _, b := range set {
		if b.Valid {
			want[posKey{b.Position.Filename, b.Position.Line, b.Position.Column}] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	pv := reflect.ValueOf(prog).Elem()
	root, ok := unexported(pv, "root")
	if !ok {
		return nil
	}
	// First the nodes yaegi chose, then their entry nodes (which the walk
	// must not take for chosen ones once marked).
	var chosen []reflect.Value
	var walk func(n reflect.Value, depth int)
	walk = func(n reflect.Value, depth int) {
		if n.Kind() != reflect.Pointer || n.IsNil() || depth > 10_000 {
			return
		}
		e := n.Elem()
		if p, ok := nodePos(e, fset); ok && want[p] && breakOnLine(e) {
			chosen = append(chosen, n)
		}
		if ch, ok := unexported(e, "child"); ok && ch.Kind() == reflect.Slice {
			for i := 0; i < ch.Len(); i++ {
				walk(ch.Index(i), depth+1)
			}
		}
	}
	walk(root, 0)
	for _, n := range chosen {
		e := n.Elem()
		p, _ := nodePos(e, fset)
		kinds[p] = bpEntry
		start, ok := unexported(e, "start")
		if !ok || start.Kind() != reflect.Pointer || start.IsNil() || start.Pointer() == n.Pointer() {
			continue
		}
		sp, ok := nodePos(start.Elem(), fset)
		if !ok || sp.file != p.file || sp.line != p.line || !setBreakOnLine(start.Elem(), true) {
			continue
		}
		marked = append(marked, start.Elem())
		kinds[sp] = bpEntry
		kinds[p] = bpStmt
		if sp == p {
			kinds[p] = bpBoth
		}
	}
	return marked
}

// clearBreakpoints removes the breakpoints entryBreakpoints set.
func clearBreakpoints(marked []reflect.Value) {
	for _, n := range marked {
		setBreakOnLine(n, false)
	}
}

// resumeThread wakes the goroutine waiting as yaegi's thread id: it sets
// the thread's mode to running when cont, then sends on the thread's resume
// channel (what Continue and Step do, without Step's check that the thread
// waits, a check that goroutines sharing the thread defeat). The send gives
// up when quit is closed or after a while (the goroutine was released by an
// interrupt meanwhile): the caller must never hang. It reports whether the
// debugger's fields were found.
func resumeThread(dbg *interp.Debugger, id int, cont bool, quit ...<-chan struct{}) bool {
	dv := reflect.ValueOf(dbg).Elem()
	lockV, ok1 := unexported(dv, "gLock")
	live, ok2 := unexported(dv, "gLive")
	if !ok1 || !ok2 || live.Kind() != reflect.Map || live.Type().Key().Kind() != reflect.Int {
		return false
	}
	lock, ok := lockV.Interface().(*sync.Mutex)
	if !ok || lock == nil {
		return false
	}
	lock.Lock()
	g := live.MapIndex(reflect.ValueOf(id))
	lock.Unlock()
	if !g.IsValid() || g.Kind() != reflect.Pointer || g.IsNil() {
		return true // gone: nothing to wake
	}
	ch, ok := unexported(g.Elem(), "resume")
	if !ok || ch.Kind() != reflect.Chan || ch.IsNil() {
		return false
	}
	if cont {
		mode, ok := unexported(g.Elem(), "mode")
		if !ok || mode.Kind() != reflect.Int {
			return false
		}
		mode.SetInt(0) // debugRun
	}
	cases := []reflect.SelectCase{
		{Dir: reflect.SelectSend, Chan: ch, Send: reflect.Zero(ch.Type().Elem())},
		{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(5 * time.Second))},
	}
	for _, q := range quit {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(q)})
	}
	reflect.Select(cases)
	return true
}

// unexported returns field name of struct v, usable (v must be addressable).
func unexported(v reflect.Value, name string) (reflect.Value, bool) {
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanAddr() {
		return reflect.Value{}, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true
}

func nodePos(n reflect.Value, fset *token.FileSet) (posKey, bool) {
	pf, ok := unexported(n, "pos")
	if !ok || pf.Kind() != reflect.Int {
		return posKey{}, false
	}
	pos := token.Pos(pf.Int())
	if !pos.IsValid() {
		return posKey{}, false
	}
	p := fset.Position(pos)
	return posKey{p.Filename, p.Line, p.Column}, true
}

// breakOnLine reports whether node n has a line breakpoint.
func breakOnLine(n reflect.Value) bool {
	d, ok := unexported(n, "debug")
	if !ok || d.Kind() != reflect.Pointer || d.IsNil() {
		return false
	}
	b, ok := unexported(d.Elem(), "breakOnLine")
	return ok && b.Kind() == reflect.Bool && b.Bool()
}

// setBreakOnLine sets or clears a line breakpoint on node n.
func setBreakOnLine(n reflect.Value, on bool) bool {
	d, ok := unexported(n, "debug")
	if !ok || d.Kind() != reflect.Pointer {
		return false
	}
	if d.IsNil() {
		if !on {
			return true
		}
		d.Set(reflect.New(d.Type().Elem()))
	}
	b, ok := unexported(d.Elem(), "breakOnLine")
	if !ok || b.Kind() != reflect.Bool {
		return false
	}
	b.SetBool(on)
	return true
}
