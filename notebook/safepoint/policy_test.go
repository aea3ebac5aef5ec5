package safepoint

import "testing"

func TestSelect(t *testing.T) {
	for _, c := range []struct {
		module, pkg string
		rewrite     bool
		funcs       map[string]bool // names to ask about, and the answer
	}{
		{"example.com/heavy", "example.com/heavy/inner", true, map[string]bool{"F": true, "T.M": true}},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/ml/train", true,
			map[string]bool{"Loop.runStepsSingleDevice": true, "Loop.RunEpochs": true, "Loop.step": false, "Trainer.TrainStep": false, "init": false}},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/ml/datasets", true, map[string]bool{"InMemoryDataset.Yield": true}},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/ml/context", false, nil},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/core/graph", false, nil},
		{"github.com/gomlx/go-xla", "github.com/gomlx/go-xla/pkg/pjrt", false, nil},
	} {
		ch := Select(c.module, c.pkg)
		if ch.Rewrite != c.rewrite {
			t.Errorf("%s: Rewrite %v, want %v", c.pkg, ch.Rewrite, c.rewrite)
			continue
		}
		if !ch.Rewrite && ch.Why == "" {
			t.Errorf("%s: left alone without a reason", c.pkg)
		}
		for name, want := range c.funcs {
			if got := ch.Funcs == nil || ch.Funcs(name); got != want {
				t.Errorf("%s: %s gets safe points: %v, want %v", c.pkg, name, got, want)
			}
		}
	}
}
