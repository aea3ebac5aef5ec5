//go:build linux

package debuglauncher_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/debuglauncher"
	"github.com/goaccel/goaccel/launcher"
	"github.com/goaccel/goaccel/launcher/launchertest"
)

var reg = launchertest.New()

func TestMain(m *testing.M) {
	reg.Register("env", workerEnv)
	reg.Register("trivial", trivial)
	reg.Register("fail", fail)
	os.Exit(launchertest.Main(m, reg))
}

var keys = []string{"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
	"ACCELERATE_USE_CPU", "ACCELERATE_MIXED_PRECISION", "CUDA_VISIBLE_DEVICES"}

func workerEnv(tag string) map[string]string {
	m := map[string]string{"tag": tag}
	for _, k := range keys {
		if v, ok := os.LookupEnv(k); ok {
			m[k] = v
		}
	}
	fmt.Printf("rank %s says hi\n", os.Getenv("RANK"))
	return m
}

func trivial() int { r, _ := strconv.Atoi(os.Getenv("RANK")); return r }

func fail() error {
	if os.Getenv("RANK") == "1" {
		return fmt.Errorf("rank one fails")
	}
	return nil
}

func withCell(t testing.TB) *launchertest.Publisher {
	pub := &launchertest.Publisher{}
	t.Cleanup(launcher.SetCell(context.Background(), pub))
	return pub
}

func TestDebugLauncherEnvironment(t *testing.T) {
	// The kernel's own settings must not leak into the debug workers.
	t.Setenv("ACCELERATE_MIXED_PRECISION", "fp16")
	t.Setenv("CUDA_VISIBLE_DEVICES", "0,1")
	for _, n := range []int{0, 3} {
		pub := withCell(t)
		res, err := debuglauncher.DebugLauncher(workerEnv, []any{"x"}, n)
		if err != nil {
			t.Fatal(err)
		}
		want := n
		if n == 0 {
			want = 2
		}
		if len(res) != want {
			t.Fatalf("n=%d: %d results, want %d", n, len(res), want)
		}
		for r, rv := range res {
			e := rv[0].(map[string]string)
			exp := map[string]string{
				"tag": "x", "RANK": strconv.Itoa(r), "LOCAL_RANK": strconv.Itoa(r),
				"WORLD_SIZE": strconv.Itoa(want), "LOCAL_WORLD_SIZE": strconv.Itoa(want),
				"MASTER_ADDR": "127.0.0.1", "ACCELERATE_USE_CPU": "yes",
				"ACCELERATE_MIXED_PRECISION": "no", "CUDA_VISIBLE_DEVICES": "",
			}
			for k, v := range exp {
				if got, ok := e[k]; !ok || got != v {
					t.Errorf("n=%d rank %d: %s=%q (set %v), want %q", n, r, k, got, ok, v)
				}
			}
			if p, _ := strconv.Atoi(e["MASTER_PORT"]); p <= 0 || p == 29500 {
				t.Errorf("MASTER_PORT %q, want a free port", e["MASTER_PORT"])
			}
		}
		// Nothing but the workers' own output, prefixed.
		out := pub.Text("stdout")
		for r := 0; r < want; r++ {
			line := fmt.Sprintf("[rank %d] rank %d says hi\n", r, r)
			if !strings.Contains(out, line) {
				t.Errorf("stdout lacks %q: %q", line, out)
			}
		}
		if got := strings.Count(out, "\n"); got != want {
			t.Errorf("stdout has %d lines, want %d (nothing extra): %q", got, want, out)
		}
		if pub.Text("stderr") != "" {
			t.Errorf("stderr %q", pub.Text("stderr"))
		}
	}
}

func TestDebugLauncherOneProcessUnprefixed(t *testing.T) {
	pub := withCell(t)
	if _, err := debuglauncher.DebugLauncher(workerEnv, []any{"y"}, 1); err != nil {
		t.Fatal(err)
	}
	if got := pub.Text("stdout"); got != "rank 0 says hi\n" {
		t.Errorf("stdout %q", got)
	}
}

func TestDebugLauncherFailure(t *testing.T) {
	withCell(t)
	_, err := debuglauncher.DebugLauncher(fail, nil, 2)
	if err == nil || !strings.Contains(err.Error(), "rank 1 (local rank 1) failed (exit status 1): rank one fails") {
		t.Errorf("error %v", err)
	}
	if _, err := debuglauncher.DebugLauncher(fail, nil, -1); err == nil || !strings.Contains(err.Error(), "NumProcesses must be at least 1") {
		t.Errorf("negative count: %v", err)
	}
}

// BenchmarkDebugLauncher measures a whole debug launch of trivial workers:
// starting the processes, running the function, collecting the results and
// reaping. Run it with
//
//	go test -run '^$' -bench DebugLauncher ./debuglauncher/
func BenchmarkDebugLauncher(b *testing.B) {
	for _, n := range []int{2, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			withCell(b)
			for i := 0; i < b.N; i++ {
				res, err := debuglauncher.DebugLauncher(trivial, nil, n)
				if err != nil || len(res) != n {
					b.Fatalf("%v %v", res, err)
				}
			}
		})
	}
}
