// Package build compiles the packages goaccel generates from notebook cells
// with the installed Go toolchain and links each as a Go plugin that the
// kernel loads into its own process.
//
// A plugin shares every package it imports with the process that loads it,
// so it must be built by the same toolchain, with the same flags, from the
// same versions of those packages (plugin.Open refuses anything else with
// "plugin was built with a different version of package ..."). The Builder
// therefore works in a session module that requires goaccel itself from the
// source the kernel was built from (and so every dependency at the version
// the kernel linked), and checks at start-up that the `go` command is the
// toolchain the kernel was built with, that cgo works and that the platform
// has plugins; otherwise New returns an *Unavailable naming the reason, and
// the engine interprets instead.
//
// Cell packages are all named main (so their types print as main.T), each
// with its own import path, and they import one another. The go command
// refuses to import a package named main, so the Builder drives the
// compiler and the linker directly (go tool compile -dynlink, go tool link
// -buildmode=plugin) with import configurations it writes; everything else
// (the standard library in plugin mode, goaccel's packages, modules) comes
// from `go list -export -buildmode=plugin`, which builds what is missing
// into Go's build cache. Cell builds are cached by content under the cache
// directory, so running a notebook again in a new kernel loads the plugins
// it built before.
//
// # Modules
//
// Resolving an import the session module lacks lets the go command add the
// module that provides it (fetching it at its latest version, as go get
// does); Get pins versions (%go get), Use adds a local module (%use), and
// GoWork applies a go.work. Every change to the session module is checked
// against the versions the process holds: the modules linked into the
// kernel (Host.Deps) and those whose packages were resolved for cells (which
// may be loaded). A change that moves one is undone and reported as a
// *ConflictError; failures to fetch are *FetchErrors saying what to do
// (offline, unknown version, private module). The go command runs with the
// user's environment (GOPROXY, GOPRIVATE, GOFLAGS) as it is at each call.
//
// Packages of local modules are compiled by the Builder itself under a path
// per version of their content (see local.go), so that a module edited
// while the kernel runs loads beside its earlier version.
//
// # The shared library
//
// On linux/amd64 cells link against one Go shared library holding the
// standard library and goaccel's packages for cells (shared.go, shim.go),
// so that a plugin carries only its cell's code; the linker reads a view of
// the library holding what the link refers to (linkview.go, views.go,
// objrefs).
package build
