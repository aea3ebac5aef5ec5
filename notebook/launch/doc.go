// Package launch is the notebook side of launcher.NotebookLauncher and
// debuglauncher.DebugLauncher: the payload a launch hands its workers, and
// the replay of that payload in a worker. Go cannot fork a running
// runtime, so a launched worker is a fresh process; a Session carries what
// it needs there, the way fork would:
//
//   - which function: a launcher call's function argument is named (Name)
//     by the runner that runs the cell, since Go function values carry no
//     name to give back;
//   - the declarations the function needs (imports, types, funcs, methods,
//     consts), by source, and every global variable it reaches as a typed
//     declaration without its initializer (statements are never run
//     again);
//   - the current values of those variables, as JSON, checked by a round
//     trip so that a value that cannot be carried exactly is an error
//     naming the variable instead of a silent change.
//
// When cells are compiled, the session is read from the type checker and
// the compiled session's storage (compiled.go, replay.go), and the workers
// build the same cells; when they are interpreted, from the declaration
// log and the interpreter (interpreted.go). The engine (package notebook)
// installs a Session as the launcher's launcher.Session in the kernel and
// as its launcher.WorkerRuntime in a worker; the Session reaches the
// runners through the Compiled and Interpreted interfaces and runs a
// worker's cells through Options.Execute.
package launch
