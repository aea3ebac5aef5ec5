package notebook

import (
	"context"
	"reflect"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/cells"
	"github.com/goaccel/goaccel/notebook/complete"
)

// scope adapts the engine's declaration log to complete.Scope.
type scope struct{ e *Engine }

func (s scope) Declarations() []complete.Decl {
	decls := s.e.Declarations()
	out := make([]complete.Decl, 0, len(decls))
	for _, d := range decls {
		if d.Kind == KindImport {
			continue
		}
		kind := string(d.Kind)
		if d.Kind == KindMethod {
			kind = "func"
		}
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		for _, n := range names {
			out = append(out, complete.Decl{Name: n, Kind: kind, Source: d.Source, Doc: docOf(d.Source)})
		}
	}
	return out
}

func (s scope) Imports() map[string]string { return s.e.Imports() }

func (s scope) Symbols() map[string]map[string]reflect.Value { return s.e.packages.CellFacing() }

// docOf extracts the leading // comment lines of a declaration's source.
func docOf(src string) string {
	var doc []string
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "//") {
			break
		}
		doc = append(doc, strings.TrimSpace(strings.TrimPrefix(t, "//")))
	}
	return strings.Join(doc, "\n")
}

// Complete answers complete_request (cursor in code points).
func (e *Engine) Complete(_ context.Context, code string, cursor int) (frontend.Completion, error) {
	return complete.Complete(code, cursor, scope{e}), nil
}

// Inspect answers inspect_request.
func (e *Engine) Inspect(_ context.Context, code string, cursor int, detail int) (frontend.Inspection, error) {
	return complete.Inspect(code, cursor, detail, scope{e}), nil
}

// IsComplete answers is_complete_request. Magic lines are complete.
func (e *Engine) IsComplete(_ context.Context, code string) (frontend.Completeness, string) {
	magics, rest := cells.SplitMagics(code)
	if len(magics) > 0 && strings.TrimSpace(rest) == "" {
		return frontend.Complete, ""
	}
	if _, _, ok := helpRequest(code); ok {
		return frontend.Complete, ""
	}
	return complete.IsComplete(rest)
}

// help returns the pager payload for name? / name??, or nil.
func (e *Engine) help(name string, detail int) map[string]any {
	text, found := complete.Help(name, detail, scope{e})
	if !found {
		return nil
	}
	return map[string]any{"source": "page", "data": map[string]any{"text/plain": text}, "start": 0}
}
