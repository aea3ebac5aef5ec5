package dap

import (
	"fmt"
	"go/parser"
	"reflect"
	"strconv"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// breakRule is what a breakpoint asks beyond its line (DAP's condition,
// hitCondition and logMessage): whether a thread arriving at it stops, or
// logs and goes on.
type breakRule struct {
	cond  string // a Go expression of type bool, in the stopped frame
	hitOp string // ==, >=, >, <=, < or % (hit count modulo n is 0)
	hitN  int
	log   []logPart // a logpoint: printed, never stopped at
	hits  int       // arrivals so far (reset when the breakpoints are set again)
}

// logPart is literal text, or an expression whose value is interpolated
// ({expr} in a log message; {{ and }} are braces).
type logPart struct {
	text string
	expr bool
}

// none reports whether the rule asks nothing: the breakpoint just stops.
func (b *breakRule) none() bool { return b.cond == "" && b.hitOp == "" && b.log == nil }

// newBreakRule checks a breakpoint's condition, hit condition and log
// message; an error names what is wrong, for the client to show.
func newBreakRule(cond, hit, logMsg string) (*breakRule, error) {
	b := &breakRule{cond: strings.TrimSpace(cond)}
	if b.cond != "" {
		if _, err := parser.ParseExpr(b.cond); err != nil {
			return nil, fmt.Errorf("condition %q is not a Go expression: %v", b.cond, err)
		}
	}
	if hit = strings.TrimSpace(hit); hit != "" {
		op := "=="
		for _, o := range []string{"==", ">=", "<=", ">", "<", "%"} {
			if strings.HasPrefix(hit, o) {
				op, hit = o, strings.TrimSpace(hit[len(o):])
				break
			}
		}
		n, err := strconv.Atoi(hit)
		if err != nil || n < 0 || (op == "%" && n == 0) {
			return nil, fmt.Errorf("hit condition %q: want a count, optionally after ==, >=, >, <=, < or %% (as in \">= 3\" or \"%% 10\")", hit)
		}
		b.hitOp, b.hitN = op, n
	}
	if logMsg != "" {
		parts, err := parseLogMessage(logMsg)
		if err != nil {
			return nil, err
		}
		b.log = parts
	}
	return b, nil
}

// parseLogMessage splits a log message into text and {expressions}.
func parseLogMessage(msg string) ([]logPart, error) {
	parts := []logPart{}
	var text strings.Builder
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; {
		case (c == '{' || c == '}') && i+1 < len(msg) && msg[i+1] == c:
			text.WriteByte(c)
			i++
		case c == '{':
			end := strings.IndexByte(msg[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("log message %q: { without a closing }", msg)
			}
			expr := strings.TrimSpace(msg[i+1 : i+end])
			if _, err := parser.ParseExpr(expr); err != nil {
				return nil, fmt.Errorf("log message %q: {%s} is not a Go expression: %v", msg, expr, err)
			}
			if text.Len() > 0 {
				parts = append(parts, logPart{text: text.String()})
				text.Reset()
			}
			parts = append(parts, logPart{text: expr, expr: true})
			i += end
		default:
			text.WriteByte(c)
		}
	}
	if text.Len() > 0 {
		parts = append(parts, logPart{text: text.String()})
	}
	return parts, nil
}

// hitMet counts an arrival and reports whether the hit condition holds.
func (b *breakRule) hitMet() bool {
	b.hits++
	switch b.hitOp {
	case "==":
		return b.hits == b.hitN
	case ">=":
		return b.hits >= b.hitN
	case ">":
		return b.hits > b.hitN
	case "<=":
		return b.hits <= b.hitN
	case "<":
		return b.hits < b.hitN
	case "%":
		return b.hits%b.hitN == 0
	}
	return true
}

// ruleAtLocked is the rule of the breakpoint a thread stopped at, nil when
// it has none. Callers hold a.mu.
func (a *Adapter) ruleAtLocked(at location) *breakRule {
	n := cellOf(at.file)
	if n == 0 {
		return nil
	}
	return a.rules[a.cellPath[n]][at.line]
}

// decideLocked applies a breakpoint's rule to a thread that arrived at it:
// whether the thread stops, and the text for the client's console (a
// logpoint's line, or why a condition could not be evaluated: the thread
// then stops, as a debugger must not skip a breakpoint it cannot judge).
// Callers hold a.mu.
func (a *Adapter) decideLocked(b *breakRule, e *interp.DebugEvent) (stop bool, output string) {
	lookup := a.frameLookupLocked(e)
	if b.cond != "" {
		v, err := evaluate(b.cond, lookup)
		switch {
		case err != nil:
			return true, fmt.Sprintf("breakpoint condition %s: %v\n", b.cond, err)
		case v.Kind() != reflect.Bool:
			return true, fmt.Sprintf("breakpoint condition %s is a %s, not a bool\n", b.cond, v.Type())
		case !v.Bool():
			return false, ""
		}
	}
	if !b.hitMet() {
		return false, ""
	}
	if b.log == nil {
		return true, ""
	}
	var line strings.Builder
	for _, p := range b.log {
		if !p.expr {
			line.WriteString(p.text)
			continue
		}
		v, err := evaluate(p.text, lookup)
		if err != nil {
			fmt.Fprintf(&line, "{%v}", err)
			continue
		}
		if v.Kind() == reflect.String {
			line.WriteString(v.String()) // as fmt.Print shows it
		} else {
			line.WriteString(valueText(v))
		}
	}
	line.WriteByte('\n')
	return false, line.String()
}

// frameLookupLocked resolves names in the event's innermost frame, then in
// the running interpreter's globals. Callers hold a.mu.
func (a *Adapter) frameLookupLocked(e *interp.DebugEvent) lookupFunc {
	var locals []Var
	if fs := e.Frames(0, 1); len(fs) > 0 {
		locals = localsOf(fs[0])
	}
	var globals []Var
	if a.run != nil {
		globals = a.runGlobalsLocked()
	}
	return scopesLookup(locals, globals)
}

// scopesLookup finds a name in locals, then in globals.
func scopesLookup(locals, globals []Var) lookupFunc {
	return func(name string) (reflect.Value, bool) {
		for _, scope := range [][]Var{locals, globals} {
			for _, v := range scope {
				if v.Name == name {
					return v.Value, true
				}
			}
		}
		return reflect.Value{}, false
	}
}
