package build

import (
	"context"
	"path/filepath"

	"github.com/goaccel/goaccel/notebook/autoimport"
)

// Resolver resolves the package names cells use without importing them
// over this Builder's session: the standard library of its toolchain, then
// the modules of its build list, the names preferred says first. Its
// module indexes are kept beside the build cache.
func (b *Builder) Resolver(preferred func(name string) string) *autoimport.Resolver {
	return &autoimport.Resolver{
		GoRoot:    b.GoRoot(),
		Preferred: preferred,
		Modules: func(ctx context.Context) ([]autoimport.Module, error) {
			mods, err := b.Modules(ctx)
			out := make([]autoimport.Module, len(mods))
			for i, m := range mods {
				out[i] = autoimport.Module{Path: m.Path, Version: m.Version, Dir: m.Dir}
			}
			return out, err
		},
		Loaded: b.Loaded,
		// root is <build cache>/<configuration>.
		CacheDir: filepath.Join(filepath.Dir(filepath.Dir(b.root)), "autoimport"),
	}
}
