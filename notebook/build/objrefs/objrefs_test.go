package objrefs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildArchive compiles a package of src with the Go toolchain and
// returns its archive's contents.
func buildArchive(t *testing.T, src string, flags ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"go.mod": "module example.com/p\n\ngo 1.22\n", "p.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "p.a")
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", out, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const source = `package p

import (
	"strconv"
	"strings"
)

var Upper = strings.ToUpper

func Parse(s string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(s), 64) }
`

func TestReadsWhatAnObjectRefersTo(t *testing.T) {
	refs, err := Parse(buildArchive(t, source))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"strings", "strconv"} {
		if !slices.Contains(refs.Imports, p) {
			t.Errorf("imports %v: no %s", refs.Imports, p)
		}
	}
	for _, n := range []string{"strings.ToUpper", "strings.TrimSpace", "strconv.ParseFloat"} {
		if !slices.Contains(refs.Names, n) {
			t.Errorf("names %v: no %s", refs.Names, n)
		}
	}
	if slices.Contains(refs.Names, "example.com/p.Parse") {
		t.Error("a symbol the package defines is listed as a reference")
	}
}

func TestRefusesWhatIsNotAnArchiveOfThisFormat(t *testing.T) {
	good := buildArchive(t, source)
	i := bytes.Index(good, []byte(objMagic))
	if i < 0 {
		t.Fatal("no object in the archive")
	}
	for name, data := range map[string][]byte{
		"not an archive":        []byte("package p\n"),
		"another object format": bytes.Replace(good, []byte(objMagic), []byte("\x00go999ld"), 1),
		"truncated":             good[:i+20],
		"bad member size":       append([]byte(archiveMagic), bytes.Repeat([]byte{'9'}, memberHeader)...),
	} {
		if _, err := Parse(data); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.TrimSpace(err.Error()) == "" {
			t.Errorf("%s: an empty error", name)
		}
	}
}
