package build

import (
	"context"
	"fmt"
	"time"
)

// CellRuntimePath is the package every compiled cell imports (notebook/gxrt).
const CellRuntimePath = ModulePath + "/notebook/gxrt"

// PrebuildPackages are the packages Prebuild builds by default: the cell
// runtime, the standard library a notebook's first cells usually import,
// and goaccel's packages for cells. Building them for plugins is what makes
// the first cell on a machine slow (the standard library alone takes
// seconds, goaccel's launcher and trackers tens of seconds on two cores).
var PrebuildPackages = []string{
	CellRuntimePath,
	"fmt", "strings", "strconv", "math", "math/rand", "sort", "slices", "maps",
	"time", "os", "errors", "sync", "bytes", "bufio", "encoding/json", "context",
	"image", "image/color", "image/png",
	ModulePath + "/display",
	ModulePath + "/input",
	ModulePath + "/comm",
	ModulePath + "/launcher",
	ModulePath + "/debuglauncher",
	ModulePath + "/accelerate",
	ModulePath + "/accelerate/ddp",
	ModulePath + "/accelerate/kwargs",
	ModulePath + "/accelerate/nn",
	ModulePath + "/tracking",
	// GoMLX under Accelerate (the XLA backend builds its cgo part once).
	ModulePath + "/accelerate/gomlx",
	ModulePath + "/datasets/mnist",
	ModulePath + "/datasets/shakespeare",
}

// Prebuild builds packages (PrebuildPackages when none are given) for
// plugins into the go command's build cache, as a first cell importing them
// would, so that such cells answer at once. progress hears one line per
// package group and what the go command fetches; it may be nil. It is safe
// to run again: what is cached is not rebuilt.
func Prebuild(ctx context.Context, opts Options, progress func(string), pkgs ...string) error {
	if len(pkgs) == 0 {
		pkgs = PrebuildPackages
	}
	b, err := New(ctx, opts)
	if err != nil {
		return err
	}
	defer b.Close()
	say := func(s string) {
		if progress != nil {
			progress(s)
		}
	}
	start := time.Now()
	// One package at a time, so that progress moves and a package that
	// cannot be built names itself.
	for i, p := range pkgs {
		say(fmt.Sprintf("[%d/%d] %s", i+1, len(pkgs), p))
		if err := b.Resolve(ctx, progress, p); err != nil {
			return fmt.Errorf("prebuilding %s: %w", p, err)
		}
	}
	say(fmt.Sprintf("built %d packages for compiled cells in %.1fs", len(pkgs), time.Since(start).Seconds()))
	return nil
}
