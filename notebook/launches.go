package notebook

import (
	"context"
)

// Prepare implements launcher.Session (see package launch).
func (e *Engine) Prepare(fn any, args []any) ([]byte, error) { return e.launches.Prepare(fn, args) }

// DecodeResults implements launcher.Session (see package launch).
func (e *Engine) DecodeResults(payload []byte, rank int, encoded []byte) ([]any, error) {
	return e.launches.DecodeResults(payload, rank, encoded)
}

// Run implements launcher.WorkerRuntime (see package launch): in a worker
// process, rebuild the session from the payload and call the function.
func (e *Engine) Run(ctx context.Context, payload []byte) ([]byte, error) {
	return e.launches.Run(ctx, payload)
}

// launchHooks hands what interpreted cells report about launches to the
// launch session (yaegirunner.Launches), which exists once the runners do.
type launchHooks struct{ e *Engine }

func (h launchHooks) Name(name string, fn any) any { return h.e.launches.Name(name, fn) }
func (h launchHooks) Decode(name string, ptr any)  { h.e.launches.Decode(name, ptr) }
func (h launchHooks) Result(i int, v any)          { h.e.launches.Result(i, v) }
func (h launchHooks) ResultErr(msg string)         { h.e.launches.ResultErr(msg) }
