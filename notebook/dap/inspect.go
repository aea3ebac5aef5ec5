package dap

import (
	"context"
	"encoding/json"
	"fmt"
	"go/token"
	"reflect"
	"sort"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// ref is what a variablesReference expands to.
type ref struct {
	kind  refKind
	frame *interp.DebugFrame // refLocals
	v     reflect.Value      // refValue
	eval  string             // refValue: the value's expression
	// vars is a scope listed once (refList): the session's variables.
	vars []Var
}

type refKind int

const (
	refValue refKind = iota
	refLocals
	refGlobals
	refList
)

// newRefLocked registers r and returns its reference. Callers hold a.mu.
func (a *Adapter) newRefLocked(r *ref) int {
	a.nextRef++
	a.refs[a.nextRef] = r
	return a.nextRef
}

// clearRefsLocked forgets references and frames (a thread ran on). Callers
// hold a.mu.
func (a *Adapter) clearRefsLocked() {
	a.refs = map[int]*ref{}
	a.frames = map[int]*interp.DebugFrame{}
}

// present is the DAP variable of a value. Callers hold a.mu.
func (a *Adapter) presentLocked(name, typ, eval string, v reflect.Value) map[string]any {
	out := map[string]any{
		"name": name, "value": valueText(v), "type": typeString(v, typ, a.opts.TypeName),
		"evaluateName": eval, "variablesReference": 0,
	}
	if hasChildren(v) {
		out["variablesReference"] = a.newRefLocked(&ref{kind: refValue, v: v, eval: eval})
	}
	return out
}

// localsOf lists a frame's variables, innermost scope first, each name once.
func localsOf(f *interp.DebugFrame) []Var {
	var out []Var
	seen := map[string]bool{}
	for _, s := range f.Scopes() {
		vars := s.Variables()
		for _, v := range vars {
			if seen[v.Name] || hidden(v.Name) {
				continue
			}
			seen[v.Name] = true
			out = append(out, Var{Name: v.Name, Value: v.Value})
		}
	}
	return out
}

// hidden reports names the notebook uses for itself.
func hidden(name string) bool {
	return name == "_" || strings.HasPrefix(name, "_gx")
}

// runGlobalsLocked lists the interpreter's globals while a cell is stopped,
// with the values copyToGlobals added. Callers hold a.mu.
func (a *Adapter) runGlobalsLocked() []Var {
	var out []Var
	seen := map[string]bool{}
	for _, c := range a.copied {
		seen[c.Name] = true
		out = append(out, c)
	}
	g := a.run.it.Globals()
	names := make([]string, 0, len(g))
	for n := range g {
		if !hidden(n) && !seen[n] && token.IsIdentifier(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, Var{Name: n, Value: g[n]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// globals lists the session's variables: the stopped cell's interpreter's,
// or the Host's when no cell is stopped.
func (a *Adapter) globals(ctx context.Context) ([]Var, error) {
	a.mu.Lock()
	if a.run != nil && len(a.stops) > 0 {
		defer a.mu.Unlock()
		return a.runGlobalsLocked(), nil
	}
	running := a.run != nil
	a.mu.Unlock()
	if running {
		return nil, fmt.Errorf("a cell is running in the debugger: pause it to see its variables")
	}
	if a.opts.Host == nil {
		return nil, nil
	}
	return a.opts.Host.Globals(ctx)
}

func (a *Adapter) variables(ctx context.Context, args json.RawMessage) reply {
	var in struct {
		Ref   int `json:"variablesReference"`
		Start int `json:"start"`
		Count int `json:"count"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("variables: %w", err)}
	}
	a.mu.Lock()
	r, ok := a.refs[in.Ref]
	a.mu.Unlock()
	if !ok {
		return reply{err: fmt.Errorf("no variables reference %d (the thread ran on since)", in.Ref)}
	}
	var vars []Var
	switch r.kind {
	case refGlobals:
		g, err := a.globals(ctx)
		if err != nil {
			return reply{err: err}
		}
		vars = g
	case refList:
		vars = r.vars
	case refLocals:
		vars = localsOf(r.frame)
	case refValue:
		a.mu.Lock()
		defer a.mu.Unlock()
		var out []any
		for _, c := range children(r.v, r.eval, in.Start, in.Count) {
			out = append(out, a.presentLocked(c.name, "", c.eval, c.v))
		}
		return reply{body: map[string]any{"variables": nonNilList(out)}}
	}
	if in.Start > 0 {
		vars = vars[min(in.Start, len(vars)):]
	}
	if in.Count > 0 && in.Count < len(vars) {
		vars = vars[:in.Count]
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return reply{body: map[string]any{"variables": a.listLocked(vars)}}
}

func (a *Adapter) listLocked(vars []Var) []any {
	out := make([]any, 0, len(vars))
	for _, v := range vars {
		out = append(out, a.presentLocked(v.Name, v.Type, v.Name, v.Value))
	}
	return out
}

func nonNilList(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

// inspectVariables lists the session's variables for the variable explorer
// (no breakpoint needed).
func (a *Adapter) inspectVariables(ctx context.Context) reply {
	vars, err := a.globals(ctx)
	if err != nil {
		return reply{err: err}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.stops) == 0 {
		a.clearRefsLocked()
	}
	return reply{body: map[string]any{"variables": a.listLocked(vars)}}
}

// lookup resolves names for evaluate: a frame's locals first, then globals.
func (a *Adapter) lookup(ctx context.Context, frameID int) (lookupFunc, error) {
	f := func() *interp.DebugFrame {
		a.mu.Lock()
		defer a.mu.Unlock()
		f := a.frames[frameID]
		if f == nil && frameID == 0 {
			if ids := a.stopped(); len(ids) > 0 {
				if fs := a.stops[ids[0]].ev.Frames(0, 1); len(fs) > 0 {
					f = fs[0]
				}
			}
		}
		return f
	}()
	if f == nil && frameID != 0 {
		return nil, fmt.Errorf("no frame %d (the thread ran on since)", frameID)
	}
	var locals []Var
	if f != nil {
		locals = localsOf(f)
	}
	globals, err := a.globals(ctx)
	if err != nil {
		return nil, err
	}
	return scopesLookup(locals, globals), nil
}

func (a *Adapter) evaluateRequest(ctx context.Context, args json.RawMessage) reply {
	var in struct {
		Expression string `json:"expression"`
		FrameID    int    `json:"frameId"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("evaluate: %w", err)}
	}
	look, err := a.lookup(ctx, in.FrameID)
	if err != nil {
		return reply{err: err}
	}
	v, err := evaluate(in.Expression, look)
	if err != nil {
		return reply{err: err}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.presentLocked("", "", in.Expression, v)
	return reply{body: map[string]any{"result": p["value"], "type": p["type"], "variablesReference": p["variablesReference"]}}
}

// richInspect is a variable's MIME bundle, text/plain as the panel shows it.
func (a *Adapter) richInspect(ctx context.Context, args json.RawMessage) reply {
	var in struct {
		Name    string `json:"variableName"`
		FrameID int    `json:"frameId"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("richInspectVariables: %w", err)}
	}
	look, err := a.lookup(ctx, in.FrameID)
	if err != nil {
		return reply{err: err}
	}
	v, err := evaluate(in.Name, look)
	if err != nil {
		return reply{err: err}
	}
	data := map[string]any{}
	if a.opts.Host != nil && richCandidate(v) {
		for k, x := range a.opts.Host.Rich(v) {
			data[k] = x
		}
	}
	data["text/plain"] = valueText(v)
	return reply{body: map[string]any{"data": data, "metadata": map[string]any{}}}
}

// richCandidate reports a value whose rich representations the notebook can
// compute without running interpreted code: a compiled type with methods.
func richCandidate(v reflect.Value) bool {
	if !v.IsValid() || !v.CanInterface() {
		return false
	}
	if v.Kind() == reflect.Interface && !v.IsNil() {
		v = v.Elem()
	}
	t := v.Type()
	named := t
	if t.Kind() == reflect.Pointer {
		named = t.Elem()
	}
	return named.PkgPath() != "" && (t.NumMethod() > 0 || reflect.PointerTo(t).NumMethod() > 0)
}

// copyToGlobals makes a local of a stopped frame a session variable: it is
// listed among the globals at once and given to the engine (TakeCopied),
// which declares it when the cell has finished.
func (a *Adapter) copyToGlobals(args json.RawMessage) reply {
	var in struct {
		Src     string `json:"srcVariableName"`
		Dst     string `json:"dstVariableName"`
		FrameID int    `json:"srcFrameId"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return reply{err: fmt.Errorf("copyToGlobals: %w", err)}
	}
	if !token.IsIdentifier(in.Dst) || hidden(in.Dst) {
		return reply{err: fmt.Errorf("copyToGlobals: %q is not a name a variable can have", in.Dst)}
	}
	a.mu.Lock()
	f := a.frames[in.FrameID]
	a.mu.Unlock()
	if f == nil {
		return reply{err: fmt.Errorf("copyToGlobals: no frame %d (the thread ran on since)", in.FrameID)}
	}
	for _, v := range localsOf(f) {
		if v.Name != in.Src {
			continue
		}
		c := reflect.New(v.Value.Type()).Elem()
		c.Set(v.Value)
		a.mu.Lock()
		kept := a.copied[:0]
		for _, old := range a.copied {
			if old.Name != in.Dst {
				kept = append(kept, old)
			}
		}
		a.copied = append(kept, Var{Name: in.Dst, Value: c})
		a.mu.Unlock()
		return reply{}
	}
	return reply{err: fmt.Errorf("copyToGlobals: frame %d has no variable %s", in.FrameID, in.Src)}
}
