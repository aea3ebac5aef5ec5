package notebook

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/input"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook/commands"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/gxrt"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Execute runs one cell: its magics, then its Go code on the runner the
// engine picks for it (runCell), and makes the reply.
func (e *Engine) Execute(ctx context.Context, req frontend.ExecuteRequest, cio frontend.CellIO) (reply frontend.ExecuteReply) {
	e.execMu.Lock()
	defer e.execMu.Unlock()
	e.mu.RLock()
	closed := e.closed
	e.mu.RUnlock()
	if closed {
		return frontend.ExecuteReply{Err: &frontend.Error{Name: "EngineClosed", Value: "the Go engine was closed"}}
	}
	tio := commands.NewTee(cio) // %capture
	cio = tio
	c := session.NewCell(ctx, cio, req.AllowStdin, req.ExecutionCount)
	c.BeforeStdin = e.gonb.drain
	defer c.End()
	ctx = c.Ctx
	e.cells.Start(c)
	gxrt.ResetStdin()
	e.out.SetDest(cio)
	restoreDisplay := display.SetSink(orderedSink{cio, e.flushOutput})
	restoreInput := input.SetSource(c.Ask)
	restoreLaunch := launcher.SetCell(ctx, orderedSink{cio, e.flushOutput})
	defer func() {
		// A cell stopped by a guard (endless recursion) says so.
		if stopErr := c.StopError(); stopErr != nil && reply.Err != nil && reply.Err.Name == "Interrupted" {
			reply.Err = stopErr
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			reply = frontend.ExecuteReply{Err: &frontend.Error{
				Name:      "InternalError",
				Value:     fmt.Sprintf("goaccel: internal error: %v", r),
				Traceback: strings.Split(string(debug.Stack()), "\n"),
			}}
		}
		e.gonb.drain()
		e.flushOutput()
		gxrt.SetMainHook(nil)
		tio.Close()
		restoreLaunch()
		restoreInput()
		restoreDisplay()
	}()

	e.recordCode(req.ExecutionCount, req.Code)
	e.syncDebugger()
	gc, perr := gonb.Parse(req.Code)
	if perr != nil {
		return frontend.ExecuteReply{Err: magicError("%v", perr)}
	}
	env := cmdEnv{e: e, c: c}
	if gc.Magic != nil {
		return frontend.ExecuteReply{Err: e.cmds.RunCellMagic(ctx, env, gc.Magic)}
	}
	st := &commands.Cell{Src: req.Code, Code: gc.Code, Count: req.ExecutionCount, AllowStdin: req.AllowStdin, Tee: tio,
		Quiet: strings.TrimSpace(gc.Code) != "" || len(gc.Commands) > 1 || gc.Main != nil}
	code := gc.Code
	if len(gc.Inits) > 0 {
		// GoNB's init_NAME functions are init functions: they run when
		// their cell runs, before its statements finish (and before main).
		code += "\n" + strings.Join(gc.Inits, "(); ") + "()"
	}
	for _, cmd := range gc.Commands {
		if err := e.cmds.Run(ctx, env, st, cmd); err != nil {
			return frontend.ExecuteReply{Err: err, Payload: reply.Payload}
		}
	}
	for _, sp := range st.Splices {
		code = spliceLine(code, sp.Line, sp.Code)
	}
	if st.Result != nil {
		reply.Result = st.Result
	}
	timed := st.Time
	if st.Timed {
		code = "" // %%timeit ran it
	}
	if gc.Main != nil {
		// GoNB's %% ARGS: the arguments of this run (and the next ones,
		// until %args or another %%), parsed by flag.Parse before main.
		commands.SetArgs(gc.Main.Args)
		gxrt.SetMainHook(gxrt.FlagParse)
	}
	if st.Wasm {
		reply.Err = e.cmds.RunWasm(ctx, env, st, code, gc.Main)
		return reply
	}
	start := time.Now()
	if strings.TrimSpace(code) != "" {
		if name, detail, ok := helpRequest(code); ok {
			if p := e.help(name, detail); p != nil {
				reply.Payload = append(reply.Payload, p)
			} else {
				cio.Stream("stdout", fmt.Sprintf("Object `%s` not found.\n", name))
			}
		} else {
			res, err := e.runCell(ctx, c, code)
			if err != nil {
				if timed {
					e.out.Write("stdout", []byte(fmt.Sprintf("Wall time: %v\n", roundDuration(time.Since(start)))))
				}
				return frontend.ExecuteReply{Err: err, Payload: reply.Payload}
			}
			if res != nil {
				reply.Result = res
			}
		}
	}
	if timed {
		e.out.Write("stdout", []byte(fmt.Sprintf("Wall time: %v\n", roundDuration(time.Since(start)))))
	}
	if err := commands.RunTests(ctx, env, st); err != nil {
		return frontend.ExecuteReply{Err: err, Payload: reply.Payload}
	}
	if len(req.UserExpressions) > 0 {
		reply.UserExpressions = e.userExpressions(ctx, c, req.UserExpressions)
	}
	if req.Silent {
		reply.Result = nil
	}
	return reply
}

// runCell runs the Go code of cell c on the runner that fits: compiled
// cells while plugins can be built and no breakpoint asks for the
// interpreter, the interpreter otherwise. It returns the trailing
// expression's MIME bundle (nil when there is none).
func (e *Engine) runCell(ctx context.Context, c *session.Cell, code string) (frontend.MIMEBundle, *frontend.Error) {
	res, err := e.runner(ctx, c).Run(ctx, c, code)
	if err != nil {
		return nil, err
	}
	return formatResult(res), nil
}

// runner picks the runner for cell c.
func (e *Engine) runner(ctx context.Context, c *session.Cell) session.Runner {
	if e.compiled != nil && !e.debugMode(ctx, c) {
		return e.compiled
	}
	e.noteInterpreted()
	return e.interp
}

// evalExpr evaluates a user expression: against the compiled session when
// there is one (also while the debugger has cells interpreted).
func (e *Engine) evalExpr(ctx context.Context, c *session.Cell, expr string) (frontend.MIMEBundle, *frontend.Error) {
	var r session.Runner = e.interp
	if e.compiled != nil {
		r = e.compiled
	}
	res, err := r.Evaluate(ctx, c, expr)
	if err != nil {
		return nil, err
	}
	return formatResult(res), nil
}

// formatResult is the MIME bundle of a runner's result (nil for none).
func formatResult(res *session.Result) frontend.MIMEBundle {
	switch {
	case res == nil:
		return nil
	case res.Bundle != nil:
		return res.Bundle
	case len(res.Values) == 0:
		return nil
	}
	return resultBundle(res.Values, res.Multi)
}

// noteInterpreted tells the user, once per session, that cells are
// interpreted because they cannot be compiled here, and why.
func (e *Engine) noteInterpreted() {
	if e.opts.Interpret || e.compErr == nil || e.interpNoted {
		return
	}
	e.interpNoted = true
	e.out.Stderr(fmt.Sprintf("goaccel: cells are interpreted (yaegi), not compiled: %v\n", e.compErr))
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d
}

// userExpressions evaluates each expression as a cell's trailing
// expression.
func (e *Engine) userExpressions(ctx context.Context, c *session.Cell, exprs map[string]string) map[string]any {
	out := make(map[string]any, len(exprs))
	keys := make([]string, 0, len(exprs))
	for k := range exprs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		res, err := e.evalExpr(ctx, c, exprs[k])
		if err != nil {
			out[k] = map[string]any{"status": "error", "ename": err.Name, "evalue": err.Value, "traceback": nonNil(err.Traceback)}
			continue
		}
		if res == nil {
			res = frontend.MIMEBundle{}
		}
		out[k] = map[string]any{"status": "ok", "data": res, "metadata": map[string]any{}}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// getenvOr is os.Getenv with a default.
func getenvOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// spliceLine replaces line n (1-based) of code with text.
func spliceLine(code string, n int, text string) string {
	lines := strings.Split(code, "\n")
	if n < 1 || n > len(lines) {
		return code
	}
	lines[n-1] = text
	return strings.Join(lines, "\n")
}

// orderedSink is the display sink of a running cell: it sends pending
// stream text before each display message, so output appears in the order
// the cell produced it.
type orderedSink struct {
	frontend.CellIO
	flush func()
}

func (o orderedSink) Display(data frontend.MIMEBundle, md map[string]any, id string) {
	o.flush()
	o.CellIO.Display(data, md, id)
}

func (o orderedSink) UpdateDisplay(data frontend.MIMEBundle, md map[string]any, id string) {
	o.flush()
	o.CellIO.UpdateDisplay(data, md, id)
}

func (o orderedSink) ClearOutput(wait bool) {
	o.flush()
	o.CellIO.ClearOutput(wait)
}

// flushOutput sends everything the cell wrote so far: what compiled code
// wrote to fds 1/2, drained from the capture pipes (the rest of the cell's
// output goes straight to the CellIO).
func (e *Engine) flushOutput() {
	if e.opts.Capture != nil {
		e.opts.Capture.Drain(flushWait)
	}
}

// flushWait guards flushOutput against a capture that no longer forwards
// anything; it is not a budget. The drain ends as soon as what was written
// before it has been sent, which on a busy machine takes longer than any
// short limit: a limit of 50 ms let a program's last println lines arrive in
// the next cell.
const flushWait = 10 * time.Second
