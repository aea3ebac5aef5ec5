// Package commands holds a cell's commands: goaccel's magics (%help,
// %timeit, %whos, %go get, ...) and GoNB's special commands (!*,
// %goflags, %track, %%writefile, ...). Each is a Command in a Registry,
// with its names, its help and its handler; %help is made from the
// registry. Handlers reach the engine only through Env: the cell's
// output and input, the session's declarations and values, the builder
// and the session module, evaluating an expression. The engine parses a
// cell (package gonb), hands its command lines to Run, and runs its code.
package commands

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/gonb"
)

// Handler runs one command line of cell c; arg is what follows the
// command's name.
type Handler func(ctx context.Context, env Env, c *Cell, arg string) *frontend.Error

// CellHandler runs a cell magic: args are the words after its name, body
// the rest of the cell.
type CellHandler func(ctx context.Context, env Env, args []string, body string) *frontend.Error

// Command is one command: the names it answers to (without %), its help
// (the lines %help shows, each starting with the command as written) and
// its handler.
type Command struct {
	Names   []string
	Section Section
	Help    string
	Run     Handler
}

// CellMagic is a command that takes the whole cell (%%writefile).
type CellMagic struct {
	Name    string
	Section Section
	Help    string
	Run     CellHandler
}

// Section groups %help's lines.
type Section int

const (
	Magics Section = iota
	Modules
	GoNB
)

var sectionTitles = map[Section]string{
	Magics:  "goaccel magics (lines at the start of a cell):",
	Modules: "Modules (compiled cells):",
	GoNB:    "GoNB's cell language (GoNB's notebooks run here as they are):",
}

// Registry is the commands a session knows.
type Registry struct {
	byName     map[string]*Command
	cellMagics map[string]*CellMagic
	order      []any // commands and cell magics, in %help's order
	// state is what GoNB's commands keep between cells.
	state *State
}

// New is a registry of every command goaccel has.
func New() *Registry {
	r := &Registry{byName: map[string]*Command{}, cellMagics: map[string]*CellMagic{}, state: &State{}}
	registerLanguage(r)
	registerMagics(r)
	registerSession(r)
	registerModules(r)
	registerShell(r)
	registerGoNB(r)
	return r
}

// Register adds c; a name already taken is a programming error.
func (r *Registry) Register(c *Command) {
	for _, n := range c.Names {
		if _, dup := r.byName[n]; dup {
			panic("commands: " + n + " registered twice")
		}
		r.byName[n] = c
	}
	r.order = append(r.order, c)
}

// RegisterCellMagic adds m.
func (r *Registry) RegisterCellMagic(m *CellMagic) {
	if _, dup := r.cellMagics[m.Name]; dup {
		panic("commands: %%" + m.Name + " registered twice")
	}
	r.cellMagics[m.Name] = m
	r.order = append(r.order, m)
}

// State is what the session's commands keep between cells.
func (r *Registry) State() *State { return r.state }

// Run runs one command line of cell c.
func (r *Registry) Run(ctx context.Context, env Env, c *Cell, cmd gonb.Command) *frontend.Error {
	name, arg := cmd.Name(), cmd.Arg()
	c.cmd, c.state = cmd, r.state
	if name == "!" {
		return shellCommand(ctx, env, c, arg)
	}
	if strings.HasPrefix(name, "%") {
		// %%NAME: %%time and %%timeit run as their line forms do (they
		// take the rest of the cell); GoNB's cell magics only as a
		// cell's first line (RunCellMagic).
		if _, ok := r.cellMagics[name[1:]]; ok || gonb.IsCellMagic(name[1:]) {
			return Errorf("%q can only appear at the start of the cell", "%"+name)
		}
		if cm, ok := r.byName[name]; ok {
			return cm.Run(ctx, env, c, arg)
		}
		name = name[1:]
	}
	cm, ok := r.byName[name]
	if !ok {
		return Errorf("unknown magic %%%s (try %%help)", name)
	}
	return cm.Run(ctx, env, c, arg)
}

// RunCellMagic runs a cell magic (the cell's first line names it).
func (r *Registry) RunCellMagic(ctx context.Context, env Env, m *gonb.CellMagic) *frontend.Error {
	cm, ok := r.cellMagics[m.Name]
	if !ok {
		return Errorf("%%%%%s: unknown cell magic", m.Name)
	}
	return cm.Run(ctx, env, m.Args, m.Body)
}

// Help is %help's text, made from the commands' help.
func (r *Registry) Help() string {
	bySection := map[Section][]string{}
	for _, o := range r.order {
		switch c := o.(type) {
		case *Command:
			bySection[c.Section] = append(bySection[c.Section], c.Help)
		case *CellMagic:
			bySection[c.Section] = append(bySection[c.Section], c.Help)
		}
	}
	var sections []Section
	for s := range bySection {
		sections = append(sections, s)
	}
	sort.Slice(sections, func(i, j int) bool { return sections[i] < sections[j] })
	var b strings.Builder
	for _, s := range sections {
		b.WriteString(sectionTitles[s] + "\n")
		for _, h := range bySection[s] {
			if h != "" {
				b.WriteString(strings.TrimRight(h, "\n") + "\n")
			}
		}
	}
	b.WriteString(helpTail)
	return b.String()
}

// helpTail is what %help says of cells beyond their commands.
const helpTail = `  gonbui (HTML, Markdown, PNG, SVG, updates, input, widgets, dom) shows its
  output under the running cell; init_NAME functions run as init functions.
Help on a name: strings.Split?  (signature and doc), strings.Split?? (more).
Cells may mix imports, declarations and statements; a trailing expression
is shown as the cell's result. Packages used without an import (strings.X)
are imported automatically.`

// Errorf is a command's error (a MagicError).
func Errorf(format string, a ...any) *frontend.Error {
	msg := fmt.Sprintf(format, a...)
	return &frontend.Error{Name: "MagicError", Value: msg, Traceback: []string{msg}}
}
