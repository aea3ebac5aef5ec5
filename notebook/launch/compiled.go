package launch

// Launches when cells are compiled (see the package doc for what a launch
// carries and why). The kernel side reads the session from the type checker
// (package check) instead of the interpreter: the launched function's
// signature, the declarations it needs and the types of the variables it
// reaches are all go/types facts there, and the variables' values are the
// compiled session's storage. The worker side replays the declarations as
// one compiled cell, sets the carried values into that cell's variables
// with encoding/json, and calls the function in a second cell, so that its
// panics, output, os.Exit and interrupts take the path of any cell's.
//
// Only what the function can reach travels: the declarations it uses,
// transitively (the checker records each declaration's uses), with every
// method of the types among them (an interface call may reach any). So an
// unrelated cell that a worker could not compile, or a variable that cannot
// be carried but that the function never touches, does not stop a launch.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/types"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/display"
	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/notebook/compiled"
)

// prepareCompiled is Prepare for compiled cells.
func (s *Session) prepareCompiled(fn any, args []any) ([]byte, error) {
	name, err := s.takeLaunchName(fn)
	if err != nil {
		return nil, err
	}
	s.note(name)
	w := newReplayWorld(s.opts.Compiled.Session().Checker(), s.opts.Compiled.Session().Pending())
	items := w.closure(name)
	sig, err := launchedSignature(name, items[name])
	if err != nil {
		return nil, err
	}
	names := newReplayNames(w, items)
	p := launchPayload{Func: name, Variadic: sig.Variadic()}
	if p.Params, err = typeStrings(name, "parameter", sig.Params(), names); err != nil {
		return nil, err
	}
	if p.Results, err = typeStrings(name, "result", sig.Results(), names); err != nil {
		return nil, err
	}
	if p.Args, err = encodeArgs(name, len(p.Params), p.Variadic, args); err != nil {
		return nil, err
	}
	p.Decls = replayDecls(items, names)
	if p.Vars, err = s.carryVars(name, items, names); err != nil {
		return nil, err
	}
	p.Imports = replayImports(w, names, p.Decls)
	s.prebuildWorker(&p)
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	s.rememberResultTypes(b, fn)
	return b, nil
}

// carryVars declares every variable among items and carries its value.
// Errors name the variable, in the words of the interpreted launch.
func (s *Session) carryVars(fn string, items map[string]*replayItem, names *replayNames) ([]carriedVar, error) {
	keys := make([]string, 0, len(items))
	for k, it := range items {
		if _, ok := it.obj.(*types.Var); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []carriedVar
	for _, n := range keys {
		t := items[n].obj.Type()
		if why := unnameable(t); why != "" {
			return nil, fmt.Errorf("global variable %s, which %s uses, cannot be carried to the workers: %s", n, fn, why)
		}
		texpr := names.typeString(t)
		v, ok := s.opts.Compiled.Session().PendingValue(n)
		if !ok {
			v, ok = s.opts.Compiled.Session().Value(n)
		}
		if !ok {
			return nil, fmt.Errorf("global variable %s, which %s uses, cannot be carried to the workers: it has no value yet", n, fn)
		}
		b, err := carryValue(v)
		if err != nil {
			return nil, fmt.Errorf("global variable %s (%s), which %s uses, cannot be carried to the workers: %w", n, texpr, fn, err)
		}
		if b == nil {
			return nil, fmt.Errorf("global variable %s (%s), which %s uses, cannot be carried to the workers exactly (only exported fields and JSON-encodable values travel); make it a parameter of %s or compute it inside", n, texpr, fn, fn)
		}
		out = append(out, carriedVar{Name: n, Type: texpr, Value: b})
	}
	return out, nil
}

// decodeCompiledResults decodes results into the launched function's own
// result types (a []float64 comes back as one, a cell's struct as that
// struct); a value that does not fit an interface type arrives in its JSON
// shape.
func decodeCompiledResults(outs []reflect.Type, rank int, raw []json.RawMessage) ([]any, error) {
	out := make([]any, len(raw))
	for i, r := range raw {
		if i < len(outs) {
			pv := reflect.New(outs[i])
			err := json.Unmarshal(r, pv.Interface())
			if err == nil {
				out[i] = pv.Elem().Interface()
				continue
			}
			if outs[i].Kind() != reflect.Interface {
				return nil, fmt.Errorf("rank %d result %d (%s): %w", rank, i, outs[i], err)
			}
		}
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, fmt.Errorf("rank %d result %d: %w", rank, i, err)
		}
		out[i] = v
	}
	return out, nil
}

// The names the worker's cells give the arguments and the results; a
// notebook that uses these spellings gets a suffix added.
const (
	argPrefix    = "gxLaunchArg"
	resultPrefix = "gxLaunchResult"
)

// workerPlan is what a worker runs: the cells, and the names they give
// the arguments and the results.
type workerPlan struct {
	cells            []string
	argName, resName string
}

// planWorker writes the worker's cells for p: one declares everything (the
// carried variables and the arguments as `var x T`), and a second calls the
// function once the values are set; one cell does both when nothing is
// carried. The kernel plans the same cells to build them before the
// workers start (prebuildWorker).
func planWorker(p launchPayload) workerPlan {
	argName, resName := workerNames(p)
	var decl strings.Builder
	for _, im := range p.Imports {
		decl.WriteString(im + "\n")
	}
	for _, d := range p.Decls {
		decl.WriteString(d + "\n")
	}
	for _, v := range p.Vars {
		fmt.Fprintf(&decl, "var %s %s\n", v.Name, v.Type)
	}
	for i, t := range p.Params {
		fmt.Fprintf(&decl, "var %s%d %s\n", argName, i, t)
	}
	call := callStatement(p, argName, resName)
	plan := workerPlan{argName: argName, resName: resName}
	if carries(p) {
		plan.cells = []string{decl.String(), call}
	} else {
		plan.cells = []string{decl.String() + call}
	}
	return plan
}

// carries reports whether values travel with p.
func carries(p launchPayload) bool {
	if len(p.Params) > 0 {
		return true
	}
	for _, v := range p.Vars {
		if v.Value != nil {
			return true
		}
	}
	return false
}

// prebuildWorker builds the cells the workers will run, in the kernel,
// once: the workers then find their plugins in the build cache instead of
// each building the same ones at the same time. It also records in p the
// kernel's builder state: the session module, so that a worker imports
// every package at the version the cells did (and on another machine
// fetches it), and the export data the builder knows, so that a worker on
// this machine does not ask the go command for it again. A failure to
// build is left to the workers to report, in their words.
func (s *Session) prebuildWorker(p *launchPayload) {
	ctx := launcher.CellContext()
	opts := compiled.Options{Builder: s.opts.Compiled.Builder(), AutoImport: s.opts.Compiled.AutoImport}
	_ = compiled.Prebuild(ctx, opts, planWorker(*p).cells)
	st := s.opts.Compiled.Builder().State()
	p.Build = &st
}

// runCompiledWorker is Run for compiled cells: it runs the planned cells,
// setting the carried values and the arguments into the variables the
// first one declares before the call.
func (s *Session) runCompiledWorker(ctx context.Context, p launchPayload) ([]byte, error) {
	if p.Build != nil {
		if err := s.opts.Compiled.Builder().AdoptState(ctx, *p.Build); err != nil {
			return nil, fmt.Errorf("taking the notebook's modules: %w", err)
		}
	}
	plan := planWorker(p)
	cells := &workerCells{s: s, ctx: ctx, io: &workerIO{forward: display.Current()}}
	if len(plan.cells) == 1 {
		if err := cells.run("replaying the notebook's declarations", plan.cells[0], true); err != nil {
			return nil, err
		}
		return s.workerResults(p, plan.resName)
	}
	if err := cells.run("replaying the notebook's declarations", plan.cells[0], false); err != nil {
		return nil, err
	}
	if err := s.setCarried(p, plan.argName); err != nil {
		return nil, err
	}
	if err := cells.run("", plan.cells[1], true); err != nil {
		return nil, err
	}
	return s.workerResults(p, plan.resName)
}

// workerNames picks the names of the argument and result variables: none
// the replayed code uses.
func workerNames(p launchPayload) (arg, res string) {
	var all strings.Builder
	for _, s := range p.Decls {
		all.WriteString(s)
	}
	for _, v := range p.Vars {
		all.WriteString(" " + v.Name)
	}
	text := all.String()
	arg, res = argPrefix, resultPrefix
	for i := 2; strings.Contains(text, arg) || strings.Contains(text, res); i++ {
		arg, res = argPrefix+strconv.Itoa(i)+"_", resultPrefix+strconv.Itoa(i)+"_"
	}
	return arg, res
}

// callStatement calls the function with the argument variables and binds
// its results.
func callStatement(p launchPayload, argName, resName string) string {
	args := make([]string, len(p.Params))
	for i := range p.Params {
		args[i] = argName + strconv.Itoa(i)
		if p.Variadic && i == len(p.Params)-1 {
			args[i] += "..."
		}
	}
	invoke := p.Func + "(" + strings.Join(args, ", ") + ")"
	if len(p.Results) == 0 {
		return invoke + "\n"
	}
	res := make([]string, len(p.Results))
	for i := range res {
		res[i] = resName + strconv.Itoa(i)
	}
	return strings.Join(res, ", ") + " := " + invoke + "\n"
}

// setCarried decodes the carried values and the arguments into the
// variables the declaration cell made for them.
func (s *Session) setCarried(p launchPayload, argName string) error {
	set := func(name string, b json.RawMessage) error {
		v, ok := s.opts.Compiled.Session().Value(name)
		if !ok {
			return fmt.Errorf("goaccel: restoring %s in the worker: the replayed cell did not declare it", name)
		}
		if err := json.Unmarshal(b, v.Addr().Interface()); err != nil {
			return fmt.Errorf("goaccel: restoring %s in the worker: %w", name, err)
		}
		return nil
	}
	for _, v := range p.Vars {
		if v.Value != nil {
			if err := set(v.Name, v.Value); err != nil {
				return err
			}
		}
	}
	for i, a := range p.Args {
		if err := set(argName+strconv.Itoa(i), a); err != nil {
			return err
		}
	}
	return nil
}

// workerResults encodes the call's results; a non-nil trailing error
// becomes the worker's error.
func (s *Session) workerResults(p launchPayload, resName string) ([]byte, error) {
	out := make([]json.RawMessage, len(p.Results))
	var resErr error
	for i := range out {
		out[i] = json.RawMessage("null")
		v, ok := s.opts.Compiled.Session().Value(resName + strconv.Itoa(i))
		if !ok {
			continue // the function stopped the cell (os.Exit(0))
		}
		if i == len(out)-1 && p.Results[i] == "error" {
			if err, _ := v.Interface().(error); err != nil {
				resErr = errors.New(err.Error())
			}
			continue
		}
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, fmt.Errorf("goaccel: result %d of the launched function cannot be sent back: %w", i, err)
		}
		out[i] = b
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, resErr
}

// workerCells runs a worker's cells, numbered from 1.
type workerCells struct {
	s   *Session
	ctx context.Context
	io  *workerIO
	n   int
}

// run runs code as the next cell. A panic comes back as a
// *launcher.PanicError; errors of the replay (what says what it was) name
// it; calls tells that the cell calls the launched function, whose own
// failures are reported as they are.
func (w *workerCells) run(what, code string, calls bool) error {
	w.n++
	rep := w.s.opts.Execute(w.ctx, frontend.ExecuteRequest{Code: code, Silent: true, ExecutionCount: w.n}, w.io)
	if rep.Err == nil {
		return nil
	}
	if rep.Err.Name == "panic" {
		return &launcher.PanicError{Value: rep.Err.Value, Stack: strings.Join(withoutCallCell(rep.Err.Traceback), "\n")}
	}
	replay := what != "" && (!calls || compileErrorNames[rep.Err.Name])
	if replay {
		return fmt.Errorf("%s: %s: %s\n%s", what, rep.Err.Name, rep.Err.Value, strings.Join(rep.Err.Traceback, "\n"))
	}
	return fmt.Errorf("%s: %s", rep.Err.Name, rep.Err.Value)
}

// withoutCallCell drops from a panic's traceback the frame of the
// worker's own cell that called the function: its position is in no cell
// of the notebook (the function's frames keep the notebook's positions).
func withoutCallCell(tb []string) []string {
	n := len(tb)
	if n >= 2 && tb[n-2] == "main.<cell>()" && strings.HasPrefix(tb[n-1], "\t") {
		return tb[:n-2]
	}
	return tb
}

// compileErrorNames are the errors of a cell that did not get to run.
var compileErrorNames = map[string]bool{"CompileError": true, "SyntaxError": true, "BuildError": true, "ImportError": true}

// launchedSignature is the signature of the function a launch names.
func launchedSignature(name string, root *replayItem) (*types.Signature, error) {
	var fn *types.Func
	if root != nil {
		fn, _ = root.obj.(*types.Func)
	}
	if fn == nil || fn.Type().(*types.Signature).Recv() != nil || name == "main" {
		return nil, fmt.Errorf("%s is not a function declared in a cell; launched functions must be declared with func %s(...) so the workers can rebuild them", name, name)
	}
	sig := fn.Type().(*types.Signature)
	if sig.TypeParams().Len() > 0 {
		return nil, fmt.Errorf("%s is generic; launch a non-generic function", name)
	}
	return sig, nil
}

// typeStrings writes the types of a parameter or result list for the
// workers.
func typeStrings(fn, what string, list *types.Tuple, names *replayNames) ([]string, error) {
	var out []string
	for i := 0; i < list.Len(); i++ {
		t := list.At(i).Type()
		if why := unnameable(t); why != "" {
			return nil, fmt.Errorf("%s cannot be launched: its %s %d cannot be declared in the workers: %s", fn, what, i+1, why)
		}
		out = append(out, names.typeString(t))
	}
	return out, nil
}
