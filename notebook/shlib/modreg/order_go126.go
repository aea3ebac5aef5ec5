//go:build amd64 && go1.26 && !go1.27

package modreg

import (
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// moduledata mirrors runtime.moduledata of Go 1.26 (runtime/symtab.go).
// Only pluginpath, bad, the pc bounds and next are read or written; the
// rest gives their offsets, and checkLayout tests them against the
// running process before anything is moved.
type moduledata struct {
	pcHeader              unsafe.Pointer
	funcnametab           []byte
	cutab                 []uint32
	filetab               []byte
	pctab                 []byte
	pclntable             []byte
	ftab                  []struct{ entryoff, funcoff uint32 }
	findfunctab           uintptr
	minpc, maxpc          uintptr
	text, etext           uintptr
	noptrdata, enoptrdata uintptr
	data, edata           uintptr
	bss, ebss             uintptr
	noptrbss, enoptrbss   uintptr
	covctrs, ecovctrs     uintptr
	end, gcdata, gcbss    uintptr
	types, etypes         uintptr
	rodata                uintptr
	gofunc                uintptr
	epclntab              uintptr
	textsectmap           []struct{ vaddr, end, baseaddr uintptr }
	typelinks             []int32
	itablinks             []unsafe.Pointer
	ptab                  []struct{ name, typ int32 }
	pluginpath            string
	pkghashes             []modulehash
	inittasks             []unsafe.Pointer
	modulename            string
	modulehashes          []modulehash
	hasmain               uint8
	bad                   bool
	gcdatamask, gcbssmask struct {
		n        int32
		bytedata *uint8
	}
	typemap unsafe.Pointer // map[typeOff]*_type
	next    *moduledata
}

type modulehash struct {
	modulename, linktimehash string
	runtimehash              *string
}

// Addresses of runtime.firstmoduledata, runtime.lastmoduledatap and
// runtime.modulesSlice (modreg_amd64.s).
func firstModule() unsafe.Pointer
func lastModuleVar() unsafe.Pointer
func modulesSliceVar() unsafe.Pointer

// order is what Promote knows of the runtime's module list, which is the
// process's own: there is one, as there is one runtime.
var order struct {
	check  sync.Once
	ok     bool
	mu     sync.Mutex
	loaded []*moduledata // promoted plugins, in load order
}

// layoutKnown checks the mirror against the process, once.
func layoutKnown() bool {
	order.check.Do(func() { order.ok = checkLayout() })
	return order.ok
}

func promote() bool {
	if !layoutKnown() {
		return false
	}
	order.mu.Lock()
	defer order.mu.Unlock()
	first := (*moduledata)(firstModule())
	lastp := (**moduledata)(lastModuleVar())
	x := *lastp
	if x == nil || x == first || x.bad || x.pluginpath == "" {
		return true
	}
	for _, m := range order.loaded {
		if m == x {
			return true // promoted already (or opened before: nothing new)
		}
	}
	order.loaded = append(order.loaded, x)
	// p: the last module before the plugins (the kernel, the libraries).
	p := first
	for p.next != nil && p.next.pluginpath == "" {
		p = p.next
	}
	if p.next != x {
		w := p
		for w.next != x {
			w = w.next
		}
		storeNext(x, p.next) // a cycle: w → x → p.next → … → w
		storeNext(p, x)      // p → x → … → w → x
		storeNext(w, nil)    // p → x → … → w
		atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(lastp)), unsafe.Pointer(w))
	}
	restoreLoadOrder()
	return true
}

func storeNext(m, next *moduledata) {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(&m.next)), unsafe.Pointer(next))
}

// restoreLoadOrder rewrites the runtime's slice of active modules (built
// from the list at each plugin load) with the promoted plugins in the
// order they were loaded: where modules hold copies of one type, the
// first loaded is the one code binds to, and reflection returns the first
// it meets.
func restoreLoadOrder() {
	slot := (*unsafe.Pointer)(modulesSliceVar())
	cur := (*[]*moduledata)(atomic.LoadPointer(slot))
	if cur == nil {
		return
	}
	promoted := make(map[*moduledata]bool, len(order.loaded))
	for _, m := range order.loaded {
		promoted[m] = true
	}
	active := make(map[*moduledata]bool, len(*cur))
	out := make([]*moduledata, 0, len(*cur))
	for _, m := range *cur {
		active[m] = true
		if !promoted[m] {
			out = append(out, m)
		}
	}
	for _, m := range order.loaded {
		if active[m] {
			out = append(out, m)
		}
	}
	if len(out) != len(*cur) {
		return
	}
	atomic.StorePointer(slot, unsafe.Pointer(&out))
}

// checkLayout tests the mirror against the process: the list from
// firstmoduledata ends at lastmoduledatap, the first module holds this
// function's code and the main function, and the active modules are the
// list's.
func checkLayout() bool {
	first := (*moduledata)(firstModule())
	last := *(**moduledata)(lastModuleVar())
	pc := reflect.ValueOf(checkLayout).Pointer()
	if !(first.minpc <= pc && pc < first.maxpc && first.text <= pc && pc < first.etext) ||
		first.hasmain != 1 || first.pluginpath != "" {
		return false
	}
	n := 0
	m := first
	for ; m.next != nil && n < 1<<20; m = m.next {
		if m.minpc > m.maxpc {
			return false
		}
		n++
	}
	if m != last {
		return false
	}
	cur := (*[]*moduledata)(atomic.LoadPointer((*unsafe.Pointer)(modulesSliceVar())))
	if cur == nil || len(*cur) == 0 || len(*cur) > n+1 {
		return false
	}
	for _, a := range *cur {
		found := false
		for m := first; m != nil; m = m.next {
			if m == a {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func plugins() []string {
	if !layoutKnown() {
		return nil
	}
	order.mu.Lock()
	defer order.mu.Unlock()
	var out []string
	for m := (*moduledata)(firstModule()); m != nil; m = m.next {
		if m.pluginpath != "" {
			out = append(out, m.pluginpath)
		}
	}
	return out
}
