package compiled

import (
	"reflect"
	"sync"

	"github.com/goaccel/goaccel/notebook/gxrt"
)

// Override hooks and interrupts. A package-level function of a cell starts
// by looking at its override hook (see gen's hookDecls): the function of a
// later cell that redefined it, or nil. While a cell is being interrupted,
// every hook is replaced by one that checks for the interrupt and then
// does what the hook did: so these functions, the recursive ones included,
// need no check of their own, which would cost every call.

// hookSlot is the hook of one function of a loaded cell package.
type hookSlot struct {
	ptr     reflect.Value // *func(...)
	stopper reflect.Value // func(next hook) hook: checks, then calls next or the body
	// saved is the hook to put back when the stop ends (valid while
	// swapped).
	saved reflect.Value
}

var (
	hooksMu sync.Mutex
	slots   = map[uintptr]*hookSlot{} // by the hook's address
	swapped bool                      // stoppers are in
)

// registerHooks records the hooks of a loaded unit.
func registerHooks(u *unit) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	for _, f := range u.out.Funcs {
		ptr := reflect.ValueOf(u.syms["o:"+f])
		stopper := reflect.ValueOf(u.syms["s:"+f])
		if ptr.Kind() != reflect.Pointer || stopper.Kind() != reflect.Func {
			continue
		}
		slot := &hookSlot{ptr: ptr, stopper: stopper}
		if swapped {
			slot.swapIn()
		}
		slots[ptr.Pointer()] = slot
	}
}

// setHook sets the override hook at ptr to v.
func setHook(ptr, v reflect.Value) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	if slot := slots[ptr.Pointer()]; slot != nil && swapped {
		slot.saved = v
		slot.ptr.Elem().Set(slot.stopper.Call([]reflect.Value{v})[0])
		return
	}
	ptr.Elem().Set(v)
}

// hookValue is the hook at ptr as setHook last set it (not the checking
// hook swapped in while a cell is being interrupted).
func hookValue(ptr reflect.Value) reflect.Value {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	v := reflect.New(ptr.Elem().Type()).Elem()
	if slot := slots[ptr.Pointer()]; slot != nil && swapped {
		v.Set(slot.saved)
	} else {
		v.Set(ptr.Elem())
	}
	return v
}

func (s *hookSlot) swapIn() {
	cur := reflect.New(s.ptr.Elem().Type()).Elem()
	cur.Set(s.ptr.Elem())
	s.saved = cur
	s.ptr.Elem().Set(s.stopper.Call([]reflect.Value{cur})[0])
}

// swapHooks puts the checking hooks in (on) or takes them out.
func swapHooks(on bool) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	if on == swapped {
		return
	}
	for _, slot := range slots {
		if on {
			slot.swapIn()
		} else {
			slot.ptr.Elem().Set(slot.saved)
			slot.saved = reflect.Value{}
		}
	}
	swapped = on
}

func init() { gxrt.SetStopHook(swapHooks) }
