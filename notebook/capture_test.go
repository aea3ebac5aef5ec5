//go:build unix

package notebook

import (
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/notebook/fdcapture"
)

// TestCaptureOSStdout checks that writes to os.Stdout / os.Stderr (fds 1
// and 2, which yaegi's writers do not see) reach the running cell.
func TestCaptureOSStdout(t *testing.T) {
	c, err := fdcapture.Redirect()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Restore()
	e, err := New(Options{Capture: c})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	io := &fakeIO{}
	r := runIO(t, e, "import (\"fmt\"; \"os\"; \"time\")\nos.Stdout.WriteString(\"fd1 write\\n\")\nfmt.Fprintln(os.Stderr, \"fd2 write\")\ntime.Sleep(100 * time.Millisecond)", io)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) && !(strings.Contains(io.text("stdout"), "fd1 write") && strings.Contains(io.text("stderr"), "fd2 write")) {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(io.text("stdout"), "fd1 write") || !strings.Contains(io.text("stderr"), "fd2 write") {
		t.Errorf("stdout %q stderr %q", io.text("stdout"), io.text("stderr"))
	}
}
