package corpus

import (
	"fmt"
	"go/build"
	"go/build/constraint"
	"slices"
	"strings"
)

// unixOS are the GOOS values the "unix" build tag covers (as in go/build).
var unixOS = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "linux", "netbsd", "openbsd", "solaris"}

// Tags is the set of build tags that hold for the programs' builds.
type Tags struct {
	GOOS, GOARCH string
	set          map[string]bool
}

// DefaultTags are the tags `go build` satisfies here: GOOS, GOARCH, "unix"
// where it applies, "cgo" when cgo is enabled, the compiler ("gc"), the
// toolchain's tool tags (GOEXPERIMENT, GOAMD64 levels) and release tags
// (go1.1 … go1.N). cgo is passed in because go/build's default ignores
// whether a C compiler exists; pass `go env CGO_ENABLED` == "1".
func DefaultTags(cgo bool) Tags {
	ctx := build.Default
	t := Tags{GOOS: ctx.GOOS, GOARCH: ctx.GOARCH, set: map[string]bool{}}
	t.set[ctx.GOOS] = true
	t.set[ctx.GOARCH] = true
	if slices.Contains(unixOS, ctx.GOOS) {
		t.set["unix"] = true
	}
	if ctx.GOOS == "android" {
		t.set["linux"] = true
	}
	if ctx.GOOS == "illumos" {
		t.set["solaris"] = true
	}
	if ctx.GOOS == "ios" {
		t.set["darwin"] = true
	}
	if cgo {
		t.set["cgo"] = true
	}
	t.set[ctx.Compiler] = true
	for _, l := range [][]string{ctx.ToolTags, ctx.ReleaseTags, ctx.BuildTags} {
		for _, tag := range l {
			t.set[tag] = true
		}
	}
	return t
}

// NewTags makes a tag set from explicit tags (for tests).
func NewTags(goos, goarch string, tags ...string) Tags {
	t := Tags{GOOS: goos, GOARCH: goarch, set: map[string]bool{goos: true, goarch: true}}
	for _, tag := range tags {
		t.set[tag] = true
	}
	return t
}

// Has reports whether tag holds.
func (t Tags) Has(tag string) bool { return t.set[tag] }

// Platform is "GOOS/GOARCH" plus "+cgo" when cgo is enabled.
func (t Tags) Platform() string {
	s := t.GOOS + "/" + t.GOARCH
	if t.set["cgo"] {
		s += "+cgo"
	}
	return s
}

func parseConstraint(line string) (constraint.Expr, error) {
	x, err := constraint.Parse(line)
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", strings.TrimSpace(line), err)
	}
	return x, nil
}
