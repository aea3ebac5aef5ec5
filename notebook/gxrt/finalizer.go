package gxrt

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
)

// Finalizers and cleanups run on the runtime's own goroutine, where a panic
// ends the program: Go has no way to recover it from outside. A cell's
// finalizer that panics would so end the kernel, long after the cell, so
// cells set them through these functions, which recover the panic and
// report it as one of the cell's goroutines panicking (the cell fails if it
// still runs; otherwise the kernel says so on stderr).

// FinalizerPanic is the value a finalizer or cleanup of a cell panicked
// with.
type FinalizerPanic struct{ Value any }

func (p FinalizerPanic) String() string { return fmt.Sprintf("%v (in a finalizer)", p.Value) }

// An os.Exit in a finalizer would park the runtime's finalizer goroutine
// for good (Exit parks the goroutine that calls it, so that its deferred
// calls do not run), and with it every later finalizer and cleanup of the
// process, the runtime's own among them: later programs waiting for a
// finalizer would wait forever. In a finalizer, Exit unwinds it instead
// (finalizerExit, recovered by runFinalizer).

// finalizerExit is the panic value of Exit in a finalizer.
type finalizerExit struct{ code int }

// runFinalizer runs f, a finalizer or cleanup that cell set, recovering
// its panic and its os.Exit.
func runFinalizer(cell int64, f func()) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(finalizerExit); ok {
				current().Exit(cell, e.code)
				return
			}
			reportFinalizerPanic(cell, r)
		}
	}()
	f()
}

// inFinalizer says whether the calling goroutine runs a cell's finalizer
// (asked only by Exit: reading the stack takes microseconds).
func inFinalizer() bool {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) || len(buf) >= 64<<20 {
			return bytes.Contains(buf[:n], []byte("notebook/gxrt.runFinalizer("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// reportFinalizerPanic recovers a panic of a finalizer that cell set.
func reportFinalizerPanic(cell int64, r any) {
	h := current()
	if h.GoPanic == nil {
		panic(r) // not in a kernel: Go's behaviour
	}
	h.GoPanic(cell, FinalizerPanic{r}, debug.Stack())
}

// SetFinalizer is runtime.SetFinalizer for cells.
func SetFinalizer(obj any, finalizer any) {
	fv := reflect.ValueOf(finalizer)
	if finalizer == nil || fv.Kind() != reflect.Func {
		runtime.SetFinalizer(obj, finalizer) // the runtime's own checks and messages
		return
	}
	cell := CurrentCell()
	ft := fv.Type()
	wrapped := reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		results := make([]reflect.Value, ft.NumOut())
		for i := range results {
			results[i] = reflect.Zero(ft.Out(i))
		}
		runFinalizer(cell, func() {
			if ft.IsVariadic() {
				results = fv.CallSlice(args)
			} else {
				results = fv.Call(args)
			}
		})
		return results
	})
	runtime.SetFinalizer(obj, wrapped.Interface())
}

// SetFinalizerFunc is runtime.SetFinalizer for cells, for a finalizer of
// one parameter and no results, the usual kind (gen calls it for those): a
// closure of the finalizer's own type wraps it, where SetFinalizer needs
// reflect (a microsecond and more per finalizer run, which a program
// setting a million finalizers feels).
func SetFinalizerFunc[A any](obj any, finalizer func(A)) {
	if finalizer == nil {
		runtime.SetFinalizer(obj, finalizer) // the runtime's own answer
		return
	}
	cell := CurrentCell()
	runtime.SetFinalizer(obj, func(a A) { runFinalizer(cell, func() { finalizer(a) }) })
}

// AddCleanup is runtime.AddCleanup for cells.
func AddCleanup[T, S any](ptr *T, cleanup func(S), arg S) runtime.Cleanup {
	cell := CurrentCell()
	return runtime.AddCleanup(ptr, func(a S) { runFinalizer(cell, func() { cleanup(a) }) }, arg)
}
