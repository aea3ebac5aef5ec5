package safepoint

import "strings"

// Where, by module and package, library code gets safe points.
//
// By default every package of a module gets them (a module's code is
// ordinary Go: a panic at a loop head is one its authors already had to
// survive under net/http's handler recovery or a test's t.Fatal). The
// exceptions are code whose unwinding would leave state no later cell can
// use, listed here with the reason; a goroutine in such code stops at the
// first safe point it reaches after returning from it.
//
// The standard library, goaccel's own module and the modules linked into
// the kernel are never rewritten (the kernel's copies of their packages
// are shared with the cells', and must be the same build); the builder
// leaves them out before asking.

// Choice is what Select decides for one package.
type Choice struct {
	// Rewrite says whether the package gets safe points.
	Rewrite bool
	// Funcs, when not nil, limits them to the functions it accepts (names
	// as Rewrite's funcs sees them).
	Funcs func(name string) bool
	// Strong makes the checks strong ones (see Rewrite): for loops that
	// iterate once per step.
	Strong bool
	// Why says why a package has none or only some (for logs and docs).
	Why string
}

// gomlxStepLoops are the loops of GoMLX's train.Loop that run one training
// step per iteration: the only safe points of package train, so that an
// interrupted loop stops between two steps, with every variable holding
// the last completed step's value (context.Exec sets the variables one by
// one after the step's execution, and an optimizer's state lives beside
// them).
var gomlxStepLoops = map[string]bool{
	"Loop.runStepsSingleDevice": true,
	"Loop.runStepsDistributed":  true,
	"Loop.RunEpochs":            true,
	// After a step's execution, before its OnStep hooks: a step whose
	// execution outlived the interrupt (a long XLA call) ends there, and
	// its progress bar and plots print nothing under a later cell.
	"Loop.postStep": true,
	// Evaluation updates only its metrics, which the next one resets.
	"Trainer.Eval":            true,
	"Trainer.DistributedEval": true,
}

// Select says whether and where the package importPath of module gets
// safe points.
func Select(module, importPath string) Choice {
	switch module {
	case "github.com/gomlx/gomlx":
		rel := strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
		switch {
		case rel == "pkg/ml/train":
			return Choice{Rewrite: true, Strong: true, Funcs: func(name string) bool { return gomlxStepLoops[name] },
				Why: "GoMLX's training loop stops between steps only"}
		case rel == "pkg/ml/datasets", strings.HasPrefix(rel, "examples/"), strings.HasPrefix(rel, "ui/"):
			return Choice{Rewrite: true}
		default:
			return Choice{Why: "GoMLX's graphs, variables and backends are left whole: a step's execution and the update of its variables are not cut"}
		}
	case "github.com/gomlx/go-xla", "github.com/gomlx/gopjrt":
		return Choice{Why: "XLA's bindings hold C resources their loops hand over one by one"}
	}
	return Choice{Rewrite: true}
}
