package yaegirunner

import (
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"regexp"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/dap"
)

// posRE matches a position in a yaegi message: "cell[3]/_.go:2:5" (possibly
// with a directory prefix yaegi added) or "_.go:2:5".
var posRE = regexp.MustCompile(`(?:[^\s:]*/)?((?:cell\[\d+\])|user_expression|kind_query|goaccel)/_\.go:(\d+):(\d+)`)

// mapPositions rewrites yaegi's file positions to "cell[N]:line:col".
func mapPositions(s string) string {
	return posRE.ReplaceAllString(decodedPositions(s), "$1:$2:$3")
}

// shortPos formats a position of a cell.
func shortPos(p token.Position) string {
	return mapPositions(fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column))
}

// sourceLines shows line of src with a caret under col.
func sourceLines(src string, line, col int) []string {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) {
		return nil
	}
	l := strings.TrimRight(lines[line-1], "\r")
	prefix := fmt.Sprintf("%4d | ", line)
	caret := strings.Repeat(" ", len(prefix))
	for i, r := range l {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			caret += "\t"
		} else {
			caret += " "
		}
	}
	return []string{prefix + l, caret + "^"}
}

// firstPos finds the first cell position in msg.
func firstPos(msg string) (line, col int, ok bool) {
	m := posRE.FindStringSubmatch(msg)
	if m == nil || !strings.HasPrefix(m[1], "cell[") {
		return 0, 0, false
	}
	line, _ = strconv.Atoi(m[2])
	col, _ = strconv.Atoi(m[3])
	if line >= dap.LineBase {
		return 0, 0, false // a declaration the debugger replayed: not this cell's
	}
	return line, col, true
}

// compileError converts a go/parser error.
func compileError(err error, src string) *frontend.Error {
	var list scanner.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		// An error at the end of the wrapper (an unclosed bracket) is
		// reported at the end of the cell.
		lines := strings.Split(src, "\n")
		for _, el := range list {
			if strings.HasPrefix(el.Pos.Filename, "cell[") && el.Pos.Line > len(lines) {
				el.Pos.Line = len(lines)
				el.Pos.Column = len(lines[len(lines)-1]) + 1
			}
		}
		var tb []string
		for i, el := range list {
			if i == 5 {
				tb = append(tb, fmt.Sprintf("(and %d more errors)", len(list)-5))
				break
			}
			msg := fmt.Sprintf("%s: %s", shortPos(el.Pos), el.Msg)
			tb = append(tb, msg)
			if i == 0 {
				tb = append(tb, sourceLines(src, el.Pos.Line, el.Pos.Column)...)
			}
		}
		return &frontend.Error{Name: "SyntaxError", Value: fmt.Sprintf("%s: %s", shortPos(list[0].Pos), list[0].Msg), Traceback: tb}
	}
	msg := mapPositions(err.Error())
	return &frontend.Error{Name: "SyntaxError", Value: msg, Traceback: []string{msg}}
}

// hints explain yaegi messages that say little by themselves.
var hints = []struct{ match, hint string }{
	{"nil type", "this may be a range over an integer or function goaccel could not recognize; write a 3-clause loop (for i := 0; i < n; i++)"},
	{"reflect: call of reflect.Value.Field on zero Value", "probably a nil pointer dereference"},
	{"reflect: call of reflect.Value.Elem on zero Value", "probably a nil pointer dereference"},
	{"invalid memory address or nil pointer dereference", "a nil pointer was dereferenced"},
	{"unable to find source related to", "only the standard library, goaccel's packages and the packages compiled into this kernel can be imported"},
	{"definition loop", "yaegi reports this for an undefined name on the right-hand side, or for a package-level initializer it cannot order"},
	{"redeclared in this block", "a name can be redefined in a later cell, but not twice in one cell"},
	{"cannot use type func(", "if this calls a generic function with a function literal, yaegi cannot infer its type parameters from it: give them explicitly, r.g. Map[int, string](xs, func(i int) string {...})"},
}

func hintFor(msg string) string {
	for _, h := range hints {
		if strings.Contains(msg, h.match) {
			return h.hint
		}
	}
	return ""
}

// toError converts an error from compiling or running a cell. name is the
// error name for non-panic errors ("" means a runtime error).
func (r *Runner) toError(err error, src, name string) *frontend.Error {
	var p interp.Panic
	if errors.As(err, &p) {
		return r.panicError(p, src)
	}
	msg := mapPositions(err.Error())
	if name == "" {
		name = "RuntimeError"
	}
	// yaegi adds a newline and a "previous declaration" line to some errors.
	first, _, _ := strings.Cut(msg, "\n")
	tb := []string{msg}
	if line, col, ok := firstPos(msg); ok {
		tb = append(tb, sourceLines(src, line, col)...)
	}
	if h := hintFor(msg); h != "" {
		tb = append(tb, "hint: "+h)
	}
	return &frontend.Error{Name: name, Value: first, Traceback: tb}
}

var exitRE = regexp.MustCompile(`^os\.Exit\((-?\d+)\)$`)

// panicError converts a panic of the cell, with the frames yaegi reported
// (on its stderr, diverted into the cell's trace) mapped to cell lines.
func (r *Runner) panicError(p interp.Panic, src string) *frontend.Error {
	cs := r.state()
	var trace []string
	if cs != nil {
		trace = cs.takeTrace()
	}
	val := fmt.Sprint(p.Value)
	if err, ok := p.Value.(error); ok {
		val = err.Error()
	}
	name := "panic"
	value := val
	if m := exitRE.FindStringSubmatch(val); m != nil {
		name = "Exit"
		value = fmt.Sprintf("os.Exit(%s) called: the cell stopped, the kernel and its state live on", m[1])
	}
	tb := []string{name + ": " + mapPositions(val)}
	if name == "panic" {
		tb[0] = "panic: " + mapPositions(val)
	}
	if h := hintFor(val); h != "" {
		tb = append(tb, "hint: "+h)
	}
	if len(trace) > 0 {
		tb = append(tb, "", "goroutine (interpreted frames, innermost first):")
		shown := false
		for _, l := range trace {
			m := panicLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			fn := strings.TrimPrefix(m[4], ": ")
			fn = strings.ReplaceAll(fn, "main."+mainName, "main.main")
			if fn == "main(...)" {
				fn = "cell"
			}
			loc := mapPositions(fmt.Sprintf("%s:%s:%s", m[1], m[2], m[3]))
			tb = append(tb, fmt.Sprintf("  %s\n      %s", fn, loc))
			if !shown && strings.HasPrefix(loc, "cell[") {
				if line, col, ok := firstPos(l); ok && cs != nil && strings.HasPrefix(loc, fmt.Sprintf("cell[%d]:", cs.cell.Count)) {
					for _, sl := range sourceLines(src, line, col) {
						tb = append(tb, "      "+sl)
					}
					shown = true
				}
			}
		}
	}
	return &frontend.Error{Name: name, Value: value, Traceback: tb}
}
