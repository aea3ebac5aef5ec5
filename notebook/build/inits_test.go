package build

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// The library packages a GoMLX cell reaches, in Go's order: every package
// after the library packages it imports, ties in the order of their init
// records' names.
func TestInitOrderPutsDependenciesFirst(t *testing.T) {
	if !sharedWanted(mustHost(t)) {
		t.Skip("no shared library in this configuration (see sharedWanted)")
	}
	b := newBuilder(t)
	root := ModulePath + "/accelerate/gomlx"
	if err := b.Resolve(context.Background(), nil, root); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	order := b.initOrder([]string{root})
	lib := b.lib.packages
	b.mu.Unlock()
	for _, p := range []string{root, "github.com/gomlx/go-xla/pkg/pjrt", "github.com/gomlx/gomlx/backends", "fmt"} {
		if !slices.Contains(order, p) {
			t.Fatalf("%s is not in the order: %v", p, order)
		}
	}
	at := map[string]int{}
	for i, p := range order {
		at[p] = i
	}
	var roots []string
	for _, p := range order {
		n := 0
		for _, d := range b.pkgs[p].Deps {
			if lib[d] {
				n++
				if at[d] > at[p] {
					t.Errorf("%s is initialized before its import %s", p, d)
				}
			}
		}
		if n == 0 {
			roots = append(roots, p)
		}
	}
	first := slices.MinFunc(roots, func(a, b string) int {
		return strings.Compare(InitSymbol(a), InitSymbol(b))
	})
	if order[0] != first {
		t.Errorf("the order starts with %s, not %s", order[0], first)
	}
	if got := InitSymbol("gopkg.in/yaml.v3"); got != "gopkg.in/yaml%2ev3..inittask" {
		t.Errorf("InitSymbol = %q", got)
	}
}
