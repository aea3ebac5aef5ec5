// Package notebook is goaccel's Go-cell engine: the session a kernel talks
// to, and the routing of each cell to a way of running it. It implements
// the method set of kernel.Interpreter (Info, Execute, Complete, Inspect,
// IsComplete, Close), kernel.Debugger and kernel.CommUser without
// importing package kernel, and launcher.Session and launcher.WorkerRuntime
// for launches. It runs no Go code itself.
//
// # How a cell runs
//
// Execute (execute.go) starts the cell (session.Cell: its context, input,
// where its output goes), hands its command lines (% and !) to package
// commands, whose registry routes each to its handler (magics.go gives
// them what they need of the engine: commands.Env), and hands the rest,
// Go, to a runner
// (session.Runner: Run, Evaluate, Values, Reset, Close):
//
//   - package compiledrunner, wherever plugins can be built: the cell is
//     type-checked against the session (check), made a package (gen),
//     built into a plugin (build) and run (compiled); simple cells are
//     evaluated without a build (eval);
//   - package yaegirunner, the yaegi interpreter: where plugins cannot be
//     built (or with Options.Interpret; the first cell says why), and while
//     the debugger has a breakpoint set (debug.go moves the compiled session
//     there and back).
//
// Both keep the session's declaration log (session.Log) in step with what
// their cells declared; %who, completion (assist.go), the debugger and
// launches read it. Execute then makes the reply: a runner's result values
// become a MIME bundle (result.go: text/plain as fmt prints them, a string
// quoted, so "" and trailing spaces are visible and "5" differs from 5;
// values with HTML, Markdown, SVG, LaTeX, PNG, JPEG or JSON methods, and
// image.Image values, add the matching MIME types; tables — slices of
// structs or maps, 2-D slices, matrices — show as tables, package
// display/table). The interpreter
// formats its values itself, inside the interpreter, where the methods of
// interpreted types are.
//
// # Output
//
// Cells' fmt.Print*, println and package log write to the session's
// Output; with an fdcapture.Capture in Options, writes to fds 1 and 2
// (os.Stdout, compiled cells and packages, subprocesses) are forwarded too.
// Output is streamed while the cell runs. Output that goroutines of a cell
// produce after the cell ended goes to the most recently started cell (as
// in ipykernel), until the next cell starts.
//
// # Errors
//
// The runners turn compile errors, panics, os.Exit and log.Fatal, panics
// in goroutines the cell started and interrupts into a *frontend.Error,
// positioned at the cell's lines; the session survives all of them.
//
// # Debugging
//
// The engine implements kernel.Debugger with the adapter of package dap,
// and calls into it only while a debug session is active (a client
// attached): the code of the cells that ran before is handed over as a
// client attaches, and the interpreter runner runs cells under the
// debugger from the next cell on. A compiled session is carried into the
// interpreter when a breakpoint is set and back when the client detaches
// (yaegirunner.Runner.Adopt and Restore). LANGUAGE.md says what a user
// sees.
//
// # Launches
//
// Package launch makes the payload a launch hands its workers and replays
// it in a worker; the engine installs it behind launcher.Session and
// launcher.WorkerRuntime (launches.go), and it reaches the runners through
// two small interfaces.
//
// # Layout
//
// Before (one package of 22 files, 7.6k lines, 8 of them importing yaegi:
// the session, the yaegi runner, the compiled runner's glue, launches,
// magics, results and debugger syncing; every cell passed through the
// adapter's SetCellCode):
//
//	kernel ─Interpreter─▶ notebook (everything) ──▶ yaegi
//	                        │
//	     ┌──────────┬───────┼──────────┬──────────┬──────────┐
//	     ▼          ▼       ▼          ▼          ▼          ▼
//	  compiled   complete  dap       cells    fdcapture   launcher
//	     │                  │
//	     ▼                  ▼
//	check, gen,           yaegi
//	build, eval
//
// After (notebook is the session and the routing, 12 files, 1.5k lines, no
// yaegi; each way to run a cell is a package behind session.Runner;
// launches are a package; the adapter is called only while debugging):
//
//	kernel ─Interpreter─▶ notebook (session, routing, magics, results)
//	                        │
//	     ┌──────────────────┼───────────────────┬─────────────────┐
//	     ▼                  ▼                   ▼                 ▼
//	compiledrunner     yaegirunner ──▶ yaegi   launch            dap ──▶ yaegi
//	     │                  │                   │  (Compiled,     (while a debug
//	     ▼                  ▼                   │   Interpreted    session is
//	  compiled            dap                   │   interfaces)    active)
//	     │                                      ▼
//	     ▼                            compiled, check, build, launcher
//	check, gen, build, eval
//
//	and all of them ──▶ internal/session (Runner, Log, Cell, Current, Output);
//	notebook still uses complete, cells, fdcapture and launcher as before.
package notebook
