// Package objrefs lists what the Go objects in a package archive refer to
// by name, and which packages they import, reading the object format of
// the Go toolchain (cmd/internal/goobj, "go120ld") directly: a link
// against a shared library resolves exactly these names there, and asking
// go tool nm would cost a process per archive.
package objrefs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Refs is what one archive's Go objects refer to.
type Refs struct {
	// Names are the symbols referred to by name: the objects' non-package
	// references and the names they record of indexed references, each
	// once.
	Names []string
	// Imports are the packages the objects import (their autolib list),
	// which the linker loads with them.
	Imports []string
}

// Read reads the archive at path.
func Read(path string) (*Refs, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	refs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return refs, nil
}

const (
	archiveMagic = "!<arch>\n"
	memberHeader = 60
)

// Parse reads an archive's contents.
func Parse(data []byte) (*Refs, error) {
	if !bytes.HasPrefix(data, []byte(archiveMagic)) {
		return nil, errors.New("not a Go package archive")
	}
	refs := &Refs{}
	seen := map[string]bool{}
	for p := data[len(archiveMagic):]; len(p) >= memberHeader; {
		hdr := p[:memberHeader]
		size, err := strconv.ParseInt(strings.TrimSpace(string(hdr[48:58])), 10, 64)
		if err != nil || size < 0 || size > int64(len(p)-memberHeader) {
			return nil, errors.New("bad archive member header")
		}
		member := p[memberHeader : memberHeader+size]
		p = p[memberHeader+size:]
		if size%2 == 1 && len(p) > 0 {
			p = p[1:]
		}
		if bytes.HasPrefix(hdr, []byte("__.PKGDEF")) || !bytes.HasPrefix(member, []byte("go object ")) {
			continue // export data, or a host object
		}
		obj, err := objectOf(member)
		if err != nil {
			return nil, err
		}
		if err := refs.add(obj, seen); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// objectOf finds the binary object in an archive member: after its header
// line and what follows up to "\n!\n" (outside "$$" markers, as the linker
// reads it).
func objectOf(member []byte) ([]byte, error) {
	nl := bytes.IndexByte(member, '\n')
	if nl < 0 {
		return nil, errors.New("truncated object header")
	}
	markers := 0
	for i := nl; i+2 < len(member); i++ {
		if member[i] != '\n' {
			continue
		}
		switch {
		case markers%2 == 0 && member[i+1] == '!' && member[i+2] == '\n':
			return member[i+3:], nil
		case member[i+1] == '$' && member[i+2] == '$':
			markers++
		}
	}
	return nil, errors.New("truncated object: no end of its header")
}

// The object format (cmd/internal/goobj).
const (
	objMagic = "\x00go120ld"

	blkAutolib   = 0
	blkNonpkgref = 7
	blkRefName   = 17
	numBlocks    = 19

	stringRefSize   = 8
	symSize         = stringRefSize + 2 + 1 + 1 + 1 + 4 + 4
	importedPkgSize = stringRefSize + 8
	refNameSize     = 8 + stringRefSize
)

// add adds what the object obj refers to.
func (r *Refs) add(obj []byte, seen map[string]bool) error {
	le := binary.LittleEndian
	if !bytes.HasPrefix(obj, []byte(objMagic)) {
		return errors.New("not a Go object of this format (go120ld)")
	}
	hdr := len(objMagic) + 8 + 4
	if len(obj) < hdr+4*numBlocks {
		return errors.New("truncated object")
	}
	var offs [numBlocks]uint32
	for i := range offs {
		offs[i] = le.Uint32(obj[hdr+4*i:])
		if int(offs[i]) > len(obj) || i > 0 && offs[i] < offs[i-1] {
			return errors.New("bad object block offsets")
		}
	}
	var bad error
	str := func(at uint32) string {
		n, off := le.Uint32(obj[at:]), le.Uint32(obj[at+4:])
		if uint64(off)+uint64(n) > uint64(len(obj)) {
			bad = errors.New("bad string in object")
			return ""
		}
		return string(obj[off : off+n])
	}
	block := func(b int, size uint32, f func(at uint32)) {
		for at := offs[b]; at+size <= offs[b+1]; at += size {
			f(at)
		}
	}
	block(blkAutolib, importedPkgSize, func(at uint32) {
		if p := str(at); !seen["\x00"+p] {
			seen["\x00"+p] = true
			r.Imports = append(r.Imports, p)
		}
	})
	name := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			r.Names = append(r.Names, n)
		}
	}
	block(blkNonpkgref, symSize, func(at uint32) { name(str(at)) })
	block(blkRefName, refNameSize, func(at uint32) { name(str(at + 8)) })
	return bad
}
