// Package modreg gives the process's own runtime.addmoduledata to Go shared
// objects loaded into it, and registers a loaded shared library's module
// with the runtime.
//
// Compiled cells link against a Go shared library (see notebook/build) and
// are loaded as plugins. Each object carries an init function that hands its
// module data to runtime.addmoduledata. A plugin linked against a shared
// library lacks that function (the linker expects it inside the plugin), so
// the Builder links into each cell a stand-in that jumps to the address
// AddModuleDataPC holds: this process's runtime.addmoduledata. The shared
// library itself contains the runtime and so registers nothing: Register
// does that when it is loaded.
package modreg

// AddModuleDataPC is the address of this process's runtime.addmoduledata,
// read by the stand-in that compiled cells link (by name: keep it).
var AddModuleDataPC = addModuleDataPC()

// Register appends the module data at md to the runtime's list of modules
// and makes it active at once: its variables become garbage collection
// roots before any of its code runs.
//
// Why at once: the runtime scans the variables of the modules in its
// active slice, which only a plugin load used to rebuild; the library's
// packages that the process lacks (GoMLX) are initialized before the
// first cell's plugin is opened (see notebook/shlib.Init), and a
// collection in between freed what their package variables held (maps,
// tables) while those variables still pointed at it. The next collection
// that scanned them found "bad pointer in Go heap", or code read a map
// reused by another allocation ("concurrent map read and map write").
// Stack unwinding uses the list, and the types the slice too; they are
// completed at the next plugin load (typelinksinit), as before.
func Register(md uintptr) {
	register(md)
	activate()
}
