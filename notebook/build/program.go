package build

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildProgram builds src, a program (package main), for goos/goarch with
// the go command in the session module (its requirements and replace
// directives apply) and writes the executable to out. flags are more
// flags for go build. The session's go.mod is left as it was.
func (b *Builder) BuildProgram(ctx context.Context, src, goos, goarch string, flags []string, out string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	dir, err := os.MkdirTemp(b.mod.dir, "program")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		return err
	}
	before := b.mod.snapshot()
	defer b.mod.restore(before)
	var env []string
	for _, kv := range b.mod.environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOOS", "GOARCH", "GOAMD64", "CGO_ENABLED":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	args := append([]string{"build", "-o", out}, flags...)
	args = append(args, "./"+filepath.Base(dir))
	cmd := exec.CommandContext(ctx, b.tc.Go, args...)
	cmd.Dir = b.mod.dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stripFetchNotes(stderr.String()))
		msg = strings.ReplaceAll(msg, "./"+filepath.Base(dir)+"/", "")
		msg = strings.ReplaceAll(msg, filepath.Base(dir)+"/", "")
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("go build (GOOS=%s GOARCH=%s): %s", goos, goarch, msg)
	}
	return nil
}

// GoRoot is the toolchain's GOROOT.
func (b *Builder) GoRoot() string { return b.tc.Env["GOROOT"] }
