package modreg

import _ "unsafe" // go:linkname

// Supported says whether cells can link against a shared library here.
const Supported = true

func addModuleDataPC() uintptr

func register(md uintptr)

// activate rebuilds the runtime's slice of active modules from its module
// list (runtime/symtab.go), as a plugin load does.
//
//go:linkname activate runtime.modulesinit
func activate()
