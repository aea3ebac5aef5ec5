package commands

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/timeit"
)

// timeitMagic runs %timeit STATEMENT, or %%timeit [SETUP] with the
// cell's code below it as the statements: they become one function, built
// once as Go code, that the loop count is given to; the setup runs once
// per repetition, untimed. The session keeps nothing of it.
func timeitMagic(ctx context.Context, env Env, c *Cell, arg string) *frontend.Error {
	cmd := c.cmd
	whole := cmd.Name() == "%timeit"
	name := "%timeit"
	if whole {
		name = "%%timeit"
		if cmd.Line != 1 {
			return Errorf("%%%%timeit must be the cell's first line (the cell below it is what is timed)")
		}
	}
	comp := env.Compiled()
	if comp == nil {
		return Errorf("%s: cells are interpreted here (%s); %%time times a cell once", name, env.Interpreted())
	}
	opts, rest, err := timeit.ParseArgs(arg)
	if err != nil {
		return Errorf("%s: %v", name, err)
	}
	lines := strings.Split(c.Src, "\n")
	// The statement in the cell's own text, at its own column.
	placed := func(text string) string {
		if text == "" || cmd.Line > len(lines) {
			return ""
		}
		l := lines[cmd.Line-1]
		at := strings.Index(l, "timeit")
		if at < 0 {
			return ""
		}
		i := strings.Index(l[at:], text)
		if i < 0 {
			return strings.Repeat("\n", cmd.Line-1) + text
		}
		return strings.Repeat("\n", cmd.Line-1) + strings.Repeat(" ", at+i) + text
	}
	setup, stmts := "", placed(strings.TrimSpace(arg[rest:]))
	if whole {
		setup, stmts = stmts, c.Code
		c.Timed = true // the cell's code is what was timed
	}
	if strings.TrimSpace(stmts) == "" {
		return Errorf("%s: nothing to time (%s)", name, timeit.Usage)
	}
	code := timeit.Source(setup, stmts)
	m := Mapped{Cell: c.Count, Src: c.Src, Lines: code.CellLine}
	v, ferr := comp.BuildValue(ctx, code.Src, m)
	if ferr != nil {
		return ferr
	}
	fn, ok := v.(timeit.Func)
	if !ok {
		return Errorf("%s: internal error: the timed function is a %T", name, v)
	}
	var callErr *frontend.Error
	timer := func(n int) (time.Duration, error) {
		var start time.Time
		var took time.Duration
		callErr = comp.Call(ctx, func() {
			fn(n, func() { start = time.Now() })
			took = time.Since(start)
		}, m)
		if callErr != nil {
			return 0, errTimedFailed
		}
		return took, nil
	}
	n := opts.Number
	if n == 0 {
		if n, err = timeit.Autorange(timer); err != nil {
			return callErr
		}
	}
	r := timeit.Result{Loops: n, Precision: opts.Precision}
	for range opts.Repeat {
		d, err := timer(n)
		if err != nil {
			return callErr
		}
		r.Runs = append(r.Runs, d)
	}
	if !opts.Quiet {
		if w := r.CachingWarning(); w != "" {
			stdout(env, w+"\n")
		}
		stdout(env, r.String()+"\n")
	}
	if opts.Return {
		c.Result = frontend.MIMEBundle{"text/plain": "<TimeitResult : " + r.String() + ">"}
	}
	return nil
}

// errTimedFailed stands for the error a timed call reported (callErr).
var errTimedFailed = errors.New("the timed code failed")
