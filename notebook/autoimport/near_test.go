package autoimport

import (
	"context"
	"errors"
	"go/build"
	"reflect"
	"testing"
)

// Two modules of the session both have a package shapes with Make; a cell
// that imports other packages of one of them means that one's.
func TestResolveInPrefersTheModulesTheCellImports(t *testing.T) {
	dir := t.TempDir()
	ml := writeModule(t, dir, "example.com/ml", map[string]string{
		"pkg/core/shapes/s.go": "package shapes\n\nfunc Make() {}\n",
		"pkg/core/dtypes/d.go": "package dtypes\n\nconst F = 1\n",
	})
	xla := writeModule(t, dir, "example.com/xla", map[string]string{
		"types/shapes/s.go": "package shapes\n\nfunc Make() {}\n",
	})
	loaded := map[string]bool{"example.com/ml": true, "example.com/xla": true}
	r := &Resolver{
		GoRoot:  build.Default.GOROOT,
		Modules: func(context.Context) ([]Module, error) { return []Module{ml, xla}, nil },
		Loaded:  func() map[string]bool { return loaded },
	}
	ctx := context.Background()
	src := "%env X=1\nimport (\n\t\"fmt\"\n\td \"example.com/ml/pkg/core/dtypes\"\n)\n\n%%\nfmt.Println(shapes.Make(), d.F)\n"
	if got, err := r.ResolveIn(ctx, "shapes", src); got != "example.com/ml/pkg/core/shapes" || err != nil {
		t.Errorf("ResolveIn(shapes) = %q, %v; want example.com/ml/pkg/core/shapes", got, err)
	}
	// A cell that imports from neither: still an error listing both.
	var amb *AmbiguousError
	if _, err := r.ResolveIn(ctx, "shapes", "import \"fmt\"\n%%\nfmt.Println(shapes.Make())\n"); !errors.As(err, &amb) || len(amb.Candidates) != 2 {
		t.Errorf("ResolveIn(shapes) without the module's imports: %v; want an AmbiguousError with 2 candidates", err)
	}
	// A cell that imports from both: still an error.
	both := "import . \"example.com/ml/pkg/core/dtypes\"\nimport _ \"example.com/xla/other\"\n"
	if _, err := r.ResolveIn(ctx, "shapes", both+"var x = shapes.Make\n"); !errors.As(err, &amb) {
		t.Errorf("ResolveIn(shapes) importing from both modules: %v; want an AmbiguousError", err)
	}
}

func TestImports(t *testing.T) {
	src := "!*go work init\nimport \"a\"\nimport b \"b/c\"\nimport (\n\t. \"d\"\n\t_ \"e/f\" // blank\n)\n%%\nx := \"import\"\nfunc f() { import_ := 1 }\n"
	if got, want := Imports(src), []string{"a", "b/c", "d", "e/f"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Imports = %q, want %q", got, want)
	}
}
