package commands

// GoNB's %wasm: the cell, with the session's declarations, is compiled
// for the browser (GOOS=js GOARCH=wasm) and runs in the notebook page.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// wasmTarget is where %wasm programs go: files the Jupyter server serves
// (GONB_JUPYTER_ROOT/jupyter_files/ID, at /files/jupyter_files/ID), or,
// where the server's root is not known, the page itself (the program is
// embedded in the output).
type wasmTarget struct {
	dir, url string
	inline   bool
}

// prepareWasm readies the directory %wasm programs go to and sets
// GONB_WASM_DIR and GONB_WASM_URL, once per session.
func (s *State) prepareWasm(env Env) *frontend.Error {
	comp := env.Compiled()
	if comp == nil {
		return Errorf("%%wasm: cells are interpreted here (%s), and %%wasm needs the Go toolchain", env.Interpreted())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wasm != nil {
		return nil
	}
	id := env.KernelID()
	if id == "" {
		id = randomID()
	}
	t := &wasmTarget{}
	if root := os.Getenv(gonb.EnvJupyterRoot); root != "" {
		t.dir = filepath.Join(root, "jupyter_files", id)
		t.url = "/files/jupyter_files/" + id
	} else {
		t.dir = filepath.Join(env.GonbDir(), "wasm")
		t.inline = true
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return Errorf("%%wasm: %v", err)
	}
	js, err := os.ReadFile(filepath.Join(comp.Builder().GoRoot(), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return Errorf("%%wasm: the Go toolchain's wasm_exec.js: %v", err)
	}
	if err := os.WriteFile(filepath.Join(t.dir, "wasm_exec.js"), js, 0o644); err != nil {
		return Errorf("%%wasm: %v", err)
	}
	os.Setenv(gonb.EnvWasmDir, t.dir)
	os.Setenv(gonb.EnvWasmURL, t.url)
	s.wasm = t
	return nil
}

// RunWasm compiles cell c's code (a %wasm cell) for the browser and shows
// what runs it: a div for the program (GonbWasmDivId) and the script that
// starts it with the cell's arguments. Its declarations do not join the
// session (they may need syscall/js, which the kernel cannot load).
func (r *Registry) RunWasm(ctx context.Context, env Env, c *Cell, code string, main *gonb.Main) *frontend.Error {
	if strings.TrimSpace(code) == "" {
		return nil
	}
	if main == nil {
		return Errorf("%%wasm: the cell has no func main: start its code with %%%% (or declare func main)")
	}
	comp := env.Compiled()
	if comp == nil {
		return Errorf("%%wasm: cells are interpreted here (%s), and %%wasm needs the Go toolchain", env.Interpreted())
	}
	s := r.state
	s.mu.Lock()
	t := s.wasm
	s.mu.Unlock()
	divID := "gonb_id_" + randomID()
	extra := fmt.Sprintf("const (\n\tGonbWasmDir = %q\n\tGonbWasmUrl = %q\n\tGonbWasmDivId = %q\n)\n", t.dir, t.url, divID)
	var decls []gonb.Decl
	for _, d := range env.Declarations() {
		if d.FromStatement {
			continue
		}
		names := d.Names
		if len(names) == 0 {
			names = []string{d.Name}
		}
		decls = append(decls, gonb.Decl{Names: names, Source: d.Source, Import: d.Kind == session.KindImport, Path: d.Path})
	}
	resolve := func(name, src string) string { return comp.Resolve(ctx, name, src) }
	src, err := gonb.Program(decls, code, extra, resolve)
	if err != nil {
		return Errorf("%%wasm: %v", err)
	}
	name := fmt.Sprintf("gonb_cell_%d.wasm", c.Count)
	out := filepath.Join(t.dir, name)
	flags := s.GoFlags()
	if err := comp.Builder().BuildProgram(ctx, src, "js", "wasm", flags, out); err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		msg := "%wasm: " + err.Error()
		return &frontend.Error{Name: "CompileError", Value: msg, Traceback: strings.Split(msg, "\n")}
	}
	argv, _ := json.Marshal(append([]string{"js"}, main.Args...))
	var html, js string
	if t.inline {
		wasm, err := os.ReadFile(out)
		if err != nil {
			return Errorf("%%wasm: %v", err)
		}
		execJS, _ := os.ReadFile(filepath.Join(t.dir, "wasm_exec.js"))
		html = fmt.Sprintf("<div id=%q></div><script>%s</script>", divID, execJS)
		js = fmt.Sprintf(`(() => {
	const go = new globalThis.Go();
	go.argv = %s;
	const bytes = Uint8Array.from(atob(%q), (c) => c.charCodeAt(0));
	WebAssembly.instantiate(bytes, go.importObject).then((r) => go.run(r.instance));
})();
`, argv, base64.StdEncoding.EncodeToString(wasm))
	} else {
		html = fmt.Sprintf("<div id=%q></div><script src=%q></script>", divID, t.url+"/wasm_exec.js")
		js = fmt.Sprintf(`(() => {
	const go = new globalThis.Go();
	go.argv = %s;
	WebAssembly.instantiateStreaming(fetch(%q), go.importObject).then((r) => go.run(r.instance));
})();
`, argv, t.url+"/"+name)
	}
	env.Publish(frontend.MIMEBundle{"text/html": html})
	env.Publish(frontend.MIMEBundle{"text/javascript": js})
	return nil
}

// randomID is 8 random hex digits (GoNB's ids have this form).
func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
