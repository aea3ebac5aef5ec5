// Package complete provides code assistance for Go notebook cells: completion
// (complete_request), inspection (inspect_request), pager help (`name?`) and
// the is_complete check a console uses to decide whether Enter runs the cell.
//
// It is independent of the interpreter (it imports no yaegi). What earlier
// cells declared and imported comes in through a [Scope]; the text being
// edited is parsed leniently with go/scanner and go/parser (a cell may mix
// declarations and statements, and is usually unfinished while it is being
// edited). The standard library's packages are those under GOROOT/src and
// their API is read from that source with go/doc; packages the scope's
// symbol tables ([SymbolScope]) hold besides are importable too, their
// names and signatures read by reflection (also for the standard library
// when GOROOT has no sources). Members and types of cell variables (`p.` completion, inspecting
// a variable) come from go/types over the declaration log and the cell.
//
// # Conventions
//
// Cursor positions, in and out, count Unicode code points, as the Jupyter
// protocol (5.2+) does; invalid UTF-8 bytes count one each.
//
// Completion matches are bare names that replace the identifier being typed:
// for "fmt.Pri|" the matches are "Print", "Printf", "Println" and
// CursorStart..CursorEnd covers "Pri" (CursorStart is the position just after
// the dot); for "fm|" the matches include "fmt", "for", "func" and the span
// covers "fm". CursorEnd extends over identifier characters that follow the
// cursor, so completing inside a word replaces the whole word. Inside an
// import path string the matches are import paths and the span is the text
// between the opening quote and the cursor. "pkg." completes the members
// of an importable package even when no cell imported it yet.
//
// [IsComplete] indents continuation lines by one level more than the line
// that opened the innermost bracket: a tab if the cell already indents with
// tabs, else four spaces. [Help] serves "name?" (detail 0) and "name??"
// (detail 1, with source).
//
// # Concurrency and caching
//
// All functions are safe for concurrent use. The only package-level mutable
// state is a cache of package APIs (one entry per import path, loaded once)
// and a cache of type-checked packages used by go/types; both are guarded by
// mutexes and only grow. No function panics: failures of the parsers or
// go/types are recovered and reported as "nothing found".
package complete
