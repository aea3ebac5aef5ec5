package eval

import (
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/traefik/yaegi/stdlib"

	"github.com/goaccel/goaccel/notebook/check"
)

var (
	impOnce sync.Once
	impFset *token.FileSet
	imp     types.Importer
	linked  map[string]map[string]reflect.Value
)

// session is a notebook session whose cells are all evaluated: functions
// and types are declared by cells that are only checked, their run-time
// values given by the test.
type session struct {
	t     *testing.T
	chk   *check.Session
	n     int
	vars  map[*check.Entry]reflect.Value
	funcs map[string]reflect.Value
	types map[string]reflect.Type
}

func newSession(t *testing.T) *session {
	t.Helper()
	impOnce.Do(func() {
		impFset = token.NewFileSet()
		imp = importer.ForCompiler(impFset, "gc", nil)
		linked = map[string]map[string]reflect.Value{}
		for key, syms := range stdlib.Symbols {
			if i := strings.LastIndex(key, "/"); i > 0 {
				linked[key[:i]] = syms
			}
		}
	})
	chk := check.NewSession(check.Config{Importer: imp, FileSet: impFset, GoVersion: "go1.26",
		AutoImport: func(name string) string {
			switch name {
			case "fmt", "strings", "strconv", "math", "time", "errors", "os", "log":
				return name
			}
			return ""
		}})
	return &session{t: t, chk: chk, vars: map[*check.Entry]reflect.Value{}, funcs: map[string]reflect.Value{}, types: map[string]reflect.Type{}}
}

func (s *session) Lookup(name string) *check.Entry { return s.chk.Lookup(name) }

func (s *session) Var(e *check.Entry) (reflect.Value, bool) {
	v, ok := s.vars[e]
	return v, ok
}

func (s *session) Func(e *check.Entry) (reflect.Value, bool) {
	v, ok := s.funcs[e.Name]
	return v, ok
}

func (s *session) Type(e *check.Entry) (reflect.Type, bool) {
	t, ok := s.types[e.Name]
	return t, ok
}

func (s *session) Package(path string) map[string]reflect.Value { return linked[path] }

// declare checks and commits a cell of declarations; values gives the
// run-time values of its functions and types ((*T)(nil) for a type).
func (s *session) declare(src string, values map[string]any) {
	s.t.Helper()
	s.n++
	c, err := s.chk.Check(src, s.n)
	if err != nil {
		s.t.Fatalf("declare %q: %v", src, err)
	}
	s.chk.Commit(c, nil)
	for name, v := range values {
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Pointer && rv.IsNil() {
			s.types[name] = rv.Type().Elem()
		} else {
			s.funcs[name] = rv
		}
	}
}

// errNotEligible wraps Compile's answer.
var errNotEligible = errors.New("not eligible")

// eval checks, compiles, runs and commits a cell; it returns what the
// cell showed: its values (fmt.Sprint, joined by ", "), "panic: <value>",
// or "" for none.
func (s *session) eval(src string) (string, error) {
	s.t.Helper()
	s.n++
	c, err := s.chk.Check(src, s.n)
	if err != nil {
		return "", fmt.Errorf("check: %w", err)
	}
	p, err := Compile(c, s)
	if err != nil {
		var ne *NotEligible
		if !errors.As(err, &ne) {
			s.t.Fatalf("Compile returned %T", err)
		}
		if strings.HasPrefix(ne.Reason, "internal") {
			s.t.Errorf("%q: %v", src, err)
		}
		return "", fmt.Errorf("%w: %v", errNotEligible, err)
	}
	out := func() (out string) {
		defer func() {
			if r := recover(); r != nil {
				out = fmt.Sprintf("panic: %v", r)
				if e, ok := r.(error); ok {
					var re interface{ RuntimeError() }
					if !errors.As(e, &re) {
						out += " (not a runtime.Error)"
					}
				}
			}
		}()
		var parts []string
		for _, v := range p.Run() {
			parts = append(parts, fmt.Sprint(v))
		}
		return strings.Join(parts, ", ")
	}()
	if !p.Initialized() {
		return out, nil // a compiled cell binds nothing then
	}
	done := p.Done()
	for _, b := range s.chk.Commit(c, func(h *check.Hoisted) bool { return h.Stmt < done }) {
		if b.New.Kind == check.VarEntry {
			ptr, ok := p.Storage(b.New.Name)
			if !ok {
				s.t.Fatalf("%q: no storage for %s", src, b.New.Name)
			}
			s.vars[b.New] = ptr.Elem()
		}
	}
	return out, nil
}
