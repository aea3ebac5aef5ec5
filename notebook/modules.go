package notebook

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
func (e *Engine) noModules(magic string) *frontend.Error {
	return magicError("%s: compiled cells are unavailable here (%s), and modules need them: "+
		"cells can import only the standard library and the packages linked into the kernel", magic, e.compReason())
}

// compReason says why compiled cells are unavailable.
func (e *Engine) compReason() string {
	var u *build.Unavailable
	if errors.As(e.compErr, &u) {
		return u.Reason
	}
	if e.compErr == nil {
		return "unknown"
	}
	return e.compErr.Error()
}

// progress reports what the toolchain does on the cell's stderr.
func (e *Engine) progress(msg string) { e.out.Write("stderr", []byte("goaccel: "+msg+"\n")) }

// goMagic runs %go get MODULE@VERSION... and %go mod.
func (e *Engine) goMagic(ctx context.Context, arg string) *frontend.Error {
	f := strings.Fields(arg)
	if len(f) == 0 {
		return magicError("%%go: say what: %%go get MODULE@VERSION, %%go mod")
	}
	if e.compiled == nil {
		return e.noModules("%go " + f[0])
	}
	builder := e.compiled.Builder()
	switch f[0] {
	case "get":
		if len(f) == 1 {
			return magicError("%%go get: name a module, e.g. %%go get gonum.org/v1/plot@v0.17.0 (@latest for the latest version)")
		}
		if err := builder.Get(ctx, e.progress, f[1:]...); err != nil {
			if session.IsCanceled(err) && ctx.Err() != nil {
				return session.ErrInterrupted()
			}
			return moduleError("%go get", err)
		}
		mod, _ := builder.GoMod()
		for _, q := range f[1:] {
			p, _, _ := strings.Cut(q, "@")
			if v, ok := requiredVersion(mod, p); ok {
				e.out.Write("stdout", []byte(fmt.Sprintf("%s %s\n", p, v)))
			}
		}
	case "mod":
		if len(f) > 1 {
			return magicError("%%go mod takes no arguments: it shows the session module's go.mod")
		}
		mod, err := builder.GoMod()
		if err != nil {
			return magicError("%%go mod: %v", err)
		}
		e.out.Write("stdout", []byte(mod))
	default:
		return magicError("%%go %s: unknown; %%go get MODULE@VERSION adds or pins a module, %%go mod shows the session's go.mod (use !go %s for the go command itself)", f[0], arg)
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
func (e *Engine) useMagic(ctx context.Context, arg string) *frontend.Error {
	if e.compiled == nil {
		return e.noModules("%use")
	}
	builder := e.compiled.Builder()
	if arg == "" {
		wd, err := os.Getwd()
		if err != nil {
			return magicError("%%use: %v", err)
		}
		used, err := builder.GoWork(ctx, wd, e.progress)
		if err != nil {
			return moduleError("%use", err)
		}
		if used == nil {
			return magicError("%%use: no go.work in %s; name a module's directory: %%use ./mylib", wd)
		}
		e.out.Write("stdout", []byte("using "+strings.Join(used, ", ")+" (go.work)\n"))
		return nil
	}
	dir := arg
	if strings.HasPrefix(dir, "~") {
		dir = getenvOr("HOME", "~") + dir[1:]
	}
	path, err := builder.Use(ctx, dir, e.progress)
	if err != nil {
		return moduleError("%use "+arg, err)
	}
	e.out.Write("stdout", []byte(fmt.Sprintf("using %s from %s; after editing it, run %%use again to load the new version\n", path, arg)))
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
func (e *Engine) goWorkFix(ctx context.Context) *frontend.Error {
	if e.compiled == nil {
		return e.noModules("%goworkfix")
	}
	fixes, err := e.compiled.Builder().GoWorkFix(ctx, e.progress)
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
		e.out.Write("stdout", []byte(msg))
		// As GoNB's, the folders of go.work's modules are tracked (%track).
		e.gonb.addTracked(f.Dir)
	}
	if err != nil {
		if session.IsCanceled(err) && ctx.Err() != nil {
			return session.ErrInterrupted()
		}
		return moduleError("%goworkfix", err)
	}
	return nil
}
