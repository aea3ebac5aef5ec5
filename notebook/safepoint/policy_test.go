package safepoint

import "testing"

func TestSelect(t *testing.T) {
	for _, c := range []struct {
		module, pkg     string
		rewrite, strong bool
		funcs           map[string]bool // names to ask about, and the answer
	}{
		{"example.com/heavy", "example.com/heavy/inner", true, false, map[string]bool{"F": true, "T.M": true}},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/ml/train", true, true,
			map[string]bool{"Loop.runStepsSingleDevice": true, "Loop.RunEpochs": true, "Loop.postStep": true, "Trainer.Eval": true,
				"Loop.step": false, "Trainer.TrainStep": false, "Trainer.BatchNormalizationAveragesUpdate": false, "init": false}},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/ml/datasets", true, false, map[string]bool{"InMemoryDataset.Yield": true}},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/ml/context", false, false, nil},
		{"github.com/gomlx/gomlx", "github.com/gomlx/gomlx/pkg/core/graph", false, false, nil},
		{"github.com/gomlx/go-xla", "github.com/gomlx/go-xla/pkg/pjrt", false, false, nil},
	} {
		ch := Select(c.module, c.pkg)
		if ch.Rewrite != c.rewrite || ch.Strong != c.strong {
			t.Errorf("%s: Rewrite %v, Strong %v, want %v, %v", c.pkg, ch.Rewrite, ch.Strong, c.rewrite, c.strong)
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
