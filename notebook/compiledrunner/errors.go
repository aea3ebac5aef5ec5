package compiledrunner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/check"
	"github.com/goaccel/goaccel/notebook/compiled"
	"github.com/goaccel/goaccel/notebook/gxrt"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// compiledError turns what a compiled run returned into the cell's error.
func (r *Runner) compiledError(err error, src string, count int) *frontend.Error {
	var ce *check.Error
	var be *compiled.BuildError
	var p *compiled.Panic
	var ex *compiled.Exit
	var stuck *compiled.Stuck
	var ie *build.ImportError
	switch {
	case errors.As(err, &ce):
		lines := ce.Lines(func(n int) string {
			if n == count {
				return src
			}
			return r.comp.Checker().Source(n)
		})
		if ierr := r.importFailure(ce, lines); ierr != nil {
			return ierr
		}
		name := "CompileError"
		if len(ce.Diags) > 0 && ce.Diags[0].Syntax {
			name = "SyntaxError"
		}
		return &frontend.Error{Name: name, Value: ce.Error(), Traceback: lines}
	case errors.As(err, &ie):
		msg := ie.Error()
		return &frontend.Error{Name: "ImportError", Value: msg, Traceback: []string{msg}}
	case errors.As(err, &be):
		msg := "goaccel could not compile this cell: " + mapGenerated(be.Err.Error())
		tb := []string{msg, "(this is a limit of goaccel's translation of cells to Go packages, not an error in the cell; see LANGUAGE.md)"}
		return &frontend.Error{Name: "BuildError", Value: msg, Traceback: tb}
	case errors.As(err, &p):
		return panicReport(p, r.comp.Locate)
	case errors.As(err, &ex):
		if ex.Code == 0 {
			return nil
		}
		msg := fmt.Sprintf("exit status %d", ex.Code)
		return &frontend.Error{Name: "Exit", Value: msg, Traceback: []string{"os.Exit(" + strconv.Itoa(ex.Code) + "): " + msg + " (the cell stopped; the kernel and its state live on)"}}
	case errors.As(err, &stuck):
		return stuckReport(stuck)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return session.ErrInterrupted()
	}
	msg := err.Error()
	return &frontend.Error{Name: "BuildError", Value: msg, Traceback: []string{msg}}
}

// stuckReport is the error of an interrupted cell whose goroutines did not
// all stop: each is named with what it is doing and where.
func stuckReport(stuck *compiled.Stuck) *frontend.Error {
	n := len(stuck.Goroutines)
	msg := "interrupted, but the cell's goroutine is blocked where it cannot be stopped (a system call, a cgo call, or library code without safe points) and keeps running in the background; it stops when it comes back to code that checks for interrupts (%jobs shows it, %jobs wait waits for it). The state of earlier cells is kept."
	if n != 1 {
		msg = fmt.Sprintf("interrupted, but %d of the cell's goroutines are blocked where they cannot be stopped (a system call, a cgo call, or library code without safe points) and keep running in the background; each stops when it comes back to code that checks for interrupts (%%jobs shows them, %%jobs wait waits for them). The state of earlier cells is kept.", n)
	}
	tb := []string{"Interrupted: " + msg}
	for _, g := range stuck.Goroutines {
		tb = append(tb, "")
		tb = append(tb, goroutineHeader(g)+":")
		tb = append(tb, stackFrames(g.Stack)...)
	}
	return &frontend.Error{Name: "Interrupted", Value: msg, Traceback: tb}
}

// goroutineHeader describes a cell's goroutine in one line: what it
// waits for, which cell started it where, where it is now.
func goroutineHeader(g compiled.CellGoroutine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "goroutine %d [%s]", g.ID, g.State)
	cell := "a cell"
	if g.Cell > 0 {
		cell = fmt.Sprintf("cell[%d]", g.Cell)
	}
	if g.Origin != "" {
		b.WriteString(" started by " + cell + " at " + g.Origin)
	} else {
		b.WriteString(" running " + cell)
	}
	if g.Stopped {
		b.WriteString(" (interrupted, not stopped yet)")
	}
	if g.Where != "" {
		b.WriteString("; now at " + g.Where + " in " + cellFuncName(g.Func))
	}
	return b.String()
}

// cellFuncName names a function of a cell's package as the cell named it.
func cellFuncName(fn string) string {
	fn = cellFramePkg.ReplaceAllString(fn, "main.")
	fn = strings.ReplaceAll(fn, "_gxE_", "")
	fn = strings.ReplaceAll(fn, "Gxm_", "")
	fn = strings.ReplaceAll(fn, "._gxb_", ".")
	for _, body := range []string{"main._gxrun", "main._gxinit"} {
		if rest, ok := strings.CutPrefix(fn, body); ok && (rest == "" || rest[0] == '(' || rest[0] == '.') {
			fn = "main.<cell>" + rest
		}
	}
	return fn
}

// stackFrames are the frames of a goroutine's stack (as runtime.Stack
// prints it) down to where goaccel started it: cell functions named as the
// cell named them, offsets and goaccel's runtime left out.
func stackFrames(stack string) []string {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	var out []string
	for i := 1; i+1 < len(lines); i += 2 {
		fn, loc := lines[i], strings.TrimSpace(lines[i+1])
		if isFrameBottom(fn) {
			break
		}
		if strings.Contains(fn, "notebook/gxrt.") || strings.Contains(loc, "goaccel-generated") {
			continue
		}
		if j := strings.LastIndex(loc, " +0x"); j > 0 {
			loc = loc[:j]
		}
		if j := strings.LastIndexByte(fn, '('); j > 0 {
			fn = fn[:j] + "(...)"
		}
		out = append(out, cellFuncName(fn), "\t"+loc)
	}
	return out
}

// isFrameBottom reports the frame of goaccel's that runs a cell's code or
// one of its goroutines: the frames below it are not the cell's.
func isFrameBottom(fn string) bool {
	return strings.Contains(fn, "notebook/compiled.") || strings.Contains(fn, "notebook/gxrt.Go") || strings.Contains(fn, "notebook/gxrt.start")
}

// generatedPos matches positions in the generated package's file.
var generatedPos = regexp.MustCompile(`\S*/cell\.go:\d+:\d+: `)

func mapGenerated(s string) string { return generatedPos.ReplaceAllString(s, "") }

// panicValue formats a panic value as Go's runtime prints it (the address
// Go prints for composite values gives way to the value).
func panicValue(v any) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	case string:
		return x
	case nil:
		return "nil"
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr, float32, float64, complex64, complex128:
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("(%T) %+v", v, v)
}

// panicReport is the error of a cell that panicked: Go's first line and
// the frames of cell code, innermost first.
func panicReport(p *compiled.Panic, locate func(string, *compiled.Panic) string) *frontend.Error {
	val := panicValue(p.Value)
	head := "panic: " + val
	name := "panic"
	if so, ok := p.Value.(gxrt.StackOverflow); ok {
		// Go would end the program here; the guard ended only the cell.
		name = "StackOverflow"
		head = fmt.Sprintf("runtime: goroutine stack exceeds %d-byte limit\nfatal error: stack overflow (goaccel stopped the cell; the session lives on)", so.Limit)
	}
	if err, ok := p.Value.(error); ok && isRuntimeError(err) && strings.Contains(val, "nil pointer") {
		head += "\n[signal SIGSEGV: segmentation violation]"
	}
	tb := []string{head, ""}
	frames := cellFrames(string(p.Stack))
	// The innermost cell frame gets a column.
	for i := 1; i < len(frames); i += 2 {
		if loc := strings.TrimPrefix(frames[i], "\t"); strings.HasPrefix(loc, "cell[") {
			frames[i] = "\t" + locate(loc, p)
			break
		}
	}
	if p.Goroutine {
		tb = append(tb, "goroutine started by the cell [running]:")
	} else {
		tb = append(tb, "goroutine [running]:")
	}
	tb = append(tb, frames...)
	return &frontend.Error{Name: name, Value: val, Traceback: tb}
}

func isRuntimeError(err error) bool {
	type runtimeError interface{ RuntimeError() }
	var re runtimeError
	return errors.As(err, &re)
}

// cellFramePkg matches the package path part of a cell function's name.
var cellFramePkg = regexp.MustCompile(`goaccel\.cells/(?:[^/\s]+/)*c[0-9a-f]+(?:_\d+)?\.`)

// cellFrames extracts from a goroutine's stack the frames from the panic
// down to the cell's own code, with cell functions named as the cell named
// them (main.f) and offsets dropped.
func cellFrames(stack string) []string {
	lines := strings.Split(strings.TrimRight(stack, "\n"), "\n")
	var out []string
	started := false
	for i := 1; i+1 < len(lines); i += 2 {
		fn, loc := lines[i], strings.TrimSpace(lines[i+1])
		if !started {
			if strings.HasPrefix(fn, "panic(") {
				started = true
			}
			continue
		}
		if isFrameBottom(fn) {
			break
		}
		if strings.Contains(fn, "notebook/gxrt.") || strings.Contains(loc, "goaccel-generated") {
			continue
		}
		if i := strings.LastIndex(loc, " +0x"); i > 0 {
			loc = loc[:i]
		}
		out = append(out, cellFuncName(fn), "\t"+loc)
	}
	if !started {
		return nil
	}
	return out
}
