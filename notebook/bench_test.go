package notebook

import (
	"testing"
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
