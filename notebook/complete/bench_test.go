package complete

import (
	"slices"
	"testing"
)

// forget drops path from the API cache so that the next load is cold.
func forget(path string) {
	apiCache.Lock()
	delete(apiCache.m, path)
	apiCache.Unlock()
}

func benchComplete(b *testing.B, code, want string, cold func()) {
	for i := 0; i < b.N; i++ {
		if cold != nil {
			b.StopTimer()
			cold()
			b.StartTimer()
		}
		got := Complete(code, len([]rune(code)), testScope)
		if !slices.Contains(got.Matches, want) {
			b.Fatalf("%q: no %q in %q", code, want, got.Matches)
		}
	}
}

func BenchmarkCompleteStringsCold(b *testing.B) {
	benchComplete(b, "strings.", "Split", func() { forget("strings") })
}

func BenchmarkCompleteStringsWarm(b *testing.B) {
	benchComplete(b, "strings.", "Split", nil)
}

func BenchmarkCompleteNetHTTPCold(b *testing.B) {
	benchComplete(b, "http.", "Get", func() { forget("net/http") })
}

func BenchmarkCompleteNetHTTPWarm(b *testing.B) {
	benchComplete(b, "http.", "Get", nil)
}

func BenchmarkCompleteIdent(b *testing.B) {
	benchComplete(b, "x := 1\nfm", "fmt", nil)
}

// BenchmarkCompleteVarMember type-checks the cell (importers warm).
func BenchmarkCompleteVarMember(b *testing.B) {
	benchComplete(b, "r := strings.NewReader(\"x\")\nr.Re", "ReadRune", nil)
}

func BenchmarkInspect(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if r := Inspect("fmt.Println(", 12, 0, testScope); !r.Found {
			b.Fatal("not found")
		}
	}
}

func BenchmarkInspectCellVar(b *testing.B) {
	code := "r := strings.NewReader(\"x\")\nr"
	for i := 0; i < b.N; i++ {
		if r := Inspect(code, len(code), 0, testScope); !r.Found {
			b.Fatal("not found")
		}
	}
}

func BenchmarkIsComplete(b *testing.B) {
	code := "func f() {\n\tfor i := 0; i < 3; i++ {\n\t\tfmt.Println(i)\n\t}\n}\nf()"
	for i := 0; i < b.N; i++ {
		if s, _ := IsComplete(code); s != "complete" {
			b.Fatal(s)
		}
	}
}
