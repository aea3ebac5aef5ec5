package gomlx

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	gopjrt "github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // the fallback
	"github.com/gomlx/gomlx/backends/xla"        // XLA through PJRT plugins
	"github.com/gomlx/gomlx/pkg/core/graph"

	_ "github.com/goaccel/goaccel/accelerate/gomlx/vjp" // gradients of matrix products that are matrix products
	"github.com/goaccel/goaccel/internal/launchenv"
	"github.com/goaccel/goaccel/interrupt"
	"github.com/goaccel/goaccel/pjrt"
)

// GoMLXVersion is the GoMLX version this package is written against.
const GoMLXVersion = "v0.26.0"

// announce says something once per process (on stderr: the cell's, or the
// worker's, prefixed by its rank).
var announced sync.Map

func announce(key, msg string) {
	if _, done := announced.LoadOrStore(key, true); !done {
		fmt.Fprintln(os.Stderr, msg)
	}
}

// BackendChoice is the backend Backend picks and why.
type BackendChoice struct {
	Config string // GoMLX's backend configuration: "xla:cpu", "xla:cuda", "go", or $GOMLX_BACKEND
	Plugin string // the PJRT plugin's path, for XLA
	Why    string
}

// ChooseBackend says which backend Backend uses for a process on device
// (an Accelerator's Device(): "cpu", "cuda:0"): $GOMLX_BACKEND when set;
// XLA with the CUDA plugin for a GPU when goaccel found one; XLA with the
// CPU plugin when found; else GoMLX's pure-Go backend ("go"), with the
// reason.
func ChooseBackend(device string) BackendChoice {
	findPlugins()
	if c := os.Getenv(pjrt.EnvBackend); c != "" {
		return BackendChoice{Config: c, Why: "GOMLX_BACKEND=" + c}
	}
	gpu := strings.HasPrefix(device, "cuda")
	if gpu {
		if p, ok := pjrt.Available("cuda"); ok {
			return BackendChoice{Config: "xla:cuda", Plugin: p, Why: "the CUDA PJRT plugin " + p}
		}
	}
	if p, ok := pjrt.Available("cpu"); ok {
		why := "the CPU PJRT plugin " + p
		if gpu {
			why = "no PJRT CUDA plugin was found for " + device + " (PJRT_PLUGIN_LIBRARY_PATH=" + os.Getenv(pjrt.EnvLibraryPath) +
				"; pip install \"jax[cuda12]\" into goaccel's virtualenv, ~/.cache/goaccel/venv), so " + why
		}
		return BackendChoice{Config: "xla:cpu", Plugin: p, Why: why}
	}
	where := "PJRT_PLUGIN_LIBRARY_PATH=" + os.Getenv(pjrt.EnvLibraryPath)
	if gpu {
		return BackendChoice{Config: "go", Why: "no PJRT CUDA or CPU plugin was found (" + where + "; pip install \"jax[cuda12]\" for GPUs: it brings jax-cuda12-pjrt and NVIDIA's libraries)"}
	}
	return BackendChoice{Config: "go", Why: "no PJRT CPU plugin was found (" + where + "; `make lab` installs one)"}
}

// pluginsOnce finds the PJRT plugins once per process.
var pluginsOnce sync.Once

// findPlugins points GoMLX at the plugins goaccel installed when nothing
// did yet: the kernel and its workers have PJRT_PLUGIN_LIBRARY_PATH from
// the kernel's start-up (package pjrt), a program run with go run does
// not, and finds them here the same way.
func findPlugins() {
	pluginsOnce.Do(func() {
		if os.Getenv(pjrt.EnvLibraryPath) == "" {
			_, _ = pjrt.Configure(pjrt.DefaultSearch(), os.Setenv)
		}
	})
}

// Backend returns a GoMLX backend for this process's device, as
// ChooseBackend picks it. XLA never tries to download a plugin (goaccel
// installs them). XLA's CPU client gets one device, and a thread pool of
// threads threads (a process that shares the machine's cores with other
// workers of a launch), or of every core this process may run on
// (threads 0). The fallback to the pure-Go backend is announced once, with
// the reason: it trains dense models only, slowly.
func Backend(device string, threads int) (backends.Backend, error) {
	c := ChooseBackend(device)
	if strings.HasPrefix(device, "cuda") && c.Config == "xla:cpu" {
		announce("cuda-fallback", "goaccel: GoMLX runs on XLA's CPU backend although this process has a GPU: "+c.Why+".")
	}
	if c.Config == "go" {
		announce("fallback", "goaccel: GoMLX runs on its pure-Go backend (simplego): "+c.Why+
			". It trains dense models only (GoMLX "+GoMLXVersion+" has no gradient for convolutions and pooling there).")
	}
	var b backends.Backend
	err := catch(func() {
		if c.Plugin == "" {
			b = must(backends.NewWithConfig(c.Config))
			return
		}
		xla.EnableAutoInstall(false)
		opts := gopjrt.NamedValuesMap{}
		if c.Config == "xla:cpu" {
			// One device: a process of goaccel's owns one. The CPU
			// plugin's default is 4 devices, and its thread pool holds
			// max(PJRT_NPROC, devices) threads: 4 on a machine of 2
			// cores, which made a small GPT's steps 10% slower than with
			// 2 (bench/gpt). PJRT_NPROC, read when the client is created,
			// is the process's share of the cores (all of them, by
			// default, unless the user set it).
			if threads > 0 {
				_ = os.Setenv("PJRT_NPROC", strconv.Itoa(threads))
			} else if os.Getenv("PJRT_NPROC") == "" {
				_ = os.Setenv("PJRT_NPROC", strconv.Itoa(runtime.NumCPU()))
			}
			opts["cpu_device_count"] = int64(1)
		}
		b = must(xla.NewWithOptions(c.Plugin, opts))
	})
	if err != nil {
		return nil, fmt.Errorf("gomlx: backend %q (%s): %w", c.Config, c.Why, err)
	}
	return b, nil
}

// AcceleratorBackend is Backend for acc's process: its device, and on a
// CPU an even share of the machine's cores among the launch's local
// processes.
func AcceleratorBackend(acc interface {
	Device() string
	NumProcesses() int
}) (backends.Backend, error) {
	threads := 0
	if local := localWorldSize(); local > 1 && !strings.HasPrefix(acc.Device(), "cuda") {
		threads = max(1, runtime.NumCPU()/local)
	}
	return Backend(acc.Device(), threads)
}

// localWorldSize is the number of processes of the launch on this machine.
func localWorldSize() int {
	n, _ := strconv.Atoi(os.Getenv(launchenv.LocalWorldSize))
	return n
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// catch runs f and turns a panic (GoMLX reports graph-building errors by
// panicking) into an error.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			interrupt.Repanic(r) // an interrupted cell stops; it gets no error
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	f()
	return nil
}

// moduleVersion matches the version in a source path of a module
// (".../gomlx@v0.26.0/..." in the module cache or a -trimpath build).
var moduleVersion = regexp.MustCompile(`github\.com/gomlx/gomlx@(v[^/\\]+)`)

// linkedGoMLXVersion is the version of GoMLX this process runs, read from
// the source path of one of its functions ("" when GoMLX comes from a
// directory, e.g. a replace, which names no version).
func linkedGoMLXVersion() string {
	fn := runtime.FuncForPC(reflect.ValueOf(graph.Add).Pointer())
	if fn == nil {
		return ""
	}
	file, _ := fn.FileLine(fn.Entry())
	if m := moduleVersion.FindStringSubmatch(file); m != nil {
		return m[1]
	}
	return ""
}

// checkVersion refuses a GoMLX other than the one this package is written
// against.
func checkVersion() error {
	if v := linkedGoMLXVersion(); v != "" && v != GoMLXVersion {
		return fmt.Errorf("gomlx: this session uses GoMLX %s, and goaccel's GoMLX adapter is written against %s: "+
			"run `%%go get github.com/gomlx/gomlx@%s` and restart the kernel", v, GoMLXVersion, GoMLXVersion)
	}
	return nil
}
