package notebook

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkExecuteTrivial is the engine's share of a trivial cell's round
// trip (the kernel adds the protocol's).
func BenchmarkExecuteTrivial(b *testing.B) {
	e := newEngine(b)
	mustRun(b, e, "1")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, _ := run(b, e, "1")
		if rep.Err != nil || rep.Result["text/plain"] != "1" {
			b.Fatalf("reply %+v", rep)
		}
	}
}

// BenchmarkExecuteStatement is a cell without a result.
func BenchmarkExecuteStatement(b *testing.B) {
	e := newEngine(b)
	mustRun(b, e, "x := 0")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rep, _ := run(b, e, "x++"); rep.Err != nil {
			b.Fatal(rep.Err)
		}
	}
}

// BenchmarkExecuteExpression is a trivial expression cell of a session
// variable, new each time (`x + 1`, `x + 2`, ...: checked, evaluated
// without a build, shown). The target is 1 ms.
func BenchmarkExecuteExpression(b *testing.B) {
	benchExpression(b, Options{}, true)
}

// BenchmarkExecuteExpressionAgain runs the same `x + 1` again and again
// (the checked program is run again).
func BenchmarkExecuteExpressionAgain(b *testing.B) {
	benchExpression(b, Options{}, false)
}

// BenchmarkExecuteExpressionBuilt is BenchmarkExecuteExpression with every
// cell built by the toolchain (the path before the evaluator; cells found
// in the build cache are only loaded).
func BenchmarkExecuteExpressionBuilt(b *testing.B) {
	benchExpression(b, Options{AlwaysBuild: true}, true)
}

func benchExpression(b *testing.B, opts Options, fresh bool) {
	e := newEngineWith(b, opts)
	mustRun(b, e, "x := 1")
	// A start that no earlier run left in the build cache.
	base := time.Now().UnixNano() % 1_000_000_000
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		code, want := "x + 1", "2"
		if fresh {
			n := base + int64(i)
			code, want = "x + "+strconv.FormatInt(n, 10), strconv.FormatInt(n+1, 10)
		}
		rep, _ := run(b, e, code)
		if rep.Err != nil || rep.Result["text/plain"] != want {
			b.Fatalf("%s: reply %+v", code, rep)
		}
	}
}
