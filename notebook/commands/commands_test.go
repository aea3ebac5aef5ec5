package commands

import (
	"context"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// The help names every command.
func TestHelpNamesEveryCommand(t *testing.T) {
	r := New()
	help := r.Help()
	for name := range r.byName {
		n := strings.TrimPrefix(name, "%")
		if !strings.Contains(help, "%"+n) {
			t.Errorf("%%help does not name %%%s:\n%s", n, help)
		}
	}
	for name := range r.cellMagics {
		if !strings.Contains(help, "%%"+name) {
			t.Errorf("%%help does not name %%%%%s", name)
		}
	}
	for _, title := range sectionTitles {
		if !strings.Contains(help, title) {
			t.Errorf("no section %q", title)
		}
	}
}

// fakeEnv is an Env of a session without compiled cells.
type fakeEnv struct {
	out   strings.Builder
	shown []frontend.MIMEBundle
	decls []session.Declaration
}

func (f *fakeEnv) Write(_ string, p []byte)                                { f.out.Write(p) }
func (f *fakeEnv) Publish(d frontend.MIMEBundle)                           { f.shown = append(f.shown, d) }
func (f *fakeEnv) Flush()                                                  {}
func (f *fakeEnv) Version() string                                         { return "test" }
func (f *fakeEnv) Declarations() []session.Declaration                     { return f.decls }
func (f *fakeEnv) Values() []session.Var                                   { return nil }
func (f *fakeEnv) Reset() error                                            { f.decls = nil; return nil }
func (f *fakeEnv) Compiled() Compiled                                      { return nil }
func (f *fakeEnv) Interpreted() string                                     { return "no toolchain" }
func (f *fakeEnv) GonbDir() string                                         { return "" }
func (f *fakeEnv) Widgets() bool                                           { return false }
func (f *fakeEnv) Heartbeat() bool                                         { return false }
func (f *fakeEnv) KernelID() string                                        { return "k" }
func (f *fakeEnv) Evaluate(context.Context, string) (any, *frontend.Error) { return nil, nil }
func (f *fakeEnv) Input(context.Context, string, bool) (string, error)     { return "", nil }

func runLine(t *testing.T, r *Registry, env Env, c *Cell, line string) *frontend.Error {
	t.Helper()
	gc, err := gonb.Parse(line)
	if err != nil || len(gc.Commands) == 0 {
		t.Fatalf("%q: %v %+v", line, err, gc)
	}
	return r.Run(context.Background(), env, c, gc.Commands[len(gc.Commands)-1])
}

func TestRunRoutesByName(t *testing.T) {
	r := New()
	env := &fakeEnv{decls: []session.Declaration{{Kind: session.KindVar, Name: "x", Names: []string{"x"}}}}
	c := &Cell{Src: "%who"}
	if err := runLine(t, r, env, c, "%who"); err != nil || !strings.HasPrefix(env.out.String(), "x ") {
		t.Errorf("%%who: %v %q", err, env.out.String())
	}
	if err := runLine(t, r, env, c, "%nosuch"); err == nil || err.Value != "unknown magic %nosuch (try %help)" {
		t.Errorf("unknown: %+v", err)
	}
	// Commands that need compiled cells say why they cannot run.
	for _, line := range []string{"%go get a.b/c@v1", "%use ./lib", "%timeit 1", "%rm x"} {
		if err := runLine(t, r, env, c, line); err == nil || !strings.Contains(err.Value, "no toolchain") {
			t.Errorf("%s: %+v", line, err)
		}
	}
	// %time asks for the cell to be timed, and splices its code.
	c = &Cell{Src: "%time f()"}
	if err := runLine(t, r, env, c, "%time f()"); err != nil || !c.Time || len(c.Splices) != 1 || c.Splices[0].Code != "      f()" {
		t.Errorf("%%time: %v %+v", err, c)
	}
	// A cell magic not on the first line.
	if err := r.Run(context.Background(), env, &Cell{}, gonb.Command{Line: 2, Text: "%%writefile x"}); err == nil || !strings.Contains(err.Value, "can only appear at the start of the cell") {
		t.Errorf("%%%%writefile later: %+v", err)
	}
}
