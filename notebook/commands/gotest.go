package commands

// GoNB's %test: the session's Test and Benchmark functions run as go test
// runs a package's (package gonb runs them).

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/goaccel/goaccel/frontend"
	"github.com/goaccel/goaccel/notebook/build"
	"github.com/goaccel/goaccel/notebook/gonb"
	"github.com/goaccel/goaccel/notebook/internal/session"
)

// TestRequest is a cell's %test.
type TestRequest struct {
	args  []string
	given bool // the cell gave flags (else GoNB's defaults)
}

func testMagic(_ context.Context, _ Env, c *Cell, arg string) *frontend.Error {
	args, err := gonb.SplitArgs(arg)
	if err != nil {
		return Errorf("%%test: %v", err)
	}
	c.Test = &TestRequest{args: args, given: arg != ""}
	return nil
}

// RunTests runs the session's tests after cell c's code, when it asked
// (%test): with the flags %test gave, or GoNB's defaults (verbose, the
// tests and benchmarks the cell declared; every test when it declared
// none).
func RunTests(ctx context.Context, env Env, c *Cell) *frontend.Error {
	req := c.Test
	if req == nil {
		return nil
	}
	ts := gonb.Tests{Pkg: build.SessionModule}
	ts.Tests = map[string]func(*testing.T){}
	ts.Benchmarks = map[string]func(*testing.B){}
	var cellTests, cellBenchmarks []string
	for _, d := range env.Declarations() {
		if d.Kind != session.KindFunc {
			continue
		}
		isTest, isBench := testName(d.Name, "Test"), testName(d.Name, "Benchmark")
		if !isTest && !isBench {
			continue
		}
		res, err := env.Evaluate(ctx, d.Name)
		if err != nil {
			continue
		}
		switch f := res.(type) {
		case func(*testing.T):
			ts.Tests[d.Name] = f
			if d.Cell == c.Count {
				cellTests = append(cellTests, d.Name)
			}
		case func(*testing.B):
			ts.Benchmarks[d.Name] = f
			if d.Cell == c.Count {
				cellBenchmarks = append(cellBenchmarks, d.Name)
			}
		}
	}
	sort.Strings(cellTests)
	sort.Strings(cellBenchmarks)
	args := req.args
	if !req.given {
		args = gonb.TestArgs(cellTests, cellBenchmarks)
	}
	code, err := gonb.RunTests(ts, args)
	env.Flush()
	if err != nil {
		return Errorf("%v", err)
	}
	if ctx.Err() != nil {
		return session.ErrInterrupted()
	}
	if code != 0 {
		msg := fmt.Sprintf("%%test: FAIL (exit status %d)", code)
		return &frontend.Error{Name: "TestFailure", Value: msg, Traceback: []string{msg}}
	}
	return nil
}

// testName reports whether name is a test (prefix "Test") or benchmark
// (prefix "Benchmark") function's name as go test finds them.
func testName(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}
