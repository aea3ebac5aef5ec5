package kernel

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func inputs(es []histEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Input)
	}
	return out
}

func TestHistoryPersistsAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "history.jsonl")
	h, warn, err := openHistory(path)
	if err != nil || len(warn) != 0 {
		t.Fatal(err, warn)
	}
	if h.currentSession() != 1 {
		t.Errorf("first session %d", h.currentSession())
	}
	out := "2"
	for i, in := range []string{"a := 1", "a + 1", "fmt.Println(a)"} {
		var o *string
		if i == 1 {
			o = &out
		}
		if err := h.add(i+1, in, o); err != nil {
			t.Fatal(err)
		}
	}
	// A session with no cells still takes a number.
	if _, _, err := openHistory(path); err != nil {
		t.Fatal(err)
	}
	h2, _, err := openHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if h2.currentSession() != 3 {
		t.Errorf("third open: session %d, want 3", h2.currentSession())
	}
	h2.add(1, "b := 2", nil)
	if got := inputs(h2.tail(2, false)); !reflect.DeepEqual(got, []string{"fmt.Println(a)", "b := 2"}) {
		t.Errorf("tail across sessions %q", got)
	}
	if got := h2.rangeOf(1, 2, 3); len(got) != 1 || got[0].Input != "a + 1" || got[0].Session != 1 || got[0].Line != 2 || *got[0].Output != "2" {
		t.Errorf("range session 1 [2,3): %+v", got)
	}
	if got := inputs(h2.rangeOf(-2, 1, 0)); !reflect.DeepEqual(got, []string{"a := 1", "a + 1", "fmt.Println(a)"}) {
		t.Errorf("range relative session -2: %q", got)
	}
	if got := inputs(h2.rangeOf(0, 0, 0)); !reflect.DeepEqual(got, []string{"b := 2"}) {
		t.Errorf("range current session: %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode: %v %v", fi.Mode(), err)
	}
}

func TestHistorySearchUniqueN(t *testing.T) {
	h, _, _ := openHistory("")
	for i, in := range []string{"x := 1", "print(x)", "x := 1", "y := x", "x := 1", "print(y)"} {
		h.add(i+1, in, nil)
	}
	if got := inputs(h.search("x*", 0, false)); !reflect.DeepEqual(got, []string{"x := 1", "x := 1", "x := 1"}) {
		t.Errorf("search x*: %q", got)
	}
	if got := h.search("x*", 0, true); len(got) != 1 || got[0].Line != 5 {
		t.Errorf("unique keeps the latest: %+v", got)
	}
	if got := inputs(h.search("*x*", 2, false)); !reflect.DeepEqual(got, []string{"y := x", "x := 1"}) {
		t.Errorf("search n=2: %q", got)
	}
	if got := inputs(h.search("print(?)", 0, false)); len(got) != 2 {
		t.Errorf("? wildcard: %q", got)
	}
	if got := inputs(h.search("", 0, true)); len(got) != 4 {
		t.Errorf("empty pattern = *: %q", got)
	}
	if got := inputs(h.tail(3, true)); !reflect.DeepEqual(got, []string{"y := x", "x := 1", "print(y)"}) {
		t.Errorf("tail unique: %q", got)
	}
	if got := h.tail(0, false); len(got) != 6 {
		t.Errorf("tail n=0 returns all: %d", len(got))
	}
}

func TestHistorySkipsCorruptLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	os.WriteFile(path, []byte("{\"session\":4,\"line\":1,\"input\":\"ok\"}\nnot json\n{\"session\":0}\n"), 0o600)
	h, warn, err := openHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(warn) != 2 || h.currentSession() != 5 || len(h.tail(0, false)) != 1 {
		t.Errorf("warnings %v session %d", warn, h.currentSession())
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true},
		{"*", "a/b\nc", true},
		{"a*", "abc", true},
		{"a*", "bac", false},
		{"*c", "abc", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"[ab]x", "bx", true},
		{"[!ab]x", "bx", false},
		{"[!ab]x", "cx", true},
		{"[a-c]", "b", true},
		{"[a-c]", "d", false},
		{"[]]", "]", true},
		{"[", "[", true},
		{"a[", "a[", true},
		{"ABC", "abc", false},
		{"*fmt.Print*", "x := 1\nfmt.Println(x)", true},
		{"héllo*", "héllo wörld", true},
		{"h?llo", "héllo", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
	} {
		if got := globMatch(tc.pat, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}

func TestDefaultHistoryPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/xdg")
	if p, _ := DefaultHistoryPath(); p != "/xdg/goaccel/history.jsonl" {
		t.Errorf("with XDG_DATA_HOME: %s", p)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultHistoryPath(); p != "/home/u/.local/share/goaccel/history.jsonl" {
		t.Errorf("without XDG_DATA_HOME: %s", p)
	}
}

// currentSession is the session number this history appends to.
func (h *history) currentSession() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.session
}
