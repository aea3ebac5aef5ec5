package notebook

import (
	"strings"
	"testing"
)

// A blank variable's declared type is what the declaration is for
// (var _ io.Reader = &T{} asserts that *T implements io.Reader): its
// package is used, and the assertion holds as in Go.
func TestBlankVariablesKeepTheirType(t *testing.T) {
	e := newEngine(t)
	mustRun(t, e, `import "io"

type blankReader struct{ name string }

var (
	// *blankReader implements io.Reader.
	_ io.Reader = &blankReader{}
)

func (r *blankReader) Read(p []byte) (int, error) { return len(r.name), nil }`)
	mustRun(t, e, `import "fmt"

var _ fmt.Stringer`)
	_, out := mustRun(t, e, `%%
n, err := (&blankReader{"x"}).Read(nil)
fmt.Println(n, err)`)
	if got := out.text("stdout"); got != "1 <nil>\n" {
		t.Errorf("stdout = %q, want %q", got, "1 <nil>\n")
	}
	r, _ := run(t, e, `import "io"

var _ io.Writer = &blankReader{}`)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "Write") {
		t.Errorf("a type that does not implement the interface: err = %v, want one naming the missing method Write", r.Err)
	}
}
