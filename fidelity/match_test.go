package fidelity

import (
	"testing"

	"github.com/goaccel/goaccel/fidelity/cellrun"
	"github.com/goaccel/goaccel/fidelity/gorun"
	"github.com/goaccel/goaccel/fidelity/report"
)

const panicTrailer = "\ngoroutine 1 [running]:\nmain.main()\n\t/tmp/x/main.go:9 +0x1d\nexit status 2\n"

func cellOK(out string) cellrun.Outcome {
	return cellrun.Outcome{Replied: true, Events: []cellrun.Event{{Kind: cellrun.KindStream, Name: "stdout", Text: out}}}
}

func cellErr(out string, e cellrun.Error) cellrun.Outcome {
	o := cellOK(out)
	o.Error = &e
	return o
}

func TestJudge(t *testing.T) {
	ok := gorun.Result{Output: "hi\n", Status: "exit status 0"}
	panicked := gorun.Result{Output: "before\npanic: boom [recovered]\n\tpanic: second\n" + panicTrailer, ExitCode: 2}
	exited := gorun.Result{Output: "bye\n", ExitCode: 3}
	tests := []struct {
		name    string
		ref     gorun.Result
		cell    cellrun.Outcome
		nondet  bool
		want    report.Category
		wantMsg string
	}{
		{"pass", ok, cellOK("hi\n"), false, report.Pass, ""},
		{"wrong output", ok, cellOK("hi"), false, report.WrongOutput, "the output differs from go run's"},
		{"nondeterministic output", ok, cellOK("other\n"), true, report.Pass, ""},
		{"cell failed", ok, cellErr("hi\n", cellrun.Error{Name: "CompileError", Value: "x\ny"}), false, report.Error,
			"the cell failed where go run succeeded: CompileError: x …"},
		{"build failed", gorun.Result{BuildFailed: true, BuildOutput: "./main.go:1: nope"}, cellrun.Outcome{}, false, report.NotApplicable,
			"go build failed: ./main.go:1: nope"},
		{"reference timed out", gorun.Result{TimedOut: true}, cellrun.Outcome{}, false, report.NotApplicable, "go run did not end within the timeout"},
		{"hang", ok, cellrun.Outcome{TimedOut: true}, false, report.Hang, "the cell did not end within the timeout"},
		{"death", ok, cellrun.Outcome{Status: "signal: segmentation fault", Stderr: "SIGSEGV...\nfatal error: unexpected signal\n"}, false, report.Death,
			"the kernel was killed (signal: segmentation fault): fatal error: unexpected signal"},
		{"death with the crash in the output", ok, cellrun.Outcome{Status: "exit status 2", Stderr: "\nruntime stack:\n",
			Events: []cellrun.Event{{Kind: cellrun.KindStream, Text: "runtime: goroutine stack exceeds 1000-byte limit\nfatal error: stack overflow\n"}}},
			false, report.Death, "the kernel exited without replying (exit status 2): fatal error: stack overflow"},
		{"stack overflow", ok, cellrun.Outcome{Status: "exit status 2", Stderr: "\nruntime stack:\nruntime.throw(...)\nruntime.morestack()\n"}, false, report.Death,
			"the kernel exited without replying (exit status 2): stack overflow (runtime.morestack in the crash report)"},
		{"exit without a reply", ok, cellrun.Outcome{Status: "exit status 0"}, false, report.Death, "the kernel exited without replying (exit status 0)"},
		{"panic matches", panicked, cellErr("before\n", cellrun.Error{Name: "panic", Value: "second"}), false, report.Pass, ""},
		{"panic in the traceback", panicked, cellErr("before\n", cellrun.Error{Name: "E", Value: "v", Traceback: []string{"\x1b[31mpanic: second\x1b[0m"}}), false, report.Pass, ""},
		{"panic output differs", panicked, cellErr("", cellrun.Error{Name: "panic", Value: "second"}), false, report.WrongOutput,
			"the output before the failure differs from go run's"},
		{"other panic", panicked, cellErr("before\n", cellrun.Error{Name: "panic", Value: "reflect: oops"}), false, report.Error,
			"go run failed with panic: second, the cell with panic: reflect: oops"},
		{"panic but the cell succeeded", panicked, cellOK("before\n"), false, report.Error, "go run failed (panic: second) but the cell succeeded"},
		{"exit matches", exited, cellErr("bye\n", cellrun.Error{Name: "Exit", Value: "os.Exit(3) called"}), false, report.Pass, ""},
		{"exit status differs", exited, cellErr("bye\n", cellrun.Error{Name: "Exit", Value: "os.Exit(1) called"}), false, report.Error,
			"go run failed with exit status 3, the cell with Exit: os.Exit(1) called"},
		{"exit as a panic", exited, cellErr("bye\n", cellrun.Error{Name: "panic", Value: "bye"}), false, report.Error,
			"go run failed with exit status 3, the cell with panic: bye"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := Judge(tt.ref, tt.cell, tt.nondet)
			if got != tt.want || msg != tt.wantMsg {
				t.Errorf("Judge = %s, %q; want %s, %q", got, msg, tt.want, tt.wantMsg)
			}
		})
	}
}

func TestParseFailure(t *testing.T) {
	tests := []struct {
		name string
		ref  gorun.Result
		want Failure
	}{
		{"plain panic", gorun.Result{Output: "a\npanic: boom\n" + panicTrailer, ExitCode: 2},
			Failure{Kind: "panic", Message: "boom", Before: "a\n"}},
		{"the program printed panic: itself", gorun.Result{Output: "panic: fake\nb\npanic: real\n" + panicTrailer, ExitCode: 2},
			Failure{Kind: "panic", Message: "real", Before: "panic: fake\nb\n"}},
		{"runtime error", gorun.Result{Output: "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x1]\n" + panicTrailer, ExitCode: 2},
			Failure{Kind: "panic", Message: "runtime error: invalid memory address or nil pointer dereference"}},
		{"repanicked", gorun.Result{Output: "panic: again [recovered, repanicked]\n" + panicTrailer, ExitCode: 2},
			Failure{Kind: "panic", Message: "again"}},
		{"fatal error", gorun.Result{Output: "fatal error: all goroutines are asleep - deadlock!\n" + panicTrailer, ExitCode: 2},
			Failure{Kind: "fatal error", Message: "all goroutines are asleep - deadlock!"}},
		{"os.Exit(2) without a crash", gorun.Result{Output: "panic: not really\n", ExitCode: 2},
			Failure{Kind: "exit", Code: 2, Before: "panic: not really\n"}},
		{"log.Fatal", gorun.Result{Output: "2026/11/25 bad\n", ExitCode: 1},
			Failure{Kind: "exit", Code: 1, Before: "2026/11/25 bad\n"}},
		{"signal", gorun.Result{Output: "x", ExitCode: -1, Status: "signal: killed"},
			Failure{Kind: "signal", Message: "signal: killed", Before: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseFailure(tt.ref); got != tt.want {
				t.Errorf("ParseFailure = %+v, want %+v", got, tt.want)
			}
		})
	}
}
