package gorun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func run(t *testing.T, file string, cfg Config) Result {
	t.Helper()
	cfg.WorkDir = t.TempDir()
	p := Program{Path: filepath.Join("testdata", file)}
	if files := strings.TrimSuffix(p.Path, ".go") + ".files"; isDir(files) {
		p.FilesDir = files
		if err := CopyDir(cfg.WorkDir, files); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Run(context.Background(), p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func TestRunInterleavesAndExits(t *testing.T) {
	res := run(t, "interleave.go", Config{})
	if res.BuildFailed || res.TimedOut {
		t.Fatalf("build failed %v (%s), timed out %v", res.BuildFailed, res.BuildOutput, res.TimedOut)
	}
	if want := "out 1\nerr 1\nout 2\n"; res.Output != want {
		t.Errorf("output %q, want %q", res.Output, want)
	}
	if res.ExitCode != 3 || res.Status != "exit status 3" {
		t.Errorf("exit code %d, status %q", res.ExitCode, res.Status)
	}
}

func TestRunBuildFailure(t *testing.T) {
	res := run(t, "broken.go", Config{})
	if !res.BuildFailed || !strings.Contains(res.BuildOutput, "undefined: undefinedName") || strings.Contains(res.BuildOutput, "timed out") {
		t.Errorf("build failed %v, output %q", res.BuildFailed, res.BuildOutput)
	}
}

func TestRunTimeout(t *testing.T) {
	start := time.Now()
	res := run(t, "sleepy.go", Config{RunTimeout: 300 * time.Millisecond})
	if !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("timed out %v, exit code %d", res.TimedOut, res.ExitCode)
	}
	// sleepy.go sleeps an hour: returning at all shows the timeout acted
	// (the bound leaves room for a cold build of the program).
	if d := time.Since(start); d > 10*time.Minute {
		t.Errorf("took %v", d)
	}
}

func TestRunCopiesFiles(t *testing.T) {
	res := run(t, "embeds.go", Config{})
	if want := "embedded text\nembedded text\n<nil>\n"; res.Output != want {
		t.Errorf("output %q, want %q (build: %s)", res.Output, want, res.BuildOutput)
	}
}

func TestCappedBuffer(t *testing.T) {
	b := &CappedBuffer{Max: 5}
	for _, s := range []string{"abc", "def", "gh"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if b.String() != "abcde" || !b.Truncated() {
		t.Errorf("kept %q, truncated %v", b.String(), b.Truncated())
	}
}
