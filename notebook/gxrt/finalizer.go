package gxrt

import (
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
	wrapped := reflect.MakeFunc(ft, func(args []reflect.Value) (results []reflect.Value) {
		defer func() {
			if r := recover(); r != nil {
				results = make([]reflect.Value, ft.NumOut())
				for i := range results {
					results[i] = reflect.Zero(ft.Out(i))
				}
				reportFinalizerPanic(cell, r)
			}
		}()
		if ft.IsVariadic() {
			return fv.CallSlice(args)
		}
		return fv.Call(args)
	})
	runtime.SetFinalizer(obj, wrapped.Interface())
}

// AddCleanup is runtime.AddCleanup for cells.
func AddCleanup[T, S any](ptr *T, cleanup func(S), arg S) runtime.Cleanup {
	cell := CurrentCell()
	return runtime.AddCleanup(ptr, func(a S) {
		defer func() {
			if r := recover(); r != nil {
				reportFinalizerPanic(cell, r)
			}
		}()
		cleanup(a)
	}, arg)
}
