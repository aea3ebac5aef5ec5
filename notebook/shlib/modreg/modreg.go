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

// Register appends the module data at md to the runtime's list of modules.
// The runtime takes it into account (garbage collection roots, stack
// unwinding, types) at the next plugin load.
func Register(md uintptr) { register(md) }
