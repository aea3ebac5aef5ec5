package build

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Linking a cell's plugin against the shared library, the Go linker reads
// every dynamic symbol of the library (160,000, 110,000 of them type
// descriptors whose data it reads one system call each): about 0.5 s of
// every link, whatever the cell. A cell can only refer to symbols of the
// packages it imports and of what they import, its closure: about 80 of
// the library's 400 packages for a cell that imports fmt.
//
// So the linker gets a view of the library made for that closure: an ELF
// file with the library's section headers, notes and type data at their
// places (the rest of the file is a hole), and a dynamic symbol table and
// relocation section holding only the symbols that name no package outside
// the closure. Symbol names carry the paths of the packages they belong to
// and of every type they are made of (fmt.(*pp).doPrint,
// type:map[string]*net/http.Request, go:itab.*os.File,io.Writer), so a
// symbol is kept when every library package its name mentions is in the
// closure. What a kept type refers to stays within its packages' imports,
// so the view is closed under what the linker follows. The C linker never
// sees the view (see extldScript), and the plugin's records name the
// library's file name, which the view shares; the dynamic linker binds the
// plugin to the real library.
//
// A view is named by its closure and kept beside the library; in a session
// the closure grows only when a cell imports a package new to it, so a few
// views serve thousands of cells. Should a view ever lack a symbol, the
// link fails and is done again against the library itself (Build).

// libIndex is what making views needs from the library, read once.
type libIndex struct {
	path     string
	order    binary.ByteOrder
	size     int64          // of the library file
	sections []*elf.Section // as in the library (names, places)
	shdrs    []byte         // the library's section headers, raw
	syms     []rawSym       // the dynamic symbols, the null symbol excepted
	names    []byte         // the dynamic string table
	relas    []rawRela      // relocations the Go linker reads
	// pkgIndex numbers the library's packages by their names in symbols
	// (symbolPrefix); refs lists, for each symbol, those its name mentions.
	pkgIndex map[string]int
	refs     [][]uint16
	// copies are the parts of the file a view holds at their places: the
	// ELF header and everything up to the symbol table, the notes, the
	// data the linker reads for type descriptors, the section names.
	copies [][2]int64
	shdr   struct {
		dynsym, dynstr, rela int // their section indices
		drop                 []int
	}
}

// rawSym is an Elf64_Sym.
type rawSym struct {
	name  uint32
	info  uint8
	other uint8
	shndx uint16
	value uint64
	size  uint64
}

// rawRela is an Elf64_Rela of the kind the linker reads (R_X86_64_64,
// no addend): a pointer at off to symbol sym (an index into syms, from 0).
type rawRela struct {
	off uint64
	sym uint32
}

const (
	elf64SymSize  = 24
	elf64RelaSize = 24
	elf64ShdrSize = 64
)

// readLibIndex reads the library at path. Its refs are still to be found
// (findRefs) or read (readRefs).
func readLibIndex(path string) (*libIndex, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	f, err := elf.NewFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s: not an amd64 ELF library", path)
	}
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	x := &libIndex{path: path, order: f.ByteOrder, size: fi.Size(), sections: f.Sections}
	strndx, err := x.readHeaders(file)
	if err != nil {
		return nil, err
	}
	x.shdr.dynsym, x.shdr.dynstr, x.shdr.rela = -1, -1, -1
	for i, s := range f.Sections {
		switch {
		case s.Type == elf.SHT_DYNSYM && x.shdr.dynsym < 0:
			x.shdr.dynsym = i
			x.shdr.dynstr = int(s.Link)
		case s.Type == elf.SHT_RELA && x.shdr.rela < 0:
			x.shdr.rela = i
		case s.Type == elf.SHT_GNU_VERSYM || s.Type == elf.SHT_GNU_VERNEED || s.Type == elf.SHT_GNU_VERDEF:
			// Versions index the old symbol table; the linker ignores them.
			x.shdr.drop = append(x.shdr.drop, i)
		case s.Type == elf.SHT_NOTE || i == strndx:
			x.copies = append(x.copies, [2]int64{int64(s.Offset), int64(s.Offset + s.Size)})
		case s.Type == elf.SHT_PROGBITS && (s.Name == ".rodata" || s.Name == ".data.rel.ro" || s.Name == ".typelink"):
			x.copies = append(x.copies, [2]int64{int64(s.Offset), int64(s.Offset + s.Size)})
		}
	}
	if x.shdr.dynsym < 0 || x.shdr.rela < 0 {
		return nil, fmt.Errorf("%s: no dynamic symbols or relocations", path)
	}
	first := int64(f.Sections[x.shdr.dynsym].Offset)
	if first > 1<<16 {
		first = 1 << 16
	}
	x.copies = append(x.copies, [2]int64{0, first})
	symData, err := f.Sections[x.shdr.dynsym].Data()
	if err != nil {
		return nil, err
	}
	if x.names, err = f.Sections[x.shdr.dynstr].Data(); err != nil {
		return nil, err
	}
	relData, err := f.Sections[x.shdr.rela].Data()
	if err != nil {
		return nil, err
	}
	bo := f.ByteOrder
	for p := symData[elf64SymSize:]; len(p) >= elf64SymSize; p = p[elf64SymSize:] {
		x.syms = append(x.syms, rawSym{name: bo.Uint32(p), info: p[4], other: p[5], shndx: bo.Uint16(p[6:]),
			value: bo.Uint64(p[8:]), size: bo.Uint64(p[16:])})
	}
	for p := relData; len(p) >= elf64RelaSize; p = p[elf64RelaSize:] {
		info := bo.Uint64(p[8:])
		if elf.R_X86_64(info&0xffffffff) != elf.R_X86_64_64 || bo.Uint64(p[16:]) != 0 || info>>32 == 0 {
			continue
		}
		x.relas = append(x.relas, rawRela{off: bo.Uint64(p), sym: uint32(info>>32) - 1})
	}
	return x, nil
}

// readHeaders reads the library's section headers as they are in f, the
// library, and returns the index of the section names' table.
func (x *libIndex) readHeaders(f *os.File) (int, error) {
	var eh [64]byte
	if _, err := f.ReadAt(eh[:], 0); err != nil {
		return 0, err
	}
	bo := x.order
	shoff, entsize, num := bo.Uint64(eh[0x28:]), bo.Uint16(eh[0x3a:]), bo.Uint16(eh[0x3c:])
	if entsize != elf64ShdrSize || int(num) != len(x.sections) {
		return 0, fmt.Errorf("%s: unexpected section headers (%d of %d bytes)", x.path, num, entsize)
	}
	x.shdrs = make([]byte, int(num)*elf64ShdrSize)
	if _, err := f.ReadAt(x.shdrs, int64(shoff)); err != nil {
		return 0, err
	}
	return int(bo.Uint16(eh[0x3e:])), nil
}

// cString is the NUL-terminated string at off in tab.
func cString(tab []byte, off uint32) string {
	if int(off) >= len(tab) {
		return ""
	}
	s := tab[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// findRefs finds which of packages (import paths) each symbol's name
// mentions. The library names its type descriptors by a hash of their
// names (type:8Fp1XRzg is type:*net/http.Request); typeNames, the names
// of the type symbols of its packages' objects, undo that.
func (x *libIndex) findRefs(packages []string, typeNames []string) {
	x.numberPackages(packages)
	real := make(map[string]string, len(typeNames))
	for _, n := range typeNames {
		if m := mangledTypeName(n); m != n {
			real[m] = n
		}
	}
	x.refs = make([][]uint16, len(x.syms))
	var buf []uint16
	for i, s := range x.syms {
		name := cString(x.names, s.name)
		if r, ok := real[name]; ok {
			name = r
		}
		if typeDataOnly(name) {
			x.refs[i] = []uint16{noPackage}
			continue
		}
		buf = x.mentions(name, buf[:0])
		if len(buf) > 0 {
			x.refs[i] = append([]uint16(nil), buf...)
		}
	}
}

// noPackage in a symbol's refs keeps it out of every view.
const noPackage = 0xffff

// typeDataOnly says whether a symbol is one that views leave out whatever
// the closure: the names and import paths in type descriptors (a third of
// the library's symbols). The linker reads no such data of a library, and
// a cell's object defines those it uses (they are named by their
// content).
func typeDataOnly(name string) bool {
	return strings.HasPrefix(name, "type:.namedata.") || strings.HasPrefix(name, "type:.importpath.")
}

// numberPackages numbers packages in their sorted order.
func (x *libIndex) numberPackages(packages []string) {
	sorted := append([]string(nil), packages...)
	sort.Strings(sorted)
	x.pkgIndex = make(map[string]int, len(sorted))
	for i, p := range sorted {
		x.pkgIndex[symbolPrefix(p)] = i
	}
}

// mangledTypeName is the name the Go linker gives a type symbol in a
// shared library (cmd/link's typeSymbolMangle): a hash for type names
// longer than 14 bytes, outside the runtime package.
func mangledTypeName(name string) string {
	if !strings.HasPrefix(name, "type:") || strings.HasPrefix(name, "type:runtime.") || len(name) <= 14 {
		return name
	}
	sum := sha256.Sum256([]byte(name[5:]))
	sum[0] ^= 0xff
	prefix := "type:"
	if name[5] == '.' {
		prefix = "type:."
	}
	return prefix + base64.StdEncoding.EncodeToString(sum[:6])
}

// The refs of a library are kept beside it (refsFile): finding them means
// listing the symbols of its 400 packages' objects (go tool nm, seconds).
const refsMagic = "goaccel view refs 2\n"

// writeRefs writes the package numbering and refs to path.
func (x *libIndex) writeRefs(path string) error {
	var b bytes.Buffer
	b.WriteString(refsMagic)
	pkgs := make([]string, len(x.pkgIndex))
	for p, n := range x.pkgIndex {
		pkgs[n] = p
	}
	b.Write(binary.AppendUvarint(nil, uint64(len(pkgs))))
	for _, p := range pkgs {
		b.Write(binary.AppendUvarint(nil, uint64(len(p))))
		b.WriteString(p)
	}
	b.Write(binary.AppendUvarint(nil, uint64(len(x.refs))))
	for _, r := range x.refs {
		b.Write(binary.AppendUvarint(nil, uint64(len(r))))
		for _, n := range r {
			b.Write(binary.AppendUvarint(nil, uint64(n)))
		}
	}
	return writeReplacing(path, b.Bytes(), 0o644)
}

// readRefs reads what writeRefs wrote.
func (x *libIndex) readRefs(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	bad := fmt.Errorf("%s: not a view index of %s", path, x.path)
	if !bytes.HasPrefix(data, []byte(refsMagic)) {
		return bad
	}
	r := bytes.NewReader(data[len(refsMagic):])
	num := func() uint64 {
		v, e := binary.ReadUvarint(r)
		if e != nil && err == nil {
			err = bad
		}
		return v
	}
	npkgs := num()
	if npkgs > 1<<16 {
		return bad
	}
	x.pkgIndex = make(map[string]int, npkgs)
	for i := 0; i < int(npkgs) && err == nil; i++ {
		p := make([]byte, num())
		if _, e := io.ReadFull(r, p); e != nil {
			return bad
		}
		x.pkgIndex[string(p)] = i
	}
	if n := num(); err != nil || n != uint64(len(x.syms)) {
		return bad
	}
	x.refs = make([][]uint16, len(x.syms))
	for i := range x.refs {
		k := num()
		if k > npkgs {
			return bad
		}
		for j := uint64(0); j < k; j++ {
			x.refs[i] = append(x.refs[i], uint16(num()))
		}
	}
	return err
}

// mentions appends the numbers of the library's packages that the symbol
// name mentions: in every run of characters an import path and identifier
// are made of, the part before the first dot after the last slash.
func (x *libIndex) mentions(name string, out []uint16) []uint16 {
	for i := 0; i < len(name); {
		if !pathChar(name[i]) {
			i++
			continue
		}
		j := i
		for j < len(name) && pathChar(name[j]) {
			j++
		}
		tok := name[i:j]
		i = j
		slash := strings.LastIndexByte(tok, '/')
		dot := strings.IndexByte(tok[slash+1:], '.')
		if dot <= 0 {
			continue
		}
		if n, ok := x.pkgIndex[tok[:slash+1+dot]]; ok {
			out = append(out, uint16(n))
		}
	}
	return out
}

// pathChar says whether c may be part of a package path or identifier in a
// symbol name (paths are escaped there: see symbolPrefix).
func pathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '/' || c == '.' || c == '%' || c == '-' || c == '~' || c == '+'
}

// symbolPrefix is how a package path appears in symbol names: dots in the
// last element, '%', '"', spaces, control and non-ASCII characters
// escaped as %xx (as the Go toolchain writes them).
func symbolPrefix(path string) string {
	slash := strings.LastIndexByte(path, '/')
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c <= ' ' || c == '%' || c == '"' || c >= 0x7f || (c == '.' && i > slash) {
			fmt.Fprintf(&b, "%%%02x", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// viewName names the view of closure: a hash of its packages.
func viewName(closure []string) string {
	h := sha256.New()
	for _, p := range closure {
		fmt.Fprintf(h, "%s\x00", p)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// writeView writes the view of the library for closure (import paths) to
// path.
func (x *libIndex) writeView(path string, closure []string) error {
	in := make([]bool, len(x.pkgIndex))
	for _, p := range closure {
		if n, ok := x.pkgIndex[symbolPrefix(p)]; ok {
			in[n] = true
		}
	}
	bo := x.order
	// The symbols kept, renumbered from 1 (0 is the null symbol).
	newIndex := make([]uint32, len(x.syms))
	syms := make([]byte, elf64SymSize, elf64SymSize*(len(x.syms)/3))
	names := []byte{0}
	var ent [elf64SymSize]byte
	n := uint32(0)
	for i, s := range x.syms {
		keep := true
		for _, r := range x.refs[i] {
			if int(r) >= len(in) || !in[r] {
				keep = false
				break
			}
		}
		if !keep {
			continue
		}
		n++
		newIndex[i] = n
		bo.PutUint32(ent[0:], uint32(len(names)))
		ent[4], ent[5] = s.info, s.other
		bo.PutUint16(ent[6:], s.shndx)
		bo.PutUint64(ent[8:], s.value)
		bo.PutUint64(ent[16:], s.size)
		syms = append(syms, ent[:]...)
		names = append(names, cString(x.names, s.name)...)
		names = append(names, 0)
	}
	var relas []byte
	var rel [elf64RelaSize]byte
	for _, r := range x.relas {
		if int(r.sym) >= len(newIndex) || newIndex[r.sym] == 0 {
			continue
		}
		bo.PutUint64(rel[0:], r.off)
		bo.PutUint64(rel[8:], uint64(newIndex[r.sym])<<32|uint64(elf.R_X86_64_64))
		bo.PutUint64(rel[16:], 0)
		relas = append(relas, rel[:]...)
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), ".view")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := x.fill(tmp, syms, names, relas); err != nil {
		tmp.Close()
		return fmt.Errorf("writing a view of the shared library: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// fill writes the view into out: the library's copied parts at their
// places, then the new tables and section headers after its end.
func (x *libIndex) fill(out *os.File, syms, names, relas []byte) error {
	src, err := os.Open(x.path)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := out.Truncate(x.size); err != nil {
		return err
	}
	for _, c := range x.copies {
		if _, err := out.Seek(c[0], io.SeekStart); err != nil {
			return err
		}
		if _, err := io.Copy(out, io.NewSectionReader(src, c[0], c[1]-c[0])); err != nil {
			return err
		}
	}
	off := (x.size + 7) &^ 7
	place := func(b []byte) (int64, error) {
		at := off
		if _, err := out.WriteAt(b, at); err != nil {
			return 0, err
		}
		off = (at + int64(len(b)) + 7) &^ 7
		return at, nil
	}
	symOff, err := place(syms)
	if err != nil {
		return err
	}
	nameOff, err := place(names)
	if err != nil {
		return err
	}
	relaOff, err := place(relas)
	if err != nil {
		return err
	}
	// The section headers: the library's, with the symbol table, its
	// names and the relocations moved, and the version tables dropped.
	hdrs := append([]byte(nil), x.shdrs...)
	bo := x.order
	set := func(i int, offset, size uint64) {
		h := hdrs[i*elf64ShdrSize:]
		bo.PutUint64(h[24:], offset)
		bo.PutUint64(h[32:], size)
	}
	set(x.shdr.dynsym, uint64(symOff), uint64(len(syms)))
	bo.PutUint32(hdrs[x.shdr.dynsym*elf64ShdrSize+44:], 1) // first global symbol
	set(x.shdr.dynstr, uint64(nameOff), uint64(len(names)))
	set(x.shdr.rela, uint64(relaOff), uint64(len(relas)))
	for _, d := range x.shdr.drop {
		bo.PutUint32(hdrs[d*elf64ShdrSize+4:], uint32(elf.SHT_NULL))
	}
	shOff, err := place(hdrs)
	if err != nil {
		return err
	}
	// e_shoff in the ELF header.
	var b [8]byte
	bo.PutUint64(b[:], uint64(shOff))
	_, err = out.WriteAt(b[:], 0x28)
	return err
}
