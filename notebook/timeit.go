package notebook

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/compiledrunner"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/timeit"
)

// timeit runs %timeit STATEMENT, or %%timeit [SETUP] (whole) with the
// cell's code below it as the statements: they become one function, built
// once as Go code, that the loop count is given to; the setup runs once
// per repetition, untimed. The session keeps nothing of it.
func (e *Engine) timeit(ctx context.Context, cmd gonb.Command, st *cellState, whole bool) (magicResult, *frontend.Error) {
	var res magicResult
	name := "%timeit"
	if whole {
		name = "%%timeit"
		if cmd.Line != 1 {
			return res, magicError("%%%%timeit must be the cell's first line (the cell below it is what is timed)")
		}
	}
	if e.compiled == nil {
		return res, magicError("%s: cells are interpreted here (%s); %%time times a cell once", name, e.compReason())
	}
	arg := cmd.Arg()
	opts, rest, err := timeit.ParseArgs(arg)
	if err != nil {
		return res, magicError("%s: %v", name, err)
	}
	lines := strings.Split(st.src, "\n")
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
		setup, stmts = stmts, st.code
		st.timed = true // the cell's code is what was timed
	}
	if strings.TrimSpace(stmts) == "" {
		return res, magicError("%s: nothing to time (%s)", name, timeit.Usage)
	}
	code := timeit.Source(setup, stmts)
	m := compiledrunner.Mapped{Cell: st.count, Src: st.src, Lines: code.CellLine}
	v, ferr := e.compiled.BuildValue(ctx, code.Src, m)
	if ferr != nil {
		return res, ferr
	}
	fn, ok := v.(timeit.Func)
	if !ok {
		return res, magicError("%s: internal error: the timed function is a %T", name, v)
	}
	var callErr *frontend.Error
	timer := func(n int) (time.Duration, error) {
		var start time.Time
		var took time.Duration
		callErr = e.compiled.Call(ctx, func() {
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
			return res, callErr
		}
	}
	r := timeit.Result{Loops: n, Precision: opts.Precision}
	for range opts.Repeat {
		d, err := timer(n)
		if err != nil {
			return res, callErr
		}
		r.Runs = append(r.Runs, d)
	}
	if !opts.Quiet {
		if w := r.CachingWarning(); w != "" {
			e.out.Write("stdout", []byte(w+"\n"))
		}
		e.out.Write("stdout", []byte(r.String()+"\n"))
	}
	if opts.Return {
		res.result = frontend.MIMEBundle{"text/plain": "<TimeitResult : " + r.String() + ">"}
	}
	return res, nil
}

// errTimedFailed stands for the error a timed call reported (callErr).
var errTimedFailed = errors.New("the timed code failed")
