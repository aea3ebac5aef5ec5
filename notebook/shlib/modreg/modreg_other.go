//go:build !amd64

package modreg

// Supported says whether cells can link against a shared library here.
const Supported = false

func addModuleDataPC() uintptr { return 0 }

func register(uintptr) {}

func activate() {}
