package compiledrunner

import (
	"context"
	"errors"
	"regexp"
	"strconv"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/check"
)

// Mapped says where the lines of code the engine generated around a
// cell's text were written: line i (from 1) of the generated source is
// line Lines[i] of cell Cell (0: nowhere in it), at the same columns, and
// Src is the cell's text. Errors in such code read as the cell's.
type Mapped struct {
	Cell  int
	Src   string
	Lines []int
}

// BuildValue builds src, one expression, as Go code (never the evaluator:
// %timeit times what Go compiled) that binds nothing, runs it, and
// returns its value.
func (r *Runner) BuildValue(ctx context.Context, src string, m Mapped) (any, *frontend.Error) {
	r.applyGoWork(ctx)
	done := r.builder.Attend(ctx, r.progress)
	res, err := r.comp.RunBuilt(ctx, src, 0, r.progress)
	done()
	r.opts.Flush()
	if err != nil {
		return nil, r.mappedError(err, m)
	}
	if len(res.Values) != 1 {
		return nil, &frontend.Error{Name: "InternalError", Value: "goaccel: the generated expression has no value"}
	}
	return res.Values[0], nil
}

// Call runs fn as a cell's code runs: an interrupt stops the compiled code
// it calls, and a panic or os.Exit there (or in a goroutine it starts)
// ends it as it would end a cell.
func (r *Runner) Call(ctx context.Context, fn func(), m Mapped) *frontend.Error {
	err := r.comp.Call(ctx, m.Cell, fn)
	r.opts.Flush()
	if err != nil {
		return r.mappedError(err, m)
	}
	return nil
}

// cellZeroPos is a position in code run as cell 0, in messages and stacks.
var cellZeroPos = regexp.MustCompile(`cell\[0\]:(\d+)`)

// mappedError is compiledError for generated code: its positions moved
// to the cell's lines.
func (r *Runner) mappedError(err error, m Mapped) *frontend.Error {
	at := func(line int) int {
		if line >= 0 && line < len(m.Lines) {
			return m.Lines[line]
		}
		return 0
	}
	var ce *check.Error
	if errors.As(err, &ce) {
		moved := *ce
		moved.Diags = append([]check.Diag(nil), ce.Diags...)
		for i, d := range moved.Diags {
			if d.Pos.Filename == check.FileName(0) && at(d.Pos.Line) > 0 {
				moved.Diags[i].Pos.Filename = check.FileName(m.Cell)
				moved.Diags[i].Pos.Line = at(d.Pos.Line)
			}
		}
		err = &moved
	}
	fe := r.compiledError(err, m.Src, m.Cell)
	if fe == nil {
		return nil
	}
	move := func(s string) string {
		return cellZeroPos.ReplaceAllStringFunc(s, func(p string) string {
			n, _ := strconv.Atoi(cellZeroPos.FindStringSubmatch(p)[1])
			if l := at(n); l > 0 {
				return check.FileName(m.Cell) + ":" + strconv.Itoa(l)
			}
			return p
		})
	}
	fe.Value = move(fe.Value)
	for i, l := range fe.Traceback {
		fe.Traceback[i] = move(l)
	}
	return fe
}
