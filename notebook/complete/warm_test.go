package complete

import (
	"os"
	"testing"
)

// TestMain warms the type checker's importers with the packages the tests
// complete and inspect. A type check waits at most checkTimeout for them (a
// cold import builds export data, which a busy machine may take longer to
// do) and then answers without types; the tests are about the answers with
// types, so they must not depend on how fast the first import is.
func TestMain(m *testing.M) {
	typesCache.Lock()
	for _, path := range []string{"fmt", "strings", "os", "slices", "net/http"} {
		_, _ = cachedImporter{}.Import(path)
	}
	typesCache.Unlock()
	os.Exit(m.Run())
}
