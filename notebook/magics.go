package notebook

// The engine's side of a cell's commands (package commands): the
// registry routes them, cmdEnv gives them what they need of the engine.

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/autoimport"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/commands"
	"github.com/goaccel/goaccel/notebook/compiledrunner"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// Help is the text of %help.
func (e *Engine) Help() string { return e.cmds.Help() }

// cmdEnv is commands.Env for the cell that runs.
type cmdEnv struct {
	e *Engine
	c *session.Cell
}

func (v cmdEnv) Write(stream string, p []byte) { v.e.out.Write(stream, p) }
func (v cmdEnv) Publish(data frontend.MIMEBundle) {
	v.e.gonb.publish(data, nil, "", false)
}
func (v cmdEnv) Flush() { v.e.flushOutput() }
func (v cmdEnv) Input(ctx context.Context, prompt string, password bool) (string, error) {
	return v.c.IO.Input(ctx, prompt, password)
}
func (v cmdEnv) Version() string                     { return v.e.opts.Version }
func (v cmdEnv) Declarations() []session.Declaration { return v.e.Declarations() }
func (v cmdEnv) Values() []session.Var               { return v.e.runnerFor().Values() }
func (v cmdEnv) Evaluate(ctx context.Context, expr string) (any, *frontend.Error) {
	res, err := v.e.runnerFor().Evaluate(ctx, v.c, expr)
	if err != nil {
		return nil, err
	}
	if res == nil || len(res.Values) != 1 {
		return nil, magicError("%s: no value", expr)
	}
	return res.Values[0], nil
}
func (v cmdEnv) Reset() error { return v.e.reset() }
func (v cmdEnv) Compiled() commands.Compiled {
	if v.e.compiled == nil {
		return nil
	}
	return compiledCmds{v.e.compiled, v.e.log}
}
func (v cmdEnv) Interpreted() string {
	if v.e.compErr == nil {
		return ""
	}
	return v.e.compReason()
}
func (v cmdEnv) GonbDir() string { return v.e.gonb.dir }
func (v cmdEnv) Widgets() bool {
	v.e.gonb.needFrontend()
	return v.e.gonb.front.WaitConnected(frontendWait)
}
func (v cmdEnv) Heartbeat() bool  { return v.e.gonb.front.Heartbeat(heartbeatWait) }
func (v cmdEnv) KernelID() string { return v.e.opts.KernelID }

// compiledCmds is commands.Compiled: the compiled runner, and the log its
// %rm keeps in step.
type compiledCmds struct {
	r   *compiledrunner.Runner
	log *session.Log
}

func (c compiledCmds) Builder() *build.Builder { return c.r.Builder() }
func (c compiledCmds) Resolve(ctx context.Context, name, src string) string {
	p, err := c.r.Resolver().Resolve(ctx, name, autoimport.Selectors(src, name))
	if err != nil {
		return ""
	}
	return p
}
func (c compiledCmds) Forget(name string) (string, bool) {
	kind, ok := c.r.Forget(name)
	if ok {
		c.log.Forget(name)
	}
	return kind, ok
}
func (c compiledCmds) Goroutines() string { return c.r.Goroutines() }
func (c compiledCmds) Jobs() string       { return c.r.Jobs() }
func (c compiledCmds) WaitJobs(ctx context.Context, say func(string)) error {
	return c.r.WaitJobs(ctx, say)
}
func (c compiledCmds) BuildValue(ctx context.Context, src string, m commands.Mapped) (any, *frontend.Error) {
	return c.r.BuildValue(ctx, src, compiledrunner.Mapped(m))
}
func (c compiledCmds) Call(ctx context.Context, fn func(), m commands.Mapped) *frontend.Error {
	return c.r.Call(ctx, fn, compiledrunner.Mapped(m))
}

// heartbeatWait is how long %widgets_hb waits for the browser's answer.
const heartbeatWait = time.Second

// runnerFor is the runner that holds the session's values: the compiled
// one when there is one (also while the debugger has cells interpreted).
func (e *Engine) runnerFor() session.Runner {
	if e.compiled != nil {
		return e.compiled
	}
	return e.interp
}

func magicError(format string, a ...any) *frontend.Error { return commands.Errorf(format, a...) }

var helpRE = regexp.MustCompile(`^\s*([\p{L}_][\p{L}\p{N}_]*(?:\.[\p{L}_][\p{L}\p{N}_]*)*)\s*(\?\??)\s*$`)

// helpRequest recognizes "name?" and "name??" (also "?name").
func helpRequest(code string) (name string, detail int, ok bool) {
	c := strings.TrimSpace(code)
	if strings.HasPrefix(c, "?") && !strings.HasSuffix(c, "?") {
		q := strings.TrimLeft(c, "?")
		c = q + c[:len(c)-len(q)]
	}
	m := helpRE.FindStringSubmatch(c)
	if m == nil {
		return "", 0, false
	}
	return m[1], len(m[2]) - 1, true
}
