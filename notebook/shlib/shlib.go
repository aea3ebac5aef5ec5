// Package shlib loads into the running process the Go shared libraries that
// compiled cells link against, before the first cell plugin that needs them.
//
// The libraries hold the standard library and goaccel's packages for cells,
// compiled once (see notebook/build), so that each cell's plugin carries
// only the cell's own code. The first library contains a runtime of its own
// that never runs: its functions and variables resolve to this process's
// where it has them. Its code that this process lacks does run, so its
// module must be known to this process's runtime (for stack unwinding and
// garbage collection): Load registers it (modreg.Register), its variables
// garbage collection roots from then on, and the next plugin load completes
// the registration (its types). The libraries after it register
// themselves when they are opened, as plugins do.
package shlib

// Lazy binding, as the kernel's own (-z lazy): go-nvml's functions exist
// only where the NVIDIA driver is installed, and are looked up when called.

/*
#cgo linux LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

static void *shlib_open(const char *path) { return dlopen(path, RTLD_LAZY | RTLD_GLOBAL); }
static void *shlib_sym(void *h, const char *name) { return dlsym(h, name); }
static void *shlib_global(const char *name) { return dlsym(RTLD_DEFAULT, name); }
static const char *shlib_error(void) { return dlerror(); }
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/goaccel/goaccel/notebook/shlib/modreg"
)

// Supported says whether this process can load such libraries.
const Supported = modreg.Supported

var (
	mu          sync.Mutex
	loaded      = map[string]error{}
	initialized = map[string]bool{} // packages Init ran or found done
)

// Load opens the shared libraries at paths in order, the first being the
// one that contains the runtime package, once per process; a later call
// for the same libraries returns the first call's result.
func Load(paths ...string) error {
	mu.Lock()
	defer mu.Unlock()
	key := strings.Join(paths, "\x00")
	if err, done := loaded[key]; done {
		return err
	}
	err := open(paths)
	loaded[key] = err
	return err
}

func open(paths []string) error {
	if !Supported || modreg.AddModuleDataPC == 0 {
		return errors.New("loading the cells' shared libraries: not supported on this platform")
	}
	for i, path := range paths {
		cpath := C.CString(path)
		h := C.shlib_open(cpath)
		C.free(unsafe.Pointer(cpath))
		if h == nil {
			return fmt.Errorf("loading the cells' shared library: %s", C.GoString(C.shlib_error()))
		}
		if i > 0 {
			continue
		}
		// The first library contains the runtime package, whose module
		// data is runtime.firstmoduledata there.
		name := C.CString("runtime.firstmoduledata")
		md := C.shlib_sym(h, name)
		C.free(unsafe.Pointer(name))
		if md == nil {
			return fmt.Errorf("loading the cells' shared library %s: it has no runtime.firstmoduledata (not a Go shared library with the runtime)", path)
		}
		modreg.Register(uintptr(md))
	}
	return nil
}

// Init initializes the packages at paths (import paths, in the order Go
// initializes them) of the loaded libraries, where this process has not:
// a plugin's own list of packages to initialize holds only its direct
// imports from a library (see notebook/build's inits.go). symbol names a
// package's init record. The record found is the one the libraries' code
// binds to: this process's where it links the package (already run, so
// skipped), else the library's. A panic in a package's initialization is
// returned as an error, and the package counts as initialized (as far as
// it got): Go would end the program; a kernel reports it.
func Init(paths []string, symbol func(path string) string) error {
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if initialized[p] {
			continue
		}
		name := C.CString(symbol(p))
		task := C.shlib_global(name)
		C.free(unsafe.Pointer(name))
		initialized[p] = true
		if task == nil || (*initTask)(task).nfns == 0 {
			continue // a package with nothing to initialize (the runtime throws on an empty record)
		}
		if err := runInit(p, unsafe.Pointer(task)); err != nil {
			return err
		}
	}
	return nil
}

// runInit runs the init record at task (a runtime.initTask), once.
func runInit(path string, task unsafe.Pointer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			// Marked done: opening the plugin runs the record again if
			// the plugin imports the package, and the runtime would take
			// a record left running for an import cycle and end the
			// process.
			(*initTask)(task).state = 2
			err = fmt.Errorf("initializing package %s: panic: %v", path, r)
		}
	}()
	doInit1(task)
	return nil
}

// initTask is the head of runtime.initTask.
type initTask struct {
	state uint32 // 0 not run, 1 running, 2 done
	nfns  uint32
}

// doInit1 runs an init record's functions, unless done (runtime/proc.go).
//
//go:linkname doInit1 runtime.doInit1
func doInit1(t unsafe.Pointer)
