package build

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"debug/elf"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Linking a cell's plugin against the shared library, the Go linker reads
// every dynamic symbol of the library (160,000; it reads the data of each
// of 60,000 type descriptors with a system call): most of every link,
// whatever the cell. A cell's link needs few of them: the symbols its
// objects refer to by name (with -linkshared, every symbol of another
// package is referred to by name), and what the linker follows from them.
//
// So the linker gets a view of the library made for the link: an ELF file
// with the library's section headers and notes, a dynamic symbol table and
// relocation section holding only the symbols the link needs, and the data
// the linker reads of them at their places (the rest of the file is a
// hole). What a link needs (selectSymbols): the symbols the objects it
// loads name, the runtime's (the linker looks some up by name), and,
// from each type descriptor among them, the descriptors its pointers lead
// to (the linker follows element and field types through the library's
// relocations, and reads each descriptor's pointer bitmap). The C linker
// never sees the view (see extldScript), and the plugin's records name
// the library's file name, which the view shares; the dynamic linker
// binds the plugin to the real library.
//
// A view is named by the symbols it holds and kept beside the library:
// running a cell again, or another cell referring to the same symbols,
// reuses it. Should a view ever lack a symbol, the link fails and is done
// again against the library itself (Build).

// libIndex is what making views needs from the library, read once.
type libIndex struct {
	path     string
	order    binary.ByteOrder
	size     int64          // of the library file
	sections []*elf.Section // as in the library (names, places)
	shdrs    []byte         // the library's section headers, raw
	syms     []rawSym       // the dynamic symbols, the null symbol excepted
	names    []byte         // the dynamic string table
	relas    []rawRela      // relocations the Go linker reads, by offset
	// copies are the parts of the file every view holds at their places:
	// the ELF header and what follows up to the symbol table, the notes,
	// the section names.
	copies [][2]int64
	shdr   struct {
		dynsym, dynstr, rela int // their section indices
		drop                 []int
	}
	// Made by index.
	kinds  []symKind
	byName []int32 // symbol numbers + 1 by the hash of their key (lookup)
}

// symKind says what selectSymbols needs to know of a symbol.
type symKind uint8

const (
	symOther   symKind = iota
	symType            // a type descriptor: its data and pointers matter
	symRuntime         // the runtime's and the linker's: in every view
)

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

// readLibIndex reads the library at path.
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
	x.syms = make([]rawSym, 0, len(symData)/elf64SymSize)
	x.relas = make([]rawRela, 0, len(relData)/elf64RelaSize)
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
	byOffset := func(a, b rawRela) int { return cmp.Compare(a.off, b.off) }
	if !slices.IsSortedFunc(x.relas, byOffset) {
		slices.SortFunc(x.relas, byOffset)
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
func cString(tab []byte, off uint32) string { return string(cBytes(tab, off)) }

// cBytes is the NUL-terminated string at off in tab, in place.
func cBytes(tab []byte, off uint32) []byte {
	if int(off) >= len(tab) {
		return nil
	}
	s := tab[off:]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
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

// index makes what selectSymbols reads: the symbols' kinds, and a table
// of their names (an open-addressed hash table of symbol numbers: a map
// of strings would hold a copy of every name, tens of MB).
func (x *libIndex) index() {
	x.kinds = make([]symKind, len(x.syms))
	size := 1
	for size < 2*len(x.syms) {
		size <<= 1
	}
	x.byName = make([]int32, size)
	for i, s := range x.syms {
		name := cBytes(x.names, s.name)
		switch {
		case bytes.HasPrefix(name, []byte("type:")) && !bytes.HasPrefix(name, []byte("type:.")):
			x.kinds[i] = symType
		case bytes.HasPrefix(name, []byte("runtime.")) || bytes.HasPrefix(name, []byte("go:")) && !bytes.HasPrefix(name, []byte("go:itab.")):
			// The runtime's, and the linker's (go:link.abihash.*).
			x.kinds[i] = symRuntime
		}
		h := nameHash(x.key(i)) & uint64(size-1)
		for x.byName[h] != 0 {
			h = (h + 1) & uint64(size-1)
		}
		x.byName[h] = int32(i) + 1
	}
}

// key is the name objects refer to symbol i by: the library names
// functions with their ABI (symtab.go's mangleABIName), objects without.
func (x *libIndex) key(i int) []byte {
	s := x.syms[i]
	name := cBytes(x.names, s.name)
	if elf.ST_TYPE(s.info) == elf.STT_FUNC {
		name = bytes.TrimSuffix(bytes.TrimSuffix(name, []byte(".abiinternal")), []byte(".abi0"))
	}
	return name
}

// lookup calls f with each symbol objects refer to by name.
func (x *libIndex) lookup(name string, f func(i int32)) {
	mask := uint64(len(x.byName) - 1)
	for h := nameHash([]byte(name)) & mask; x.byName[h] != 0; h = (h + 1) & mask {
		if i := x.byName[h] - 1; string(x.key(int(i))) == name {
			f(i)
		}
	}
}

// nameHash is FNV-1a.
func nameHash(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// selectSymbols returns, in the library's order, the symbols a link needs
// whose objects refer to names: those of the names (type descriptors
// under their mangled names), the runtime's and those the linker looks up
// (go:link.*, linkerNames), and the type descriptors the pointers of those lead to,
// transitively.
func (x *libIndex) selectSymbols(names []string) []int32 {
	in := make([]bool, len(x.syms))
	var queue []int32
	add := func(i int32) {
		if !in[i] {
			in[i] = true
			queue = append(queue, i)
		}
	}
	for i, k := range x.kinds {
		if k == symRuntime {
			add(int32(i))
		}
	}
	for _, list := range [][]string{linkerNames, names} {
		for _, n := range list {
			x.lookup(mangledTypeName(n), add)
		}
	}
	for len(queue) > 0 {
		i := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if x.kinds[i] != symType {
			continue
		}
		for _, r := range x.relasIn(i) {
			add(int32(r.sym))
		}
	}
	var out []int32
	for i, ok := range in {
		if ok {
			out = append(out, int32(i))
		}
	}
	return out
}

// linkerNames are the symbols outside the runtime package's names that
// the linker looks up itself (cmd/link's symtab.go).
var linkerNames = []string{"type:runtime.moduledata"}

// relasIn are the relocations within symbol i's data.
func (x *libIndex) relasIn(i int32) []rawRela {
	s := x.syms[i]
	lo := sort.Search(len(x.relas), func(k int) bool { return x.relas[k].off >= s.value })
	hi := lo
	for hi < len(x.relas) && x.relas[hi].off < s.value+s.size {
		hi++
	}
	return x.relas[lo:hi]
}

// viewName names the view holding the symbols selected: a hash of them.
func viewName(selected []int32) string {
	h := sha256.New()
	var b [4]byte
	for _, i := range selected {
		binary.LittleEndian.PutUint32(b[:], uint32(i))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// writeView writes the view of the library holding the symbols selected
// (selectSymbols) to path.
func (x *libIndex) writeView(path string, selected []int32) error {
	bo := x.order
	// The symbols kept, renumbered from 1 (0 is the null symbol).
	newIndex := make(map[uint32]uint32, len(selected))
	syms := make([]byte, elf64SymSize, elf64SymSize*(len(selected)+1))
	names := []byte{0}
	var ent [elf64SymSize]byte
	for n, i := range selected {
		s := x.syms[i]
		newIndex[uint32(i)] = uint32(n + 1)
		bo.PutUint32(ent[0:], uint32(len(names)))
		ent[4], ent[5] = s.info, s.other
		bo.PutUint16(ent[6:], s.shndx)
		bo.PutUint64(ent[8:], s.value)
		bo.PutUint64(ent[16:], s.size)
		syms = append(syms, ent[:]...)
		names = append(names, cString(x.names, s.name)...)
		names = append(names, 0)
	}
	// The relocations the linker follows, within the type descriptors,
	// and the data it reads: the descriptors and their pointer bitmaps.
	var relas []byte
	var rel [elf64RelaSize]byte
	var data [][2]uint64 // address ranges
	for _, i := range selected {
		if x.kinds[i] != symType {
			continue
		}
		s := x.syms[i]
		data = append(data, [2]uint64{s.value, s.value + s.size})
		for _, r := range x.relasIn(i) {
			if n := newIndex[r.sym]; n != 0 {
				bo.PutUint64(rel[0:], r.off)
				bo.PutUint64(rel[8:], uint64(n)<<32|uint64(elf.R_X86_64_64))
				bo.PutUint64(rel[16:], 0)
				relas = append(relas, rel[:]...)
			}
		}
	}

	src, err := os.Open(x.path)
	if err != nil {
		return err
	}
	defer src.Close()
	copies, err := x.dataCopies(src, data)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".view")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := x.fill(tmp, src, append(copies, x.copies...), syms, names, relas); err != nil {
		tmp.Close()
		return fmt.Errorf("writing a view of the shared library: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Type descriptor fields (internal/abi.Type on amd64) the linker reads of
// a library's descriptors: PtrBytes, and GCData, the pointer bitmap's
// address.
const (
	typePtrBytesOff = 8
	typeGCDataOff   = 32
)

// dataCopies turns the address ranges of type descriptors into the parts
// of the file a view holds for them: theirs and their pointer bitmaps',
// nearby parts merged.
func (x *libIndex) dataCopies(src *os.File, ranges [][2]uint64) ([][2]int64, error) {
	var out [][2]int64
	var head [typeGCDataOff + 8]byte
	for _, r := range ranges {
		off, ok := x.fileOffset(r[0], r[1]-r[0])
		if !ok {
			continue
		}
		out = append(out, [2]int64{off, off + int64(r[1]-r[0])})
		if r[1]-r[0] < typeGCDataOff+8 {
			continue
		}
		if _, err := src.ReadAt(head[:], off); err != nil {
			return nil, err
		}
		ptrBytes := x.order.Uint64(head[typePtrBytesOff:])
		n := (ptrBytes/8 + 7) / 8
		if gc, ok := x.fileOffset(x.order.Uint64(head[typeGCDataOff:]), n); ok && n > 0 {
			out = append(out, [2]int64{gc, gc + int64(n)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	var merged [][2]int64
	for _, c := range out {
		if k := len(merged) - 1; k >= 0 && c[0] <= merged[k][1]+4096 {
			merged[k][1] = max(merged[k][1], c[1])
			continue
		}
		merged = append(merged, c)
	}
	return merged, nil
}

// fileOffset is where n bytes at address addr lie in the library's file,
// when they lie in a section with contents.
func (x *libIndex) fileOffset(addr, n uint64) (int64, bool) {
	for _, s := range x.sections {
		if s.Type == elf.SHT_PROGBITS && s.Addr != 0 && addr >= s.Addr && addr+n <= s.Addr+s.Size {
			return int64(addr - s.Addr + s.Offset), true
		}
	}
	return 0, false
}

// fill writes the view into out: the parts copies of src, the library, at
// their places, then the new tables and section headers after its end.
func (x *libIndex) fill(out, src *os.File, copies [][2]int64, syms, names, relas []byte) error {
	if err := out.Truncate(x.size); err != nil {
		return err
	}
	var buf []byte
	for _, c := range copies {
		if n := int(c[1] - c[0]); cap(buf) < n {
			buf = make([]byte, n)
		}
		b := buf[:c[1]-c[0]]
		if _, err := src.ReadAt(b, c[0]); err != nil {
			return err
		}
		if _, err := out.WriteAt(b, c[0]); err != nil {
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
