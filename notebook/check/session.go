package check

import (
	"fmt"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// Kind is the kind of a session entry.
type Kind int

// The kinds of entries.
const (
	TypeEntry Kind = iota + 1
	FuncEntry
	MethodEntry
	VarEntry
	ConstEntry
)

func (k Kind) String() string {
	switch k {
	case TypeEntry:
		return "type"
	case FuncEntry:
		return "func"
	case MethodEntry:
		return "method"
	case VarEntry:
		return "var"
	case ConstEntry:
		return "const"
	}
	return "?"
}

// Entry is one declaration of the session: a top-level name bound by a cell,
// or a method of a session type.
type Entry struct {
	ID   int
	Kind Kind
	// Name is the declared name (the method name for methods).
	Name string
	// Recv is the receiver type's entry, for methods.
	Recv *Entry
	// Obj is the go/types object.
	Obj types.Object
	// Cell is the execution count of the cell whose check produced Obj.
	Cell int
	// Unit is the declaration's source, for recompiling it later; nil for
	// variables defined by statements and for package-level variables
	// (variables are never recompiled: they keep their storage and type).
	Unit *Unit
	// Deps are the session entries the declaration uses.
	Deps []*Entry
	// Hoisted marks a variable defined by a top-level statement.
	Hoisted bool
	// Prev is the binding this one replaced compatibly (see Binding): code
	// that uses Prev now reaches this entry.
	Prev *Entry
	// Home is the engine's record of where the entry lives at run time (a
	// compiled package, a variable's storage); check never looks at it.
	Home any
}

func (e *Entry) String() string {
	if e.Kind == MethodEntry && e.Recv != nil {
		return fmt.Sprintf("%s.%s (cell[%d])", e.Recv.Name, e.Name, e.Cell)
	}
	return fmt.Sprintf("%s %s (cell[%d])", e.Kind, e.Name, e.Cell)
}

// Unit is the source of one top-level declaration as its cell wrote it.
type Unit struct {
	Src string
	// Cell, Line and Col locate Src's first byte in its cell.
	Cell, Line, Col int
}

// Import is an import of the session.
type Import struct {
	Name string // local name; "." or "_" for dot and blank imports
	Path string
	Cell int
}

// Config configures a Session.
type Config struct {
	// Importer loads imported packages (export data or source).
	Importer types.Importer
	// GoVersion is the language version cells are checked against
	// ("go1.26"); empty means the newest go/types knows.
	GoVersion string
	// Sizes are the target's type sizes; nil means gc on amd64.
	Sizes types.Sizes
	// FileSet is the file set for the session's positions (the one the
	// Importer records imported positions in); nil means a new one.
	FileSet *token.FileSet
	// AutoImport resolves a package name a cell uses without importing it
	// (strings.Split) to an import path, or "" for none.
	AutoImport func(name string) string
	// Resolve, when set, is used instead of AutoImport: it is given the
	// cell's source too (the members it selects from name narrow the
	// candidates) and may fail, naming the candidates of an ambiguous name.
	Resolve func(name, src string) (string, error)
}

// Session is the type-level state of a notebook. It is not safe for
// concurrent use.
type Session struct {
	conf    Config
	pkg     *types.Package // package main, shared by every check
	fset    *token.FileSet
	nextID  int
	names   map[string]*Entry            // current binding of each top-level name
	methods map[*Entry]map[string]*Entry // type entry → method name → method
	byObj   map[types.Object]*Entry      // every entry ever, by object
	// parentOffsets: see adopt.
	parentOffsets parentOffsets
	imports       map[string]*Import // local name → import (named imports)
	special       []*Import          // dot and blank imports
	sources       map[int]string     // cell sources, for carets in errors
	// committed remembers the last committed cell of each source (Rerun).
	committed map[string]*committedCell
}

// NewSession starts an empty session.
func NewSession(conf Config) *Session {
	if conf.Sizes == nil {
		conf.Sizes = types.SizesFor("gc", "amd64")
	}
	fset := conf.FileSet
	if fset == nil {
		fset = token.NewFileSet()
		conf.FileSet = fset
	}
	return &Session{
		conf:          conf,
		pkg:           types.NewPackage("main", "main"),
		fset:          fset,
		names:         map[string]*Entry{},
		methods:       map[*Entry]map[string]*Entry{},
		byObj:         map[types.Object]*Entry{},
		parentOffsets: parentOffsets{},
		imports:       map[string]*Import{},
		sources:       map[int]string{},
		committed:     map[string]*committedCell{},
	}
}

// FileSet is the file set of every position the session's ASTs carry.
func (s *Session) FileSet() *token.FileSet { return s.fset }

// Lookup returns the current binding of a top-level name.
func (s *Session) Lookup(name string) *Entry { return s.names[name] }

// EntryOf returns the entry whose object is obj (any cell's, current or not).
func (s *Session) EntryOf(obj types.Object) *Entry { return s.byObj[obj] }

// Methods returns the current methods of a type entry, sorted by name.
func (s *Session) Methods(t *Entry) []*Entry {
	var out []*Entry
	for _, m := range s.methods[t] {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Entries returns the current bindings, sorted by name.
func (s *Session) Entries() []*Entry {
	out := make([]*Entry, 0, len(s.names))
	for _, e := range s.names {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Imports returns the session's imports: local name → import path (named
// imports only).
func (s *Session) Imports() map[string]string {
	m := make(map[string]string, len(s.imports))
	for n, im := range s.imports {
		m[n] = im.Path
	}
	return m
}

// ImportList returns every import of the session, named ones sorted by
// name, then dot and blank imports in the order they were made.
func (s *Session) ImportList() []*Import {
	var out []*Import
	for _, im := range s.imports {
		out = append(out, im)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return append(out, s.special...)
}

// Source returns the source of cell n as it was checked ("" if unknown).
func (s *Session) Source(n int) string { return s.sources[n] }

// Reset forgets everything.
func (s *Session) Reset() {
	*s = *NewSession(s.conf)
}

// current reports whether e is the binding in force for its name.
func (s *Session) current(e *Entry) bool {
	if e.Kind == MethodEntry {
		return e.Recv != nil && s.methods[e.Recv][e.Name] == e
	}
	return s.names[e.Name] == e
}

// dependents returns the current entries whose declarations use one of
// changed, other than those in skip.
func (s *Session) dependents(changed map[*Entry]bool, skip map[*Entry]bool) []*Entry {
	// Code that used an entry an entry of changed replaced compatibly uses
	// the changed one now.
	all := map[*Entry]bool{}
	for e := range changed {
		for p := e; p != nil && !all[p]; p = p.Prev {
			all[p] = true
		}
	}
	changed = all
	var out []*Entry
	visit := func(e *Entry) {
		if skip[e] || changed[e] {
			return
		}
		for _, d := range e.Deps {
			if changed[d] {
				out = append(out, e)
				return
			}
		}
	}
	for _, e := range s.names {
		visit(e)
	}
	for _, ms := range s.methods {
		for _, m := range ms {
			visit(m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// reserved reports whether a name is one goaccel's generated code uses.
func reserved(name string) bool { return strings.HasPrefix(name, "_gx") }

// Forget unbinds a top-level name or an import's name (GoNB's %rm): later
// cells no longer see it. Code compiled earlier keeps what it uses. It
// returns the kind forgotten ("func", "var", "const", "type", "import"),
// and false when nothing has that name.
func (s *Session) Forget(name string) (string, bool) {
	if e := s.names[name]; e != nil {
		delete(s.names, name)
		if e.Kind == TypeEntry {
			delete(s.methods, e)
		}
		return e.Kind.String(), true
	}
	if _, ok := s.imports[name]; ok {
		delete(s.imports, name)
		return "import", true
	}
	return "", false
}
