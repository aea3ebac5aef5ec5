package modreg

// Supported says whether cells can link against a shared library here.
const Supported = true

func addModuleDataPC() uintptr

func register(md uintptr)
