// Package fidelity measures how faithfully goaccel's notebook engine runs Go:
// it runs Go programs as notebook cells through the real engine and compares
// what each cell did with what `go run` does with the same program.
//
// # Suites
//
// test, typeparam and fixedbugs are Go's own test programs from the
// installed toolchain ($(go env GOROOT)/test, test/typeparam,
// test/fixedbugs) whose first comment line other than //go:build is exactly
// "// run" (no flags, no arguments); examples are the harness's own
// Go by Example-style programs in testdata/examples. A program whose
// //go:build constraint does not hold here (GOOS, GOARCH, unix, cgo, gc,
// the toolchain's tool and release tags) is not applicable and does not run
// (see package corpus).
//
// # How a program runs
//
// The reference is the installed toolchain: the program is built as the
// only file of a throw-away module (go.mod's `go` line is the toolchain's
// version) and run — what `go run` does, without go run's own "exit status"
// line — with stdin empty and stdout and stderr on one pipe (package
// gorun). Then the program's source is sent as ONE cell (execution count 1)
// to a fresh engine in a child process, runcell, which starts the engine as
// the kernel does and records the cell's stream output in order, its
// displays and its reply (package cellrun); input requests are refused.
// Both runs have the same environment, the same timeout and the same
// working directory: $GOROOT/test for Go's test programs (where Go's own
// harness runs `// run` tests; a few read files there), a fresh directory
// for each example run, holding a copy of the example's companion
// directory NAME.files when it has one (copied into the build directory
// too, for //go:embed).
//
// # What "match" means (Judge)
//
// The cell's output is the text of its stream messages, stdout and stderr
// concatenated in the order the engine sent them; go run's output is
// stdout and stderr as one pipe. Outputs are compared byte for byte (the
// first gorun.DefaultMaxOutput bytes of each, 4 MiB).
//
//   - go run exits 0: the program passes when the cell ends without an
//     error and its output equals go run's. Otherwise it is an "error" (the
//     cell failed) or "wrong-output" (it succeeded but printed something
//     else).
//   - go run exits non-zero: the cell must end with an error ("error"
//     otherwise) that describes the same failure ("error" otherwise):
//     after a panic or fatal error (status 2 and the runtime's crash report
//     "panic: MSG" / "fatal error: MSG" followed by goroutine stacks), the
//     first line of MSG — of the last nested panic, without "[recovered]" —
//     must appear in the error's evalue or traceback; after os.Exit(n) or
//     log.Fatal (a non-zero status without a crash report), the evalue or
//     traceback must say "exit" followed within 16 characters by n
//     ("exit status 3", "os.Exit(3)"); after a signal, any error agrees.
//     Then the cell's output must equal go run's output before the crash
//     report (all of it for exits): "pass", else "wrong-output".
//   - Nondeterministic examples (a "// fidelity: nondeterministic" header
//     line) are judged the same way except that outputs are not compared.
//   - "death": the child ended without a reply (the kernel crashed or was
//     killed). "hang": the cell did not end within the timeout (the child
//     is killed with its process group).
//   - "not-applicable": a //go:build constraint does not hold, or go build
//     failed, or go run itself did not end within the timeout.
//
// Pass rates count passes among the programs that ran (not-applicable
// programs excluded).
package fidelity
