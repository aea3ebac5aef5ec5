package accelerate

import (
	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/profiler"
)

// Profile is Accelerate's profile context manager: it builds a profiler
// from handler (nil: the ProfileKwargs passed to WithKwargsHandlers, else
// the defaults), with this process's rank and whether it is on the GPU path,
// starts it, runs fn, stops it and, when OutputTraceDir is set, exports
// profile_{process_index}.json (Chrome trace) and profile_{process_index}.pb.gz
// (pprof CPU profile) there and then waits for every process
// (WaitForEveryone), as Accelerate does; every process must then call it.
// The profiler is returned even when fn fails; fn's error is returned after
// the export, and the wait is skipped (the other processes may be waiting
// for a collective this one will not run).
func (a *Accelerator) Profile(handler *kwargs.ProfileKwargs, fn func(p *profiler.Profiler) error) (*profiler.Profiler, error) {
	k := a.handlers.Profile()
	if handler != nil {
		k = *handler
	}
	p, err := profiler.Run(k, profiler.Options{ProcessIndex: a.ProcessIndex(), GPUAvailable: !a.UseCPU()}, fn)
	if err != nil {
		return p, err
	}
	if k.OutputTraceDir != "" {
		if err := a.WaitForEveryone(); err != nil {
			return p, err
		}
	}
	return p, nil
}
