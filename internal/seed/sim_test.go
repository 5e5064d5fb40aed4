package seed

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/cuprof/cuprof/cudawrap"
	"github.com/cuprof/cuprof/cudawrap/sim"
)

// useSim builds the simulated driver (skipping the test without a C compiler),
// turns its costs off and sets CUPROF_LIBCUDA for cudawrap.Open.
func useSim(t *testing.T) string {
	t.Helper()
	dir, err := sim.Driver(context.Background())
	if err != nil {
		t.Skipf("simulated driver unavailable: %v", err)
	}
	lib := filepath.Join(dir, "libcuda.so.1")
	t.Setenv(cudawrap.LibraryEnv, lib)
	t.Setenv("CUPROF_SIM_COST_SCALE", "0")
	return lib
}

var times = regexp.MustCompile(` +[0-9]+\.[0-9]+us`)

// mask replaces the times in an example's output (and the library path) so
// that it can be compared with a golden file.
func mask(out []byte, lib string) []byte {
	out = regexp.MustCompile(regexp.QuoteMeta(lib)).ReplaceAll(out, []byte("LIB"))
	return times.ReplaceAll(out, []byte(" T"))
}

// golden compares got with testdata/name, rewriting it when update is set.
func golden(t *testing.T, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (run with -update to accept):\n--- want\n%s--- got\n%s", path, want, got)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files")
