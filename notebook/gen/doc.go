// Package gen turns a checked notebook cell (package check) into the source
// of a Go package that the toolchain compiles into a plugin.
//
// The generated package is named main, so its types print as main.T, and
// has its own import path. It keeps the cell's lines: the cell's text is
// edited in place (never reprinted), and every declaration and top-level
// statement is preceded by a //line directive, so compile errors and panics
// name the cell's lines.
//
// What Go's package boundaries would otherwise break is bridged:
//
//   - Earlier cells' types are reached through aliases (type point =
//     c3.GXt_point), so they keep their names; their functions through
//     wrappers calling exported methods of the earlier package (late
//     binding happens in the callee: every function starts by checking an
//     override hook that the engine sets when a later cell redefines it
//     with the same signature); their constants through exported aliases;
//     their variables through pointers the engine injects before the cell
//     runs.
//   - Unexported fields of structs declared in earlier cells are read and
//     written through an identically laid-out local struct type (a
//     "shadow") and unsafe.Pointer; composite literals of such structs are
//     built as shadows and converted the same way.
//   - Unexported methods declared in cells get exported names (Gxm_name),
//     so that a type of one cell satisfies an interface of another.
//   - A plugin's exported functions and variables are looked up by name
//     when it is opened, and the packages of earlier cells are linked into
//     every later plugin, whose opening would then look for the earlier
//     cells' names under its own path and fail: so a cell package exports no
//     function or variable (the cell's own exported ones are renamed
//     _gxE_Name) and hands the engine its symbol table (_gxsymbols) through
//     gxrt.Register when it is loaded.
//
// Package-level variables are initialized by a function the engine calls
// (not by the plugin's loading), the cell's statements run in another,
// goroutines started by cells report their panics instead of ending the
// kernel, os.Exit and log.Fatal end the cell, and loops and function entries
// check for interrupts (package gxrt).
package gen
