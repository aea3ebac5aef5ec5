package commands

// The magics of modules for compiled cells: %go get, %go mod, %use.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// noModules is the error of a module magic when cells are interpreted.
func noModules(env Env, magic string) *frontend.Error {
	return Errorf("%s: compiled cells are unavailable here (%s), and modules need them: "+
		"cells can import only the standard library and the packages linked into the kernel", magic, env.Interpreted())
}

// progress reports what the toolchain does on the cell's stderr.
func progress(env Env) func(string) {
	return func(msg string) { stderr(env, "goaccel: "+msg+"\n") }
}

// goMagic runs %go get MODULE@VERSION... and %go mod.
func goMagic(ctx context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	f := strings.Fields(arg)
	if len(f) == 0 {
		return Errorf("%%go: say what: %%go get MODULE@VERSION, %%go mod")
	}
	comp := env.Compiled()
	if comp == nil {
		return noModules(env, "%go "+f[0])
	}
	builder := comp.Builder()
	switch f[0] {
	case "get":
		if len(f) == 1 {
			return Errorf("%%go get: name a module, e.g. %%go get gonum.org/v1/plot@v0.17.0 (@latest for the latest version)")
		}
		if err := builder.Get(ctx, progress(env), f[1:]...); err != nil {
			if session.IsCanceled(err) && ctx.Err() != nil {
				return session.ErrInterrupted()
			}
			return moduleError("%go get", err)
		}
		mod, _ := builder.GoMod()
		for _, q := range f[1:] {
			p, _, _ := strings.Cut(q, "@")
			if v, ok := requiredVersion(mod, p); ok {
				stdout(env, fmt.Sprintf("%s %s\n", p, v))
			}
		}
	case "mod":
		if len(f) > 1 {
			return Errorf("%%go mod takes no arguments: it shows the session module's go.mod")
		}
		mod, err := builder.GoMod()
		if err != nil {
			return Errorf("%%go mod: %v", err)
		}
		stdout(env, mod)
	default:
		return Errorf("%%go %s: unknown; %%go get MODULE@VERSION adds or pins a module, %%go mod shows the session's go.mod (use !go %s for the go command itself)", f[0], arg)
	}
	return nil
}

// requiredVersion finds the version go.mod requires module at.
func requiredVersion(gomod, module string) (string, bool) {
	for _, l := range strings.Split(gomod, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1], true
		}
	}
	return "", false
}

// useMagic runs %use DIR (a local module) and %use (the go.work beside the
// notebook, again).
func useMagic(ctx context.Context, env Env, _ *Cell, arg string) *frontend.Error {
	comp := env.Compiled()
	if comp == nil {
		return noModules(env, "%use")
	}
	builder := comp.Builder()
	if arg == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Errorf("%%use: %v", err)
		}
		used, err := builder.GoWork(ctx, wd, progress(env))
		if err != nil {
			return moduleError("%use", err)
		}
		if used == nil {
			return Errorf("%%use: no go.work in %s; name a module's directory: %%use ./mylib", wd)
		}
		stdout(env, "using "+strings.Join(used, ", ")+" (go.work)\n")
		return nil
	}
	dir := arg
	if strings.HasPrefix(dir, "~") {
		dir = getenvOr("HOME", "~") + dir[1:]
	}
	path, err := builder.Use(ctx, dir, progress(env))
	if err != nil {
		return moduleError("%use "+arg, err)
	}
	stdout(env, fmt.Sprintf("using %s from %s; after editing it, run %%use again to load the new version\n", path, arg))
	return nil
}

// moduleError is the cell error of a failed module operation.
func moduleError(what string, err error) *frontend.Error {
	var ce *build.ConflictError
	var fe *build.FetchError
	name := "ModuleError"
	switch {
	case errors.As(err, &ce):
		name = "VersionConflict"
	case errors.As(err, &fe):
		name = "FetchError"
	}
	msg := err.Error()
	if !strings.Contains(msg, what) {
		msg = what + ": " + msg
	}
	return &frontend.Error{Name: name, Value: msg, Traceback: strings.Split(msg, "\n")}
}

// goWorkFix is GoNB's %goworkfix: the modules the go.work in the session
// module's directory uses (GoNB notebooks make one with
// `!*go work init && go work use ...`) get replace directives, as %use
// gives them.
func goWorkFix(ctx context.Context, env Env, state *State) *frontend.Error {
	comp := env.Compiled()
	if comp == nil {
		return noModules(env, "%goworkfix")
	}
	fixes, err := comp.Builder().GoWorkFix(ctx, progress(env))
	for _, f := range fixes {
		var msg string
		switch f.Status {
		case "added":
			msg = fmt.Sprintf("\t- Added replace rule for module %q to local directory %q.\n", f.Module, f.Dir)
		case "exists":
			msg = fmt.Sprintf("\t- Replace rule for module %q to local directory %q already exists.\n", f.Module, f.Dir)
		case "cache":
			msg = fmt.Sprintf("\t- Module %q in %q is the module cache's copy of the version the session already uses: no replace rule needed.\n", f.Module, f.Dir)
		}
		stdout(env, msg)
		// As GoNB's, the folders of go.work's modules are tracked (%track).
		state.Track(f.Dir)
	}
	if err != nil {
		if session.IsCanceled(err) && ctx.Err() != nil {
			return session.ErrInterrupted()
		}
		return moduleError("%goworkfix", err)
	}
	return nil
}

func registerModules(r *Registry) {
	r.Register(&Command{Names: nil, Section: Modules, Help: "  import \"M/pkg\"   a module not in the session is fetched (go get) on first import"})
	r.Register(&Command{Names: []string{"go"}, Section: Modules, Help: "  %go get M@V ...  add or pin module versions (GOPROXY, GOPRIVATE, GOFLAGS apply)\n  %go mod          show the session module's go.mod", Run: goMagic})
	r.Register(&Command{Names: []string{"use"}, Section: Modules, Help: `  %use DIR         make the local module in DIR importable; run it again after
                   editing the module to load the new version
  %use             apply the go.work in the working directory again (a go.work
                   beside the notebook is applied before the first cell)`, Run: useMagic})
	r.Register(&Command{Names: []string{"goworkfix"}, Section: GoNB, Help: "  %goworkfix       the go.work in $GONB_TMP_DIR: replace rules for its modules",
		Run: func(ctx context.Context, env Env, _ *Cell, _ string) *frontend.Error {
			return goWorkFix(ctx, env, r.state)
		}})
}
