// Package notebook is goaccel's Go-cell engine: it runs notebook cells on one
// yaegi interpreter (github.com/traefik/yaegi) whose state lives across cells,
// and implements the method set of kernel.Interpreter (Info, Execute,
// Complete, Inspect, IsComplete, Close) without importing package kernel.
//
// # How a cell runs
//
// Leading lines starting with % or ! are magics (see Help). The rest is Go.
// Package cells cuts it into top-level pieces; three texts of the cell's own
// shape are parsed (imports, declarations, statements), each behind a
// `//line cell[N]/_.go:1:1` directive so that every position yaegi reports is
// the cell's own line and column. The pieces run in Go's order: imports
// first (re-imports of an already imported package are dropped silently),
// then the declarations as one file, then the statements as one block. A var
// or const declaration that follows a statement stays with the statements, so
// it may use variables the statements defined.
//
// Before compiling, the AST is rewritten for what yaegi v0.16.1 lacks (see
// LANGUAGE.md): min, max, clear, range over int, per-iteration loop
// variables, and `go` statements (wrapped so that a panic in a goroutine is
// reported instead of killing the kernel). A cell defining `func main` gets
// it renamed (yaegi would run it on every later Eval) and called once at the
// end of that cell, like `go run`.
//
// The value of the cell's trailing expression (decided from the AST) is
// formatted inside the interpreter, so String methods and named types print
// as Go prints them: text/plain is fmt.Sprint of the value except that a
// string is shown quoted (%q), so "" and trailing spaces are visible and "5"
// differs from 5. Values with HTML, Markdown, SVG, LaTeX, PNG, JPEG or JSON
// methods, and image.Image values, add the matching MIME types.
//
// # Output
//
// fmt.Print*, println and package log write to writers given to yaegi; with
// an fdcapture.Capture in Options, writes to fds 1 and 2 (os.Stdout,
// compiled packages, subprocesses) are forwarded too. Output is coalesced for
// at most 20 ms and streamed while the cell runs. Output that goroutines of a
// cell produce after the cell ended goes to the most recently started cell
// (as in ipykernel), until the next cell starts.
//
// # Errors
//
// Compile errors, panics (with the interpreter's frames mapped to cell
// lines), os.Exit and log.Fatal (which yaegi turns into panics), panics in
// goroutines the cell started, and interrupts become a *frontend.Error; the
// interpreter and its state survive all of them.
//
// # Debugging
//
// The engine implements kernel.Debugger with the adapter of package dap.
// While a client is attached, interpreted cells' statements run under
// yaegi's debugger; a compiled session is carried into the interpreter when
// a breakpoint is set and back when the client detaches (debugsync.go,
// carry.go). LANGUAGE.md says what a user sees.
package notebook
