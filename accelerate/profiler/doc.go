// Package profiler is goaccel's counterpart of torch.profiler as
// Accelerate's ProfileKwargs and Accelerator.profile() use it.
//
//	p, err := profiler.Build(kw, profiler.Options{ProcessIndex: rank})
//	p.Start()
//	for step := range steps {
//	    end := p.RecordFunction("forward")
//	    forward()
//	    end()
//	    p.Step()
//	}
//	p.Stop()
//	p.Export(kw.OutputTraceDir) // profile_{rank}.json + profile_{rank}.pb.gz
//
// The schedule (kwargs.Schedule: wait, warmup, active, repeat, skip_first)
// decides which steps are recorded, exactly as torch.profiler.schedule
// ([ScheduleAction]); without one every step is recorded. During recorded
// steps the profiler keeps the spans opened with RecordFunction / Span (start,
// duration, goroutine id; plus input shapes, FLOPs, module names, caller
// stack and Go heap deltas when record_shapes, with_flops, with_modules,
// with_stack and profile_memory ask for them), a "ProfilerStep#N" span per
// step, and, with the "cpu" activity, a runtime/pprof CPU profile per
// recording cycle. At the end of each cycle on_trace_ready is called.
//
// Export writes the spans as a Chrome trace (traceEvents of "X" events, ts
// and dur in microseconds, pid = process index, tid = goroutine id; open it
// in https://ui.perfetto.dev or chrome://tracing) and the CPU profile for
// `go tool pprof`. Go has one CPU profiler per process: when another is
// running (a second profiler, `go test -cpuprofile`), the cycle gets no CPU
// profile and Warnings says so.
//
// The "cuda" activity needs a GPU (Build fails without one) and adds no GPU
// kernel events: goaccel has no CUPTI binding.
package profiler
