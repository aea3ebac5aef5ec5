package fidelity

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/fidelity/cellrun"
	"github.com/goaccel/goaccel/fidelity/gorun"
	"github.com/goaccel/goaccel/fidelity/report"
)

// Judge decides whether the cell behaved as `go run` did (see the package
// documentation for the definition of a match). nondeterministic programs
// are not compared by output. Judge returns the category and, unless the
// program passed, one line saying why.
func Judge(ref gorun.Result, cell cellrun.Outcome, nondeterministic bool) (report.Category, string) {
	switch {
	case ref.BuildFailed:
		return report.NotApplicable, "go build failed: " + firstLine(ref.BuildOutput)
	case ref.TimedOut:
		return report.NotApplicable, "go run did not end within the timeout"
	case cell.TimedOut:
		return report.Hang, "the cell did not end within the timeout"
	case cell.Died():
		return report.Death, deathCause(cell)
	}
	out := cell.ProgramOutput()
	if ref.ExitCode == 0 {
		if cell.Error != nil {
			return report.Error, fmt.Sprintf("the cell failed where go run succeeded: %s: %s", cell.Error.Name, firstLine(cell.Error.Value))
		}
		if nondeterministic || out == ref.Output {
			return report.Pass, ""
		}
		return report.WrongOutput, "the output differs from go run's"
	}

	f := ParseFailure(ref)
	if cell.Error == nil {
		return report.Error, fmt.Sprintf("go run failed (%s) but the cell succeeded", f)
	}
	if !f.Agrees(cell.Error) {
		return report.Error, fmt.Sprintf("go run failed with %s, the cell with %s: %s", f, cell.Error.Name, firstLine(cell.Error.Value))
	}
	if nondeterministic || out == f.Before {
		return report.Pass, ""
	}
	return report.WrongOutput, "the output before the failure differs from go run's"
}

// Failure is how a program run by go run failed.
type Failure struct {
	// Kind is "panic" (Go's runtime printed "panic: ..." and a stack),
	// "fatal error" (the runtime's "fatal error: ..."), "exit" (os.Exit,
	// log.Fatal: a non-zero status and no crash report) or "signal".
	Kind string
	// Message is the last panic's or the fatal error's message, first line,
	// without " [recovered]" marks; for "signal", the status.
	Message string
	Code    int // the exit status ("exit" only)
	// Before is the output before the runtime's crash report; for "exit"
	// and "signal", all of the output.
	Before string
}

func (f Failure) String() string {
	switch f.Kind {
	case "exit":
		return fmt.Sprintf("exit status %d", f.Code)
	case "signal":
		return f.Message
	}
	return fmt.Sprintf("%s: %s", f.Kind, f.Message)
}

// crashStart finds the line that starts the Go runtime's crash report.
var crashStart = regexp.MustCompile(`(?m)^(panic|fatal error): `)

// recoveredMark is what the runtime appends to a panic that was recovered
// and raised again.
var recoveredMark = regexp.MustCompile(` \[recovered(, repanicked)?\]$`)

// ParseFailure reads how a failed reference run failed.
func ParseFailure(ref gorun.Result) Failure {
	if ref.ExitCode < 0 {
		return Failure{Kind: "signal", Message: ref.Status, Before: ref.Output}
	}
	if ref.ExitCode == 2 {
		// The crash report starts at the last "panic: " or "fatal error: "
		// at the start of a line that goroutine stacks or a signal line
		// follow; earlier such lines may be the program's own output.
		// (Nested panics continue the report as "\tpanic: " lines.)
		locs := crashStart.FindAllStringIndex(ref.Output, -1)
		for i := len(locs) - 1; i >= 0; i-- {
			start := locs[i][0]
			rest := ref.Output[start:]
			if !strings.Contains(rest, "\ngoroutine ") && !strings.Contains(rest, "\n[signal ") {
				continue
			}
			return crashFailure(ref.Output, start)
		}
	}
	return Failure{Kind: "exit", Code: ref.ExitCode, Before: ref.Output}
}

func crashFailure(out string, start int) Failure {
	f := Failure{Before: out[:start]}
	report := out[start:]
	head, _, _ := strings.Cut(report, "\n\n") // the messages, before the stacks
	lines := strings.Split(head, "\n")
	kind, msg, _ := strings.Cut(lines[0], ": ")
	f.Kind, f.Message = kind, msg
	// Nested panics follow as "\tpanic: ..." lines; the last one is the
	// panic that ended the program.
	for _, l := range lines[1:] {
		if m, ok := strings.CutPrefix(l, "\tpanic: "); ok {
			f.Message = m
		}
	}
	f.Message = recoveredMark.ReplaceAllString(f.Message, "")
	if f.Message == "" {
		f.Message = kind
	}
	return f
}

// Agrees reports whether a cell's error describes this failure: the panic
// or fatal error message (first line) appears in the error's evalue or
// traceback; for an exit, the traceback or evalue mentions "exit" followed
// by the status within a few characters ("exit status 3", "os.Exit(3)",
// "Exit: 3"); for a signal, any error agrees.
func (f Failure) Agrees(e *cellrun.Error) bool {
	text := e.Text()
	switch f.Kind {
	case "exit":
		re := regexp.MustCompile(`(?i)exit[^0-9\n]{0,16}\b` + strconv.Itoa(f.Code) + `\b`)
		return re.MatchString(text)
	case "signal":
		return true
	}
	return strings.Contains(text, f.Message)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if l, _, ok := strings.Cut(s, "\n"); ok {
		return l + " …"
	}
	return s
}

// deathCause says how the child ended and, when the Go runtime reported a
// crash (on the child's own stderr, or on fd 2 while the cell's output was
// still captured), its first line.
func deathCause(cell cellrun.Outcome) string {
	cause := "the kernel exited without replying (" + cell.Status + ")"
	if strings.HasPrefix(cell.Status, "signal: ") {
		cause = "the kernel was killed (" + cell.Status + ")"
	}
	for _, text := range []string{cell.Stderr, cell.Output()} {
		if locs := crashStart.FindAllStringIndex(text, -1); locs != nil {
			line, _, _ := strings.Cut(text[locs[len(locs)-1][0]:], "\n")
			return cause + ": " + line
		}
	}
	// A stack overflow prints its "fatal error" line to fd 2 only, which the
	// engine captured; the crash report copied to the child's stderr starts
	// with the runtime's own stack.
	if strings.Contains(cell.Stderr, "runtime.morestack") {
		return cause + ": stack overflow (runtime.morestack in the crash report)"
	}
	if s := strings.TrimSpace(cell.Stderr); s != "" {
		cause += ": " + firstLine(s)
	}
	return cause
}
