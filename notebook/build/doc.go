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
package build
