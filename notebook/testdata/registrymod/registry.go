// Package registry is a fixture: a registry that other packages fill from
// their init functions, as GoMLX's backends register themselves.
package registry

import (
	"sort"
	"sync"
)

var (
	mu    sync.Mutex
	names []string
)

// Register adds name.
func Register(name string) {
	mu.Lock()
	defer mu.Unlock()
	names = append(names, name)
}

// Names returns what was registered, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	out := append([]string(nil), names...)
	sort.Strings(out)
	return out
}
