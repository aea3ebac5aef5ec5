package check

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"sort"
)

// Binding is one name (or method) a committed cell bound.
type Binding struct {
	New *Entry
	// Old is the binding it replaced, if any.
	Old *Entry
	// Compatible reports that code compiled against Old can use New in its
	// place: a function of the identical (non-generic) signature, a variable
	// of the identical type, the same constant.
	Compatible bool
}

// compatible reports whether newObj can stand in for old in code compiled
// against old.
func compatible(old *Entry, newObj types.Object) bool {
	switch o := old.Obj.(type) {
	case *types.Func:
		n, ok := newObj.(*types.Func)
		if !ok {
			return false
		}
		sig := o.Type().(*types.Signature)
		return sig.TypeParams().Len() == 0 && types.Identical(o.Type(), n.Type())
	case *types.Var:
		n, ok := newObj.(*types.Var)
		return ok && types.Identical(o.Type(), n.Type())
	case *types.Const:
		n, ok := newObj.(*types.Const)
		return ok && types.Identical(o.Type(), n.Type()) && constant.Compare(o.Val(), token.EQL, n.Val())
	}
	return false
}

// staleDependents returns the earlier declarations that use a binding the
// cell changes incompatibly and are not recompiled yet; it marks them (and,
// for a method, its type with all its methods) for recompiling.
func (st *state) staleDependents(c *Cell) []*Entry {
	s := st.s
	changed := map[*Entry]bool{}
	scope := c.Scope
	for _, name := range scope.Names() {
		old := s.names[name]
		if old == nil || st.rehome[old] {
			continue
		}
		obj := scope.Lookup(name)
		if !c.own[obj] || c.aliases[obj] != nil {
			continue // a session binding in scope, or a stand-in
		}
		if !compatible(old, obj) {
			changed[old] = true
		}
	}
	for e := range st.rehome {
		if _, gone := st.dropped[e]; gone {
			continue
		}
		if e.Kind == TypeEntry || e.Kind == MethodEntry {
			changed[e] = true
			continue
		}
		if obj := scope.Lookup(e.Name); obj == nil || !compatible(e, obj) {
			changed[e] = true
		}
	}
	skip := map[*Entry]bool{}
	for e := range st.rehome {
		skip[e] = true
	}
	for e := range st.dropped {
		skip[e] = true
	}
	var more []*Entry
	for _, d := range s.dependents(changed, skip) {
		if d.Unit == nil || st.rehome[d] {
			continue // variables keep their type and storage
		}
		if _, gone := st.dropped[d]; gone {
			continue
		}
		if d.Kind != MethodEntry {
			if obj := scope.Lookup(d.Name); obj != nil && c.own[obj] && c.aliases[obj] == nil {
				continue // the cell declares the name anew: replaced, not recompiled
			}
		}
		if d.Kind == MethodEntry && d.Recv != nil && st.redefinesType(c, d.Recv.Name) {
			// The cell redefines the method's type: the method is carried
			// to the new type, unless the cell declares it itself, or the
			// new type has it through an embedded field (which the old
			// method would hide, as a program with the new type alone
			// would not).
			if st.declaresMethod(c, d.Recv.Name, d.Name) {
				continue
			}
			if via := promotedFrom(scope.Lookup(d.Recv.Name), st.s.pkg, d.Name); via != "" {
				st.dropped[d] = dropNote{what: describe(d), notCarried: d.Recv.Name, promoted: true,
					why: fmt.Sprintf("the new %s has %s through its field %s", d.Recv.Name, d.Name, via)}
				continue
			}
			more = append(more, d)
			continue
		}
		if d.Kind == MethodEntry && d.Recv != nil {
			if obj := scope.Lookup(d.Recv.Name); obj != nil && c.own[obj] && c.aliases[obj] == nil {
				continue // the cell declares the type's name anew as something else: the methods stay with the old type
			}
			if !st.rehome[d.Recv] {
				more = append(more, d.Recv)
			}
			for _, m := range s.methods[d.Recv] {
				if !st.rehome[m] {
					more = append(more, m)
				}
			}
			continue
		}
		more = append(more, d)
	}
	more = append(more, st.aliasTargets(more)...)
	sort.Slice(more, func(i, j int) bool { return more[i].ID < more[j].ID })
	out := more[:0]
	seen := map[*Entry]bool{}
	for _, e := range more {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// redefinesType reports whether the cell's own declarations declare a type
// named name.
func (st *state) redefinesType(c *Cell, name string) bool {
	for _, d := range c.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, sp := range g.Specs {
				if sp.(*ast.TypeSpec).Name.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// declaresMethod reports whether the cell declares method m on type t.
func (st *state) declaresMethod(c *Cell, t, m string) bool {
	for _, d := range c.Decls {
		_, methods := declaredNames(d)
		for _, x := range methods {
			if x[0] == t && x[1] == m {
				return true
			}
		}
	}
	return false
}

// Commit records what a cell bound once it ran: its imports, declarations,
// re-homed declarations, and the hoisted variables for which done reports
// true (those whose defining statement completed; nil means all). It
// returns the bindings made, in declaration order.
func (s *Session) Commit(c *Cell, done func(*Hoisted) bool) []Binding {
	for _, im := range c.Imports {
		s.bindImport(im)
	}
	newByObj := map[types.Object]*Entry{}
	type pending struct {
		e    *Entry
		node ast.Node
		recv string
	}
	var list []pending
	add := func(kind Kind, name string, obj types.Object, unit *Unit, node ast.Node, recv string) {
		if obj == nil {
			return
		}
		s.nextID++
		e := &Entry{ID: s.nextID, Kind: kind, Name: name, Obj: obj, Cell: c.N, Unit: unit}
		newByObj[obj] = e
		list = append(list, pending{e, node, recv})
	}
	decls := append([]ast.Decl(nil), c.Decls...)
	for _, r := range c.Rehomed {
		decls = append(decls, r.Decl)
	}
	for _, d := range decls {
		unit := c.units[d]
		switch d := d.(type) {
		case *ast.FuncDecl:
			obj := c.Info.Defs[d.Name]
			if d.Recv == nil {
				if d.Name.Name != "init" && d.Name.Name != "_" {
					add(FuncEntry, d.Name.Name, obj, unit, d, "")
				}
				continue
			}
			recv := ""
			if fn, ok := obj.(*types.Func); ok {
				if r := fn.Type().(*types.Signature).Recv(); r != nil {
					recv = baseTypeName(r.Type())
				}
			}
			add(MethodEntry, d.Name.Name, obj, unit, d, recv)
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					add(TypeEntry, sp.Name.Name, c.Info.Defs[sp.Name], unitFor(unit, d), sp, "")
				case *ast.ValueSpec:
					kind := ConstEntry
					if d.Tok == token.VAR {
						kind = VarEntry
					}
					for _, id := range sp.Names {
						if id.Name == "_" {
							continue
						}
						u := unitFor(unit, d)
						if kind == VarEntry {
							u = nil // variables are never recompiled
						}
						add(kind, id.Name, c.Info.Defs[id], u, sp, "")
					}
				}
			}
		}
	}
	// Hoisted variables and constants moved out of the statements.
	for _, h := range c.Hoisted {
		if done != nil && !done(h) {
			continue
		}
		add(VarEntry, h.Name, h.Obj, nil, nil, "")
		list[len(list)-1].e.Hoisted = true
	}
	if c.Body != nil {
		for _, d := range c.File.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST || c.units[g] != nil {
				continue
			}
			for _, sp := range g.Specs {
				for _, id := range sp.(*ast.ValueSpec).Names {
					if id.Name != "_" {
						add(ConstEntry, id.Name, c.Info.Defs[id], nil, sp, "")
					}
				}
			}
		}
	}

	// Dependencies, then the bindings.
	lookup := func(obj types.Object) *Entry {
		if e := newByObj[obj]; e != nil {
			return e
		}
		if e := c.aliases[obj]; e != nil {
			return e
		}
		return s.byObj[obj]
	}
	newTypes := map[string]*Entry{}
	for _, p := range list {
		if p.e.Kind == TypeEntry {
			newTypes[p.e.Name] = p.e
		}
	}
	var out []Binding
	for _, p := range list {
		e := p.e
		if p.node != nil {
			e.Deps = deps(c.Info, p.node, e, lookup)
		}
		if e.Kind == MethodEntry {
			e.Recv = newTypes[p.recv]
			if e.Recv == nil {
				continue // a method of a type that did not compile here (cannot happen)
			}
			if s.methods[e.Recv] == nil {
				s.methods[e.Recv] = map[string]*Entry{}
			}
			s.methods[e.Recv][e.Name] = e
			s.byObj[e.Obj] = e
			out = append(out, Binding{New: e})
			continue
		}
		old := s.names[e.Name]
		b := Binding{New: e, Old: old}
		if old != nil {
			b.Compatible = compatible(old, e.Obj)
			if b.Compatible {
				e.Prev = old
			}
		}
		s.names[e.Name] = e
		delete(s.imports, e.Name)
		s.byObj[e.Obj] = e
		out = append(out, b)
	}
	s.sources[c.N] = c.Src
	var used []*Entry
	seen := map[*Entry]bool{}
	for _, obj := range c.Info.Uses {
		if e := c.EntryOf(obj); e != nil && !seen[e] {
			seen[e] = true
			used = append(used, e)
		}
	}
	s.committed[c.Src] = &committedCell{cell: c, bindings: out, used: used}
	return out
}

// unitFor returns the unit of a spec: the whole declaration's unit (a
// grouped declaration is recompiled whole).
func unitFor(u *Unit, _ *ast.GenDecl) *Unit { return u }

// deps returns the entries node uses, other than self.
func deps(info *types.Info, node ast.Node, self *Entry, lookup func(types.Object) *Entry) []*Entry {
	seen := map[*Entry]bool{}
	var out []*Entry
	ast.Inspect(node, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		obj := info.Uses[id]
		if obj == nil {
			return true
		}
		if e := lookup(obj); e != nil && e != self && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// baseTypeName is the name of a receiver's base type.
func baseTypeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

// bindImport records an import; the newest binding of a name wins. Blank
// imports bind nothing but are kept (once per path): what their init does
// is part of the session, and a launch replays them in the workers.
func (s *Session) bindImport(im *Import) {
	switch im.Name {
	case "_", ".":
		for _, old := range s.special {
			if old.Name == im.Name && old.Path == im.Path {
				return
			}
		}
		s.special = append(s.special, im)
		return
	}
	s.imports[im.Name] = im
	delete(s.names, im.Name)
}

// committedCell remembers a committed cell for Rerun.
type committedCell struct {
	cell     *Cell
	bindings []Binding
	used     []*Entry // session entries the cell's code refers to
}

// Rerun returns the checked cell to run again when src is the source of a
// committed cell whose bindings are all still in force, and everything it
// used too: running that cell again changes no binding, so the code
// compiled for it can run again as is. It returns nil otherwise.
func (s *Session) Rerun(src string) *Cell {
	cc := s.committed[src]
	if cc == nil {
		return nil
	}
	own := map[*Entry]bool{}
	for _, b := range cc.bindings {
		if !s.current(b.New) {
			return nil
		}
		own[b.New] = true
	}
	for _, d := range cc.used {
		if !own[d] && !s.current(d) {
			return nil
		}
	}
	// Its hoisted variables must all have been bound (a cell that stopped
	// half-way defines its later variables only when it runs again).
	if len(cc.cell.Hoisted) > 0 {
		bound := 0
		for _, b := range cc.bindings {
			if b.New.Hoisted {
				bound++
			}
		}
		if bound != len(cc.cell.Hoisted) {
			return nil
		}
	}
	// The imports it reached must still bind the same packages.
	for _, is := range cc.cell.File.Imports {
		if is.Name == nil || is.Name.Name == "." || is.Name.Name == "_" || reserved(is.Name.Name) {
			continue
		}
		if im := s.imports[is.Name.Name]; im != nil && `"`+im.Path+`"` != is.Path.Value {
			return nil
		}
	}
	return cc.cell
}

// CompatibleFuncs returns the session's current functions that cell c
// redefines with the identical signature (by name; c's own declarations
// and the ones re-homed into it). Code compiled against them may call c's
// definitions instead, before c commits: Go declares a program's functions
// before any of its code runs, so the cell's own statements must already
// reach its definitions through earlier cells' code.
func (s *Session) CompatibleFuncs(c *Cell) map[string]*Entry {
	out := map[string]*Entry{}
	decls := append([]ast.Decl(nil), c.Decls...)
	for _, r := range c.Rehomed {
		decls = append(decls, r.Decl)
	}
	for _, d := range decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || fd.Name.Name == "init" || fd.Name.Name == "_" {
			continue
		}
		old := s.names[fd.Name.Name]
		if obj := c.Info.Defs[fd.Name]; old != nil && obj != nil && old.Kind == FuncEntry && compatible(old, obj) {
			out[fd.Name.Name] = old
		}
	}
	return out
}

// aliasTargets returns the session types, with their methods, that the
// aliases among the re-homed types and more denote and that are not
// re-homed yet: go/types follows a method's receiver through aliases to the
// defined type in the same file, which must therefore be there too.
func (st *state) aliasTargets(more []*Entry) []*Entry {
	s := st.s
	var out []*Entry
	var add func(e *Entry)
	add = func(e *Entry) {
		if e != nil && e.Kind == MethodEntry {
			// A receiver written with an alias of the session: the alias.
			if fn, ok := e.Obj.(*types.Func); ok {
				if r := fn.Type().(*types.Signature).Recv(); r != nil {
					t := r.Type()
					if p, ok := t.(*types.Pointer); ok {
						t = p.Elem()
					}
					if a, ok := t.(*types.Alias); ok {
						if ae := s.byObj[a.Obj()]; ae != nil && ae.Unit != nil && !st.rehome[ae] && s.names[ae.Name] == ae {
							out = append(out, ae)
							add(ae)
						}
					}
				}
			}
			return
		}
		if e == nil || e.Kind != TypeEntry {
			return
		}
		tn, ok := e.Obj.(*types.TypeName)
		if !ok || !tn.IsAlias() {
			return
		}
		named, ok := types.Unalias(tn.Type()).(*types.Named)
		if !ok {
			return
		}
		target := s.byObj[named.Obj()]
		if target == nil || target.Unit == nil || st.rehome[target] || s.names[target.Name] != target {
			return
		}
		if _, gone := st.dropped[target]; gone {
			return
		}
		out = append(out, target)
		for _, m := range s.methods[target] {
			if !st.rehome[m] {
				out = append(out, m)
			}
		}
	}
	for e := range st.rehome {
		add(e)
	}
	for _, e := range more {
		add(e)
	}
	return out
}

// promotedFrom names the embedded field through which the type named by
// obj has a field or method called name ("" when it has none, or has it
// itself).
func promotedFrom(obj types.Object, pkg *types.Package, name string) string {
	tn, ok := obj.(*types.TypeName)
	if !ok {
		return ""
	}
	found, index, _ := types.LookupFieldOrMethod(tn.Type(), true, pkg, name)
	if found == nil || len(index) < 2 {
		return ""
	}
	st, ok := tn.Type().Underlying().(*types.Struct)
	if !ok || index[0] >= st.NumFields() {
		return ""
	}
	return st.Field(index[0]).Name()
}
