package report

import "testing"

func TestLineDiff(t *testing.T) {
	tests := []struct {
		name, a, b, want string
	}{
		{"equal", "x\ny\n", "x\ny\n", "  … 2 unchanged lines\n"},
		{"changed line", "a\nb\nc\n", "a\nB\nc\n", "  a\n- b\n+ B\n  c\n"},
		{"missing newline", "a\n", "a", "- a\n+ a  ⏎ missing\n"},
		{"added", "", "new\n", "+ new\n"},
		{"elided", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\n5\n6\n7\n8\nX\n",
			"  … 5 unchanged lines\n  6\n  7\n  8\n- 9\n+ X\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LineDiff(tt.a, tt.b); got != tt.want {
				t.Errorf("LineDiff(%q, %q) =\n%s\nwant\n%s", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestLineDiffTooLong(t *testing.T) {
	big := func(last string) string {
		b := make([]byte, 0, 6000*2)
		for range 3000 {
			b = append(b, "x\n"...)
		}
		return string(b) + last
	}
	got := LineDiff(big("a\n"), big("b\n"))
	want := "  … 3000 equal lines; 3001 lines against 3001, too long to diff; first difference:\n- a\n+ b\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
