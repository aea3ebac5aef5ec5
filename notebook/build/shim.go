package build

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// shimPath is the import path of the stand-in for runtime.addmoduledata.
const shimPath = "goaccel.shim"

// shimGo and shimAsm are the shim package: runtime.addmoduledata, jumping
// to the address in modreg.AddModuleDataPC. Keep points at that variable
// (the dynamic linker resolves it to the kernel's before the plugin's init
// functions run); every cell refers to Keep (shimRef), which keeps both in
// the link: the stand-in itself is added after the linker has decided what
// is used.
const shimGo = `package shim

import "` + ModulePath + `/notebook/shlib/modreg"

// Keep is the kernel's modreg.AddModuleDataPC.
var Keep = &modreg.AddModuleDataPC
`

const shimAsm = `#include "textflag.h"

// Called from the plugin's .init_array with the platform's ABI: the module
// data is in DI, passed on untouched. Reading a global clobbers R15
// (dynamic linking), which the caller expects kept.
TEXT runtime·addmoduledata(SB),NOSPLIT|NOFRAME,$0-0
	PUSHQ	R15
	MOVQ	·Keep(SB), AX
	MOVQ	(AX), AX
	POPQ	R15
	JMP	AX
`

// shimRef is compiled into every cell beside its source: it imports the
// shim so that the linker includes it.
//
// It is compiled first, so that its variable is initialized before the
// cell's: the plugin's module goes to the head of the runtime's list
// (modreg.Promote) before any of the cell's code runs.
const shimRef = `package main

import (
	goaccelshim "` + shimPath + `"
	goaccelmodreg "` + ModulePath + `/notebook/shlib/modreg"
)

var _ = goaccelmodreg.Promote()

func init() {
	if goaccelshim.Keep == nil {
		panic("goaccel: the cell's module hook is missing")
	}
}
`

// versionScript keeps the plugin's package fingerprints to itself (see
// above).
const versionScript = "{\n  global: *;\n  local: go?link.pkghash*;\n};\n"

// compileShim builds the shim package into dir/shim.a.
func (b *Builder) compileShim(ctx context.Context, dir, cfg string) error {
	goFile, asmFile := filepath.Join(dir, "shim.go"), filepath.Join(dir, "shim_amd64.s")
	if err := os.WriteFile(goFile, []byte(shimGo), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(asmFile, []byte(shimAsm), 0o644); err != nil {
		return err
	}
	inc := filepath.Join(b.tc.Env["GOROOT"], "pkg", "include")
	asm := []string{"-p", shimPath, "-dynlink", "-linkshared", "-D", "GOBUILDMODE_shared=1", "-I", inc}
	symabis := filepath.Join(dir, "symabis")
	steps := [][]string{
		append([]string{"asm"}, append(asm, "-gensymabis", "-o", symabis, asmFile)...),
		{"compile", "-p", shimPath, "-dynlink", "-linkshared", "-installsuffix", "dynlink", "-importcfg", cfg,
			"-symabis", symabis, "-o", filepath.Join(dir, "shim.a"), "-pack", goFile},
		append([]string{"asm"}, append(asm, "-o", filepath.Join(dir, "shim.o"), asmFile)...),
	}
	for _, s := range steps {
		if out, err := b.tool(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("building the cells' module hook (go tool %s): %v: %s", s[0], err, lastLines(out, 5))
		}
	}
	// What go tool pack r does (the toolchain no longer ships pack).
	if err := appendToArchive(filepath.Join(dir, "shim.a"), filepath.Join(dir, "shim.o")); err != nil {
		return fmt.Errorf("building the cells' module hook: %w", err)
	}
	for _, f := range []string{goFile, asmFile, symabis, filepath.Join(dir, "shim.o")} {
		os.Remove(f)
	}
	return nil
}

// appendToArchive adds the file obj to the ar archive at archive, as a
// member named by obj's base name.
func appendToArchive(archive, obj string) error {
	data, err := os.ReadFile(obj)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(archive, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	// An ar member header: name, date, uid, gid, mode, size, magic; the
	// data is padded to an even length.
	hdr := fmt.Sprintf("%-16s%-12d%-6d%-6d%-8o%-10d`\n", filepath.Base(obj), 0, 0, 0, 0o644, len(data))
	if len(data)%2 == 1 {
		data = append(data, '\n')
	}
	if _, err := f.Write(append([]byte(hdr), data...)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// extldScript is the C linker the Go linker runs for a cell's plugin: the
// compiler driver, with two shortcuts.
//   - Before each link the Go linker tries flags it may pass by linking a
//     trivial C file, two or three times, about 0.1 s each; their answers
//     depend only on the compiler and the flags, so the script keeps them
//     (by the probe's arguments, the Go linker's temporary directory left
//     out) in probes/ beside it.
//   - The link itself names the shared library (-L its directory), whose
//     hundred thousand symbols the C linker would read (0.4 s) only to find
//     that the plugin's references are defined there. It gets stub/ instead:
//     a library of the same name without symbols; the references stay
//     undefined in the plugin, as they would anyway, and the dynamic linker
//     binds them when the plugin is loaded, after the real library. The
//     same goes for a view of the library (linkview.go): the linker names
//     the view's directory, which becomes the stub's, and the plugin's
//     run path names the library's own.
const extldScript = `#!/bin/sh
# Written by goaccel (notebook/build/shim.go).
cc=@CC@
here=${0%/*}
probe=
for a in "$@"; do case "$a" in */trivial.c) probe=1 ;; esac; done
if [ -z "$probe" ]; then
	for a in "$@"; do
		shift
		case "$a" in
		"-L$here"|"-L$here/"|"-L$here/views/"*) set -- "$@" "-L$here/stub" ;;
		"-Wl,-rpath=$here/views/"*) set -- "$@" "-Wl,-rpath=$here/" ;;
		*) set -- "$@" "$a" ;;
		esac
	done
	exec "$cc" "$@"
fi
dir=$here/probes
key=$(for a in "$@"; do case "$a" in */go-link-*/*) a="TMP/${a##*/}" ;; esac; printf '%s\n' "$a"; done | cksum)
key=${key%% *}-${key#* }
if [ -f "$dir/$key.rc" ] && [ -f "$dir/$key.out" ]; then
	if [ -s "$dir/$key.out" ]; then cat "$dir/$key.out"; fi
	read -r rc < "$dir/$key.rc"
	exit "$rc"
fi
out=$("$cc" "$@" 2>&1)
rc=$?
if mkdir -p "$dir"; then
	printf '%s' "$out" > "$dir/$key.out.$$" && mv "$dir/$key.out.$$" "$dir/$key.out"
	echo "$rc" > "$dir/$key.rc.$$" && mv "$dir/$key.rc.$$" "$dir/$key.rc"
fi
printf '%s' "$out"
exit "$rc"
`

// writeExtld writes the script (when it is not already as this goaccel
// writes it) and the stub library (once) into dir, and returns the
// script's path.
func writeExtld(ctx context.Context, dir, cc, lib string) (string, error) {
	path := filepath.Join(dir, "extld")
	script := strings.ReplaceAll(extldScript, "@CC@", shellQuote(cc))
	if old, err := os.ReadFile(path); err == nil && string(old) == script {
		return path, nil
	}
	stub := filepath.Join(dir, "stub")
	name := filepath.Base(lib)
	if !fileExists(filepath.Join(stub, name)) {
		if err := os.MkdirAll(stub, 0o755); err != nil {
			return "", err
		}
		cmd := exec.CommandContext(ctx, cc, "-shared", "-o", filepath.Join(stub, name), "-Wl,-soname,"+name, "-x", "c", os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("making the stub of the shared library: %v: %s", err, lastLines(string(out), 5))
		}
	}
	if err := writeReplacing(path, []byte(script), 0o755); err != nil {
		return "", err
	}
	return path, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
