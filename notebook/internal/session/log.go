package session

import (
	"sort"
	"strings"
	"sync"
)

// DeclKind is the kind of a logged declaration.
type DeclKind string

// The kinds of declarations.
const (
	KindImport DeclKind = "import"
	KindType   DeclKind = "type"
	KindFunc   DeclKind = "func"
	KindMethod DeclKind = "method"
	KindConst  DeclKind = "const"
	KindVar    DeclKind = "var"
)

// Declaration is one entry of the declaration log: something a cell declared
// that succeeded. Replaying the log (imports first, then all other
// Declarations' Source as one file, which Go allows in any order) rebuilds a
// session's declarations without re-running statements.
type Declaration struct {
	Kind DeclKind
	// Name is the declared name; "T.M" for a method; the local name for an
	// import ("." or "_" for dot and blank imports).
	Name string
	// Names lists every name a var or const spec declares (`var a, b = 1, 2`).
	Names []string
	// Source is the declaration as written: "import \"fmt\"",
	// "func F() {...}", "type T struct{...}", "var x = 1". For a variable
	// defined by a statement (`x := f()`), Source is that statement and
	// FromStatement is true: replaying it would re-run f.
	Source        string
	FromStatement bool
	// Path is the import path (imports only).
	Path string
	// Cell is the execution count of the cell that declared it.
	Cell int
	// SrcCell, Line and Col locate Source's first byte: line and column in
	// the code of cell SrcCell (0 when unknown). The debugger replays
	// declarations at their positions so that breakpoints reach them.
	SrcCell, Line, Col int
	// Results is how many results a KindFunc or KindMethod returns,
	// counted when it is logged, so that choosing how to show a trailing
	// call never re-parses Source.
	Results int
}

// Log is the session's declaration log and the names its imports bind. Its
// methods are safe for concurrent use.
type Log struct {
	mu      sync.RWMutex
	decls   []Declaration
	imports map[string]string // local name → path
}

// NewLog returns an empty log.
func NewLog() *Log { return &Log{imports: map[string]string{}} }

// Reset forgets everything (%reset).
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.decls = nil
	l.imports = map[string]string{}
}

// Declarations returns a copy of the log, oldest first; a name declared
// again appears once, at its latest position.
func (l *Log) Declarations() []Declaration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]Declaration, len(l.decls))
	copy(out, l.decls)
	for i := range out {
		out[i].Names = append([]string(nil), out[i].Names...)
	}
	return out
}

// Imports maps the local name of each package imported by cells to its path.
func (l *Log) Imports() map[string]string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	m := make(map[string]string, len(l.imports))
	for k, v := range l.imports {
		m[k] = v
	}
	return m
}

// ImportPath is the path of the package cells imported as name ("" when
// none).
func (l *Log) ImportPath(name string) string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.imports[name]
}

// Imported reports whether cells imported a package as name, and its path.
func (l *Log) Imported(name string) (string, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	p, ok := l.imports[name]
	return p, ok
}

// Add logs ds in order (see add).
func (l *Log) Add(ds ...Declaration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range ds {
		l.add(d)
	}
}

// AddImport logs an import declaration d and binds its name (not for dot
// and blank imports).
func (l *Log) AddImport(d Declaration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d.Name != "_" && d.Name != "." {
		l.imports[d.Name] = d.Path
	}
	l.add(d)
}

// add appends d, dropping an earlier declaration of the same name and kind
// family. Callers hold l.mu.
func (l *Log) add(d Declaration) {
	family := func(k DeclKind) string {
		switch k {
		case KindImport:
			return "import"
		case KindMethod:
			return "method"
		default:
			return "value" // func, var, const and type share one namespace
		}
	}
	kept := l.decls[:0]
	for _, old := range l.decls {
		if old.Name == d.Name && family(old.Kind) == family(d.Kind) && !(d.Kind == KindImport && d.Name == "_") {
			continue
		}
		kept = append(kept, old)
	}
	l.decls = append(kept, d)
}

// HasName reports whether the log declares name (any kind but import).
func (l *Log) HasName(name string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, d := range l.decls {
		if d.Kind == KindImport || d.Kind == KindMethod {
			continue
		}
		if d.Name == name {
			return true
		}
		for _, n := range d.Names {
			if n == name {
				return true
			}
		}
	}
	return false
}

// HasImport reports whether the log holds an import of path as name (for
// dot and blank imports, which bind no name).
func (l *Log) HasImport(name, path string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, d := range l.decls {
		if d.Kind == KindImport && d.Name == name && d.Path == path {
			return true
		}
	}
	return false
}

// FuncResults is how many results the logged function name returns, or -1
// when the log has no such function.
func (l *Log) FuncResults(name string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, d := range l.decls {
		if d.Kind == KindFunc && d.Name == name {
			return d.Results
		}
	}
	return -1
}

// MethodResults calls add with the result count of every logged method
// called method (of any type) until add returns false; it reports whether
// every call returned true.
func (l *Log) MethodResults(method string, add func(n int) bool) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, d := range l.decls {
		if d.Kind == KindMethod && strings.HasSuffix(d.Name, "."+method) && !add(d.Results) {
			return false
		}
	}
	return true
}

// MethodNames is the set of method names cells declared (on any type).
func (l *Log) MethodNames() map[string]bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	names := map[string]bool{}
	for _, d := range l.decls {
		if d.Kind == KindMethod {
			names[d.Name[strings.LastIndex(d.Name, ".")+1:]] = true
		}
	}
	return names
}

// VarNames lists the session's variables, sorted, without the names the
// engine declares for itself.
func (l *Log) VarNames() []string {
	seen := map[string]bool{}
	for _, d := range l.Declarations() {
		if d.Kind != KindVar {
			continue
		}
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		for _, n := range names {
			if !Hidden(n) {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Hidden reports the names the engine declares for itself.
func Hidden(n string) bool { return n == "_" || strings.HasPrefix(n, "_gx") }

// Forget drops name from the log: a declaration of it (the names of a
// multi-name var or const spec are dropped one by one) or an import bound
// to it.
func (l *Log) Forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.imports, name)
	kept := l.decls[:0]
	for _, d := range l.decls {
		if d.Name == name && d.Kind != KindMethod {
			if len(d.Names) <= 1 {
				continue
			}
		}
		if len(d.Names) > 1 {
			var names []string
			for _, n := range d.Names {
				if n != name {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				continue
			}
			d.Names = names
			if d.Name == name {
				d.Name = names[0]
			}
		}
		kept = append(kept, d)
	}
	l.decls = kept
}
