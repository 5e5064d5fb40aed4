package cbuild

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

func needCompiler(t *testing.T) {
	t.Helper()
	if _, err := compiler(); err != nil {
		t.Skip(err)
	}
}

func TestShimBuildsOnceAndExportsOnlyWhatItShould(t *testing.T) {
	needCompiler(t)
	t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
	ctx := context.Background()
	// Concurrent first uses agree on one cached build.
	var wg sync.WaitGroup
	paths := make([]string, 3)
	errs := make([]error, 3)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = Shim(ctx)
		}()
	}
	wg.Wait()
	for i := range paths {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if paths[i] != paths[0] {
			t.Fatalf("concurrent builds gave %q and %q", paths[0], paths[i])
		}
	}
	st, err := os.Stat(filepath.Dir(paths[0]))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v, want 0700", st.Mode().Perm())
	}
	f, err := elf.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
			exported[s.Name] = true
		}
	}
	want := map[string]bool{"dlsym": true, "InitializeInjectionNvtx2": true, "cuGetProcAddress": true,
		"cuGetProcAddress_v2": true, "cuprof_active": true, "cuprof_now": true, "cuprof_intern": true,
		"cuprof_span": true, "cuprof_last_call_end": true, "cuprof_calibrate": true}
	for _, a := range trace.APIs() {
		for _, s := range a.Info().Symbols {
			want[s] = true
		}
	}
	var missing, extra []string
	for s := range want {
		if !exported[s] {
			missing = append(missing, s)
		}
	}
	for s := range exported {
		if !want[s] {
			extra = append(extra, s)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("shim exports: missing %v, unexpected %v", missing, extra)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(paths[0]), CalibratorName)); err != nil {
		t.Errorf("calibrator not built: %v", err)
	}
}

func TestSimDriver(t *testing.T) {
	needCompiler(t)
	t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
	dir, err := SimDriver(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"libcuda.so.1", "libcuda.so"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Error(err)
		}
	}
	again, err := SimDriver(context.Background())
	if err != nil || again != dir {
		t.Errorf("second SimDriver = %q, %v; want cached %q", again, err, dir)
	}
}

func TestNoCompiler(t *testing.T) {
	t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
	t.Setenv("CC", "/nonexistent/cc")
	_, err := Shim(context.Background())
	if !errors.Is(err, ErrNoCompiler) {
		t.Fatalf("Shim with CC missing: %v, want ErrNoCompiler", err)
	}
	if !strings.Contains(err.Error(), "install gcc or set CC") {
		t.Errorf("error %q does not say how to fix it", err)
	}
}
