package notebook

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/notebook/gonb"
)

// %wasm compiles the cell for the browser (GOOS=js GOARCH=wasm) and shows
// the page what runs it; without a Jupyter root to serve files from, the
// program travels in the page.
func TestWasmCellIsAProgramForThePage(t *testing.T) {
	t.Setenv(gonb.EnvJupyterRoot, "")
	e := newEngine(t)
	mustRun(t, e, "%goflags -ldflags=-s")
	_, io := mustRun(t, e, "%wasm\n%% -n 3\nprintln(\"hello from wasm\")")
	if len(io.displays) != 2 {
		t.Fatalf("displays: %d, want the div and the script", len(io.displays))
	}
	html, _ := io.displays[0]["text/html"].(string)
	js, _ := io.displays[1]["text/javascript"].(string)
	if !regexp.MustCompile(`^<div id="gonb_id_[0-9a-f]{8}"></div><script>`).MatchString(html) || !strings.Contains(html, "globalThis.Go") {
		t.Errorf("html: %.200q", html)
	}
	m := regexp.MustCompile(`go.argv = \["js","-n","3"\];\n\tconst bytes = Uint8Array.from\(atob\("([A-Za-z0-9+/=]+)"\)`).FindStringSubmatch(js)
	if m == nil {
		t.Fatalf("script: %.300q", js)
	}
	wasm, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil || !strings.HasPrefix(string(wasm), "\x00asm") {
		t.Errorf("the program is not WebAssembly: %v %q", err, wasm[:min(8, len(wasm))])
	}
	// A %wasm cell without func main says what it needs.
	r, _ := run(t, e, "%wasm\nx := 1")
	if r.Err == nil || !strings.Contains(r.Err.Value, "the cell has no func main") {
		t.Errorf("no main: %+v", r.Err)
	}
}
