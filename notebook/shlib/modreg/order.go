package modreg

// Promote moves the module the runtime registered last (the plugin just
// opened) to the head of the plugins in the runtime's module list.
//
// Why: the runtime finds the module of a code address by walking that
// list from the start (findmoduledatap), for every frame it unwinds: stack
// growth, garbage collection, panics, tracebacks. A session appends a
// plugin per cell, so after 600 cells a cell's own frames were found after
// 600 steps, and a deep recursion in it ran 80 times slower than in a new
// session. With the newest plugin first, the cell that runs is found
// right after the kernel and the libraries, and an earlier cell's in the
// order of age.
//
// Only the last module moves: each step of the move leaves every module
// reachable (for a moment the list is a cycle, which a walk for an address
// outside every module leaves once the move ends), so goroutines that
// unwind stacks meanwhile are safe. The runtime's slice of modules, which
// reflection and type identity read, is put back in load order. Callers
// serialize Promote with plugin loads. Promote does nothing where the
// runtime's layout is not the one it knows (another Go version) or does
// not check out, and reports whether it could act.
//
// Each cell calls it from its first initializer, before any of its own
// code runs (between the runtime's rebuilding of its slice at the load and
// that, the slice is in the list's order); the engine calls it again
// after the load, for cells built without the shared library.
func Promote() bool { return promote() }

// Plugins lists the paths of the plugins in the runtime's module list, in
// the order lookups by address meet them (nil where Promote does nothing).
func Plugins() []string { return plugins() }
