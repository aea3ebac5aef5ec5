// Package yaegirunner is the engine's interpreter runner: it runs cells on
// one yaegi interpreter (github.com/traefik/yaegi) whose state lives across
// cells. The engine (package notebook) chooses it where plugins cannot be
// built (or GOACCEL_INTERPRET=1), and while the debugger has a breakpoint
// set: compiled code cannot stop at one. Besides package dap, it is the
// only package of the notebook that imports yaegi.
//
// # How a cell runs
//
// Package cells cuts the cell's Go code into top-level pieces; three texts
// of the cell's own shape are parsed (imports, declarations, statements),
// each behind a `//line cell[N]/_.go:1:1` directive so that every position
// yaegi reports is the cell's own line and column (parse.go). The pieces
// run in Go's order: imports first (re-imports of an already imported
// package are dropped silently; packages used without an import are added,
// imports.go), then the declarations as one file, then the statements as
// one block (run.go). A var or const declaration that follows a statement
// stays with the statements, so it may use variables the statements
// defined.
//
// Before compiling, the AST is rewritten for what yaegi v0.16.1 lacks (see
// notebook/LANGUAGE.md; rewrite.go, loops.go): min, max, clear, range over
// int, per-iteration loop variables, comma-ok forms outside functions, and
// `go` statements (wrapped so that a panic in a goroutine is reported
// instead of killing the kernel). A cell defining `func main` gets it
// renamed (yaegi would run it on every later Eval) and called once at the
// end of that cell, like `go run`. Functions that call notebook functions
// count their nesting, so endless recursion stops the cell instead of
// overflowing the stack.
//
// The value of the cell's trailing expression (decided from the AST) is
// formatted inside the interpreter by small probe programs (show.go,
// prelude.go), so String methods and named types print as Go prints them:
// text/plain is fmt.Sprint of the value except that a string is shown
// quoted, and values with HTML, Markdown, SVG, LaTeX, PNG, JPEG or JSON
// methods, and image.Image values, add the matching MIME types.
//
// Compile errors, panics (with the interpreter's frames mapped to cell
// lines), os.Exit and log.Fatal (which yaegi turns into panics), panics in
// goroutines the cell started, and interrupts become a *frontend.Error
// (errors.go); the interpreter and its state survive all of them.
//
// # Packages
//
// Packages holds yaegi's symbol tables of the packages linked into the
// kernel (the standard library, goaccel's cell-facing packages, package
// symbols): the interpreter uses them, and the compiled runner's evaluator
// calls the same functions through them.
//
// # Debugging
//
// While a debug session is active the engine attaches the adapter of
// package dap (Attach), and the statements of interpreted cells run under
// yaegi's debugger (debug.go). Adopt carries a compiled session into a
// fresh interpreter, declarations at their cells' positions and variables'
// values copied (carry.go); Restore carries what the interpreted cells did
// back to the compiled runner (adopt.go).
package yaegirunner
