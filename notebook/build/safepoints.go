package build

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/notebook/safepoint"
)

// Packages of local modules (%use, go.work), which the Builder compiles
// itself (local.go), get interrupt checks at their loops (package
// safepoint): the compiler reads a rewritten copy of each file, whose
// //line directive keeps the original's name and line numbers. Which of
// their functions get checks, safepoint.Select decides.
//
// Modules from the module cache, which the go command compiles, get
// theirs through its -overlay (modsafepoints.go).

// safepointsVersion names the rewrite: a change to package safepoint that
// changes its output (the rewrite, or Select's policy) changes it, and with
// it every key that includes it. (The shared library's kept listing also
// checks the overlay it was made with: sharedlist.go.)
const safepointsVersion = "safepoints v2"

// wantsSafepoints says whether p's files get interrupt checks, and where.
func (b *Builder) wantsSafepoints(p *listed) (safepoint.Choice, bool) {
	if !p.isLocal() || p.Name == "main" {
		return safepoint.Choice{}, false
	}
	if _, inKernel := b.host.Deps[p.Module.Path]; inKernel {
		return safepoint.Choice{}, false
	}
	ch := safepoint.Select(p.Module.Path, p.ImportPath)
	return ch, ch.Rewrite
}

// localSafepoints is the file to compile for file (holding data) of a
// local module's package, whose checks wantsSafepoints gave: a rewritten
// copy under the Builder's cache, or file itself when it gets no checks.
func (b *Builder) localSafepoints(ch safepoint.Choice, rewrite bool, file string, data []byte) (string, error) {
	if !rewrite {
		return file, nil
	}
	out, changed, err := safepoint.Rewrite(file, data, ch.Funcs, ch.Strong)
	if err != nil || !changed {
		return file, nil // the compiler reports the file's own error
	}
	out = append([]byte("//line "+file+":1\n"), out...)
	sum := sha256.Sum256(out)
	cp := filepath.Join(b.root, "safepoints", hex.EncodeToString(sum[:2]), hex.EncodeToString(sum[:16])+".go")
	if fileExists(cp) {
		return cp, nil
	}
	if err := os.MkdirAll(filepath.Dir(cp), 0o755); err != nil {
		return "", fmt.Errorf("interrupt checks: %w", err)
	}
	if err := writeReplacing(cp, out, 0o644); err != nil {
		return "", fmt.Errorf("interrupt checks: %w", err)
	}
	return cp, nil
}
