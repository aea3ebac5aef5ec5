package accelerate

import (
	"fmt"
	"testing"
)

func TestSplitRange(t *testing.T) {
	cases := []struct {
		n, procs int
		want     string // ranges per process
	}{
		{0, 3, "[0 0] [0 0] [0 0]"},
		{1, 1, "[0 1]"},
		{10, 1, "[0 10]"},
		{10, 2, "[0 5] [5 10]"},
		{10, 3, "[0 4] [4 7] [7 10]"},
		{11, 4, "[0 3] [3 6] [6 9] [9 11]"},
		{2, 3, "[0 1] [1 2] [2 2]"},
		{5, 8, "[0 1] [1 2] [2 3] [3 4] [4 5] [5 5] [5 5] [5 5]"},
	}
	for _, c := range cases {
		got := ""
		covered := 0
		for i := 0; i < c.procs; i++ {
			s, e := splitRange(c.n, c.procs, i)
			if s != covered && e > s {
				t.Errorf("n=%d procs=%d: process %d starts at %d, want %d", c.n, c.procs, i, s, covered)
			}
			covered = e
			if i > 0 {
				got += " "
			}
			got += fmt.Sprint([]int{s, e})
		}
		if got != c.want {
			t.Errorf("n=%d procs=%d: %s, want %s", c.n, c.procs, got, c.want)
		}
	}
}

func TestSplitIndicesPadding(t *testing.T) {
	cases := []struct {
		n, procs int
		pad      bool
		want     string
	}{
		{7, 3, false, "[0 1 2] [3 4] [5 6]"},
		{7, 3, true, "[0 1 2] [3 4 4] [5 6 6]"},
		{2, 3, false, "[0] [1] []"},
		{2, 3, true, "[0] [1] [1]"}, // as Accelerate: the idle process repeats the last item
		{0, 2, true, "[] []"},
		{6, 3, true, "[0 1] [2 3] [4 5]"},
	}
	for _, c := range cases {
		got := ""
		for i := 0; i < c.procs; i++ {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprint(splitIndices(c.n, c.procs, i, c.pad))
		}
		if got != c.want {
			t.Errorf("n=%d procs=%d pad=%v: %s, want %s", c.n, c.procs, c.pad, got, c.want)
		}
	}
}

func TestSplitHelpers(t *testing.T) {
	a := &Accelerator{st: &processState{env: launchEnv{rank: 1, worldSize: 2, localWorldSize: 2, localRank: 1}}}
	if s, e := a.SplitBetweenProcesses(5); s != 3 || e != 5 {
		t.Fatalf("SplitBetweenProcesses(5) = %d, %d", s, e)
	}
	if got := a.SplitStrings([]string{"a", "b", "c"}, true); fmt.Sprint(got) != "[c c]" {
		t.Fatalf("SplitStrings = %v", got)
	}
	if got := a.SplitInts([]int{1, 2, 3, 4}, false); fmt.Sprint(got) != "[3 4]" {
		t.Fatalf("SplitInts = %v", got)
	}
	if got := a.SplitFloat64s([]float64{1, 2, 3}, false); fmt.Sprint(got) != "[3]" {
		t.Fatalf("SplitFloat64s = %v", got)
	}
	if got := a.SplitAny([]any{"x", 2, 3.5}, false); fmt.Sprint(got) != "[3.5]" {
		t.Fatalf("SplitAny = %v", got)
	}
	if got := Split(a, []byte("hello"), false); string(got) != "lo" {
		t.Fatalf("Split = %q", got)
	}
}
