package build

import (
	"container/heap"
	"strings"
)

// A plugin linked against the shared library initializes, when it is
// opened, its own packages and the library packages it imports directly:
// the linker follows a package's imports through its init record's
// relocations, and a library's records have none it can read. Library
// packages imported only through others would stay uninitialized where
// the process lacks them (the kernel links most of the library's
// packages, and its initialized copies are the ones the library binds to;
// not GoMLX). So a build lists the library packages its cell reaches, in
// Go's initialization order (Built.Inits), and the loader initializes
// those the process has not (shlib.Init) before opening the plugin.

// initOrder lists the library packages that the packages at imports
// reach, themselves included, dependencies first and otherwise in the
// lexical order of their symbol names, as cmd/link orders a program's
// initialization (inittask.go). Callers hold b.mu.
func (b *Builder) initOrder(imports []string) []string {
	if b.lib == nil {
		return nil
	}
	in := map[string]bool{}
	for _, p := range imports {
		if b.cells[p] {
			continue // initialized when it was loaded
		}
		if b.lib.packages[p] {
			in[p] = true
		}
		if lp := b.pkgs[p]; lp != nil {
			for _, d := range lp.Deps {
				if b.lib.packages[d] {
					in[d] = true
				}
			}
		}
	}
	// Kahn's algorithm over the (transitive) dependencies within the set:
	// a package is ready once all of them are placed, as it is once its
	// direct imports are.
	waiting := map[string]int{}
	users := map[string][]string{}
	h := &initHeap{}
	for p := range in {
		n := 0
		if lp := b.pkgs[p]; lp != nil {
			for _, d := range lp.Deps {
				if in[d] && d != p {
					n++
					users[d] = append(users[d], p)
				}
			}
		}
		waiting[p] = n
		if n == 0 {
			heap.Push(h, initRecord{p, InitSymbol(p)})
		}
	}
	order := make([]string, 0, len(in))
	for h.Len() > 0 {
		p := heap.Pop(h).(initRecord).path
		order = append(order, p)
		for _, u := range users[p] {
			if waiting[u]--; waiting[u] == 0 {
				heap.Push(h, initRecord{u, InitSymbol(u)})
			}
		}
	}
	return order
}

// initRecord is a package and the symbol name of its init record.
type initRecord struct{ path, symbol string }

// initHeap orders packages as cmd/link orders init records: by their
// symbol names.
type initHeap []initRecord

func (h initHeap) Len() int           { return len(h) }
func (h initHeap) Less(i, j int) bool { return h[i].symbol < h[j].symbol }
func (h initHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *initHeap) Push(x any)        { *h = append(*h, x.(initRecord)) }
func (h *initHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// InitSymbol names the init record of the package at path.
func InitSymbol(path string) string { return SymbolPrefix(path) + "..inittask" }

// SymbolPrefix is how the toolchain writes an import path in symbol names
// (cmd/internal/objabi.PathToPrefix): dots in the last element, '%', '"',
// spaces, control and non-ASCII characters escaped as %xx.
func SymbolPrefix(path string) string {
	slash := strings.LastIndexByte(path, '/')
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c <= ' ' || c == '%' || c == '"' || c >= 0x7f || (c == '.' && i > slash) {
			b.WriteByte('%')
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
