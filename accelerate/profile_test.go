package accelerate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/accelerate/kwargs"
	"github.com/goaccel/goaccel/accelerate/profiler"
)

func TestProfileExportsTrace(t *testing.T) {
	fresh(t)
	dir := t.TempDir()
	// The handler passed to WithKwargsHandlers is used when Profile gets nil.
	a, err := NewAccelerator(withEnv(envMap(nil)), WithKwargsHandlers(kwargs.ProfileKwargs{OutputTraceDir: dir, RecordShapes: true}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Profile(nil, func(p *profiler.Profiler) error {
		for i := 0; i < 3; i++ {
			end := p.Span("train_step", profiler.Shapes([]int{4, 3}))
			s := 0.0
			for j := 0; j < 1e5; j++ {
				s += float64(j)
			}
			_ = s
			end()
			if err := p.Step(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || p == nil || p.ProcessIndex() != 0 {
		t.Fatalf("Profile: %v %v", p, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "profile_0.json"))
	if err != nil || !strings.Contains(string(b), `"train_step"`) || !strings.Contains(string(b), "Input Dims") {
		t.Fatalf("profile_0.json: %v\n%.300s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "profile_0.pb.gz")); err != nil {
		t.Fatalf("pprof: %v", err)
	}

	// An explicit handler wins; fn's error comes back with the profiler.
	other := t.TempDir()
	boom := errors.New("boom")
	p, err = a.Profile(&kwargs.ProfileKwargs{OutputTraceDir: other}, func(*profiler.Profiler) error { return boom })
	if !errors.Is(err, boom) || p == nil {
		t.Fatalf("failing fn: %v %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(other, "profile_0.json")); err != nil {
		t.Fatalf("export after a failing fn: %v", err)
	}
	// "cuda" without a GPU is Build's error.
	if _, err := a.Profile(&kwargs.ProfileKwargs{Activities: []string{"cuda"}}, nil); err == nil || !strings.Contains(err.Error(), "needs a GPU") {
		t.Fatalf("cuda on CPU: %v", err)
	}
}

func TestProfileEveryRank(t *testing.T) {
	dir := t.TempDir()
	accs := accelerators(t, 2)
	err := each(accs, func(a *Accelerator) error {
		_, err := a.Profile(&kwargs.ProfileKwargs{OutputTraceDir: dir}, func(p *profiler.Profiler) error {
			defer p.Span(fmt.Sprint("rank", a.ProcessIndex()))()
			return nil
		})
		if err != nil {
			return err
		}
		// Profile waited for every rank: both traces exist now.
		for r := 0; r < 2; r++ {
			b, err := os.ReadFile(filepath.Join(dir, profiler.TraceFileName(r)))
			if err != nil || !strings.Contains(string(b), fmt.Sprint("rank", r)) {
				return fmt.Errorf("rank %d sees trace %d: %v", a.ProcessIndex(), r, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
