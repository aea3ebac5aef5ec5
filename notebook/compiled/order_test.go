package compiled

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/notebook/shlib/modreg"
)

// The plugin of the cell loaded last is the first the runtime meets when it
// looks code up by address (each frame of a stack it grows, scans or
// prints), and reflection still finds the types code binds to: a session's
// hundredth cell unwinds its stack as fast as its first.
func TestNewestCellIsFirstInTheModuleList(t *testing.T) {
	s := newSession(t)
	runCell(t, s, 1, "import \"reflect\"\ntype T struct{ A int }\nvar ts = []T{{1}}\nvar pt = &T{2}\nvar m = map[string]T{}")
	runCell(t, s, 2, "func mk() ([]T, *T, map[string]T, chan T) { return []T{{3}}, &T{4}, map[string]T{\"a\": {5}}, make(chan T) }")
	r3 := runCell(t, s, 3, "func deep(n int) int {\n\tvar pad [128]byte\n\tif n == 0 {\n\t\treturn int(pad[1])\n\t}\n\treturn deep(n-1) + int(pad[n%128])\n}\ndeep(100000)")
	if got := value(t, r3); got != "0" {
		t.Fatalf("deep(100000) = %s", got)
	}
	plugins := modreg.Plugins()
	if plugins == nil {
		t.Fatal("modreg does not know this toolchain's runtime layout: cells' plugins are not reordered")
	}
	if len(plugins) < 3 {
		t.Fatalf("plugins in the module list: %q", plugins)
	}
	// Each cell's plugin path names its package (cell[N] → its path).
	r4 := runCell(t, s, 4, "type probe struct{}\nreflect.TypeOf(probe{}).PkgPath()")
	pkg := strings.Trim(value(t, r4), "\"")
	if plugins = modreg.Plugins(); plugins[0] != pkg {
		t.Fatalf("the newest cell's plugin (%s) is not first: %q", pkg, plugins[:3])
	}
	// Types made by reflection are the ones the cells' code uses.
	got := value(t, runCell(t, s, 5, `func same() []bool {
	s, p, mp, c := mk()
	tt := reflect.TypeOf(T{})
	_, okNew := reflect.New(tt).Interface().(*T)
	_, okSlice := reflect.MakeSlice(reflect.SliceOf(tt), 1, 1).Interface().([]T)
	return []bool{
		reflect.SliceOf(tt) == reflect.TypeOf(s), reflect.SliceOf(tt) == reflect.TypeOf(ts),
		reflect.PointerTo(tt) == reflect.TypeOf(p), reflect.PointerTo(tt) == reflect.TypeOf(pt),
		reflect.MapOf(reflect.TypeOf(""), tt) == reflect.TypeOf(mp), reflect.MapOf(reflect.TypeOf(""), tt) == reflect.TypeOf(m),
		reflect.ChanOf(reflect.BothDir, tt) == reflect.TypeOf(c), okNew, okSlice,
	}
}
same()`))
	if got != "[true true true true true true true true true]" {
		t.Fatalf("reflection's types against the code's: %s", got)
	}
}
