package allocator

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	// The kernel is linked dynamically (plugins need cgo), so the dynamic
	// loader honours LD_PRELOAD; so must this test binary.
	_ "plugin"
)

const envChild = "GOACCEL_ALLOCATOR_TEST_CHILD"

// The re-executed process has tcmalloc loaded (in its memory maps) and
// runs its own code once more with the same arguments.
func TestReexecLoadsTcmalloc(t *testing.T) {
	if os.Getenv(envChild) == "1" {
		if err := Reexec(); err != nil {
			t.Fatal(err)
		}
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		if lib := Find(); lib != "" && !strings.Contains(string(maps), "libtcmalloc_minimal") {
			t.Fatalf("%s is not loaded after Reexec", lib)
		}
		return
	}
	if Find() == "" {
		t.Fatalf("no tcmalloc on this machine (libtcmalloc-minimal4: make test-deps installs it)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReexecLoadsTcmalloc$", "-test.v")
	cmd.Env = append(os.Environ(), envChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	// Off when asked.
	t.Setenv(Env, "0")
	if Find() != "" {
		t.Error("GOACCEL_TCMALLOC=0 did not turn the preload off")
	}
}

func TestPreloaded(t *testing.T) {
	t.Setenv("LD_PRELOAD", "/x/libfoo.so:/usr/lib64/libtcmalloc_minimal.so.4")
	if !Preloaded("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4") {
		t.Error("a preloaded tcmalloc elsewhere was not recognised")
	}
	t.Setenv("LD_PRELOAD", "")
	if Preloaded("/usr/lib64/libtcmalloc_minimal.so.4") {
		t.Error("an empty LD_PRELOAD holds tcmalloc")
	}
}
