package commands

// The session's commands: %reset, %who, %whos, %ls, %rm, %goroutines,
// %jobs, %timeit.

import (
	"context"
	"fmt"
	"html"
	"sort"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

func registerSession(r *Registry) {
	r.Register(&Command{Names: []string{"reset"}, Help: "  %reset           fresh interpreter: forget all declarations and values", Run: resetMagic})
	r.Register(&Command{Names: []string{"who"}, Help: "  %who             names declared so far, with their kinds", Run: whoMagic})
	r.Register(&Command{Names: []string{"whos"}, Help: "  %whos            the session's variables (type, memory, length or value),\n                   functions, types and constants, as a table", Run: whosMagic})
	r.Register(&Command{Names: []string{"timeit", "%timeit"}, Help: `  %timeit [-n N] [-r R] [-p P] [-q] [-o] STMT
                   time STMT as IPython does: N loops (chosen so one run takes
                   at least 0.2 s) in each of R runs (7), mean ± std. dev. per
                   loop; built once as Go code, and nothing it declares stays
  %%timeit [OPTIONS] [SETUP]
                   the same for the rest of the cell; SETUP runs once per run,
                   untimed`, Run: timeitMagic})
	r.Register(&Command{Names: []string{"goroutines"}, Help: "  %goroutines      the goroutines cells started that are still running: state,\n                   where they were started, where they are", Run: goroutinesMagic})
	r.Register(&Command{Names: []string{"jobs"}, Help: `  %jobs            interrupted cells whose goroutines have not stopped yet
                   (blocked in a system or cgo call): since when, and where;
                   %jobs wait waits until they have stopped`, Run: jobsMagic})
	r.Register(&Command{Names: []string{"ls", "list"}, Section: GoNB, Help: "  %ls / %list      the session's declarations; %rm (or %remove) NAME... forgets\n                   some", Run: listMagic})
	r.Register(&Command{Names: []string{"rm", "remove"}, Section: GoNB, Run: removeMagic})
}

func resetMagic(_ context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	if arg == "go.mod" {
		return Errorf("%%reset go.mod: a Go process cannot unload the modules cells loaded: restart the kernel for a fresh session module")
	}
	if arg != "" {
		return Errorf("%%reset takes no arguments (GoNB's %%reset go.mod is not available here)")
	}
	if err := env.Reset(); err != nil {
		return Errorf("%%reset: %v", err)
	}
	stdout(env, "* State reset: all memorized declarations discarded.\n")
	return nil
}

func whoMagic(_ context.Context, env Env, _ *Cell, _ string) *frontend.Error {
	decls := env.Declarations()
	if len(decls) == 0 {
		stdout(env, "nothing declared yet\n")
		return nil
	}
	var b strings.Builder
	for _, d := range decls {
		if d.Kind == session.KindImport {
			fmt.Fprintf(&b, "%-20s %s %q\n", d.Name, d.Kind, d.Path)
			continue
		}
		names := d.Name
		if len(d.Names) > 1 {
			names = strings.Join(d.Names, ", ")
		}
		fmt.Fprintf(&b, "%-20s %s\n", names, d.Kind)
	}
	stdout(env, b.String())
	return nil
}

func whosMagic(_ context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	if arg != "" {
		return Errorf("%%whos takes no arguments")
	}
	env.Publish(whos(env))
	return nil
}

func goroutinesMagic(_ context.Context, env Env, _ *Cell, _ string) *frontend.Error {
	comp := env.Compiled()
	if comp == nil {
		stdout(env, "goaccel: cells are interpreted here ("+env.Interpreted()+"); their goroutines are not tracked\n")
		return nil
	}
	stdout(env, comp.Goroutines())
	return nil
}

func jobsMagic(ctx context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	comp := env.Compiled()
	if comp == nil {
		stdout(env, "goaccel: cells are interpreted here ("+env.Interpreted()+"); an interrupt stops them where they are\n")
		return nil
	}
	switch strings.TrimSpace(arg) {
	case "":
		stdout(env, comp.Jobs())
	case "wait":
		if err := comp.WaitJobs(ctx, func(s string) { stdout(env, s) }); err != nil {
			return interrupted()
		}
	default:
		return Errorf("%%jobs takes nothing or wait, not %q", arg)
	}
	return nil
}

// listMagic is %ls: the session's declarations by kind, as HTML.
func listMagic(_ context.Context, env Env, _ *Cell, _ string) *frontend.Error {
	groups := map[string][]string{}
	for _, d := range env.Declarations() {
		kind := map[session.DeclKind]string{session.KindImport: "Imports", session.KindConst: "Constants", session.KindType: "Types",
			session.KindVar: "Variables", session.KindFunc: "Functions", session.KindMethod: "Functions"}[d.Kind]
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		if d.Kind == session.KindImport && (d.Name == "_" || d.Name == ".") {
			names = []string{d.Name + " " + d.Path}
		}
		groups[kind] = append(groups[kind], names...)
	}
	env.Publish(frontend.MIMEBundle{"text/html": "<h3>Memorized Definitions</h3>\n"})
	for _, kind := range []string{"Imports", "Constants", "Types", "Variables", "Functions"} {
		names := groups[kind]
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString("<h4>" + kind + "</h4>\n<ul>\n")
		for i, n := range names {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<li><pre>" + html.EscapeString(n) + "</pre></li>")
		}
		b.WriteString("\n</ul>")
		env.Publish(frontend.MIMEBundle{"text/html": b.String()})
	}
	return nil
}

// removeMagic is %rm NAME...: the session forgets the declarations.
func removeMagic(_ context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	names := strings.Fields(arg)
	if len(names) == 0 {
		return Errorf("%%rm: name the declarations to forget (%%ls lists them)")
	}
	comp := env.Compiled()
	if comp == nil {
		return Errorf("%%rm: cells are interpreted here (%s), and the interpreter cannot forget a declaration; %%reset forgets them all", env.Interpreted())
	}
	for _, n := range names {
		kind, ok := comp.Forget(n)
		if !ok {
			stderr(env, fmt.Sprintf(". key %q not found in any definition, not removed\n", n))
			continue
		}
		stdout(env, fmt.Sprintf(". removed %s %s\n", kind, n))
	}
	return nil
}
