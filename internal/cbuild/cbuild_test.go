package cbuild_test

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

	"github.com/cuprof/cuprof/cudawrap/shim"
	"github.com/cuprof/cuprof/cudawrap/sim"
	"github.com/cuprof/cuprof/internal/cbuild"
	"github.com/cuprof/cuprof/internal/cbuild/cbuildtest"
	"github.com/cuprof/cuprof/trace"
)

func needCompiler(t *testing.T) {
	t.Helper()
	if _, err := cbuild.Compiler(); err != nil {
		t.Skip(err)
	}
}

// The package's one real build of the shim and the simulated driver, in a
// cache of its own (TestMain): the stand-in compiler of the other tests
// copies it.
var real struct {
	once           sync.Once
	dir            string
	shim, sim, err error
	shimPath       string
	simDir         string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if real.dir != "" {
		os.RemoveAll(real.dir)
	}
	os.Exit(code)
}

// realBuild builds the shim and the simulated driver with the real
// compiler, once per test binary, and returns the shim's path and the
// driver's directory.
func realBuild(t *testing.T) (shimPath, simDir string) {
	t.Helper()
	needCompiler(t)
	real.once.Do(func() {
		if real.dir, real.err = os.MkdirTemp("", "cuprof-cbuild-test-"); real.err != nil {
			return
		}
		old, had := os.LookupEnv("CUPROF_CACHE_DIR")
		os.Setenv("CUPROF_CACHE_DIR", filepath.Join(real.dir, "cache"))
		defer func() {
			if had {
				os.Setenv("CUPROF_CACHE_DIR", old)
			} else {
				os.Unsetenv("CUPROF_CACHE_DIR")
			}
		}()
		// At once: two compilers, for the machine's cores.
		done := make(chan struct{})
		go func() {
			defer close(done)
			real.simDir, real.sim = sim.Driver(context.Background())
		}()
		real.shimPath, real.shim = shim.Library(context.Background())
		<-done
	})
	for _, err := range []error{real.err, real.shim, real.sim} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return real.shimPath, real.simDir
}

// standIn returns a stand-in compiler copying the real builds (opt as for
// cbuildtest.New), set as CC for the rest of the test.
func standIn(t *testing.T, opt cbuildtest.Options) *cbuildtest.Compiler {
	t.Helper()
	shimPath, simDir := realBuild(t)
	cc := cbuildtest.New(t, map[string]string{shim.LibraryName: shimPath,
		shim.CalibratorName: filepath.Join(filepath.Dir(shimPath), shim.CalibratorName),
		sim.Soname:          filepath.Join(simDir, sim.Soname)}, opt)
	t.Setenv("CC", cc.Path)
	return cc
}

// TestShimExportsOnlyWhatItShould checks the real build: a private cache
// entry holding the shim, which exports the driver functions of the API
// table and cuprof's own ABI and nothing else, and the calibrator.
func TestShimExportsOnlyWhatItShould(t *testing.T) {
	p, _ := realBuild(t)
	st, err := os.Stat(filepath.Dir(p))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v, want 0700", st.Mode().Perm())
	}
	f, err := elf.Open(p)
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
	want := map[string]bool{"dlsym": true, "dlerror": true, "InitializeInjectionNvtx2": true, "cuGetProcAddress": true,
		"cuGetProcAddress_v2": true, "cuprof_active": true, "cuprof_now": true, "cuprof_intern": true,
		"cuprof_span": true, "cuprof_last_call_end": true, "cuprof_calibrate": true,
		"cuprof_python_start": true, "cuprof_python_off": true,
		"cuprof_capture_start": true, "cuprof_capture_stop": true, "cuprof_capture_mode": true,
		"cuprof_pass_through": true, "cuprof_pass_through_list": true}
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
	if _, err := os.Stat(filepath.Join(filepath.Dir(p), shim.CalibratorName)); err != nil {
		t.Errorf("calibrator not built: %v", err)
	}
}

// TestConcurrentFirstBuildsAgree: three first uses of an empty cache at
// once each build (the stand-in compiler holds every build until all three
// run), and all three get the one cached build: the losers of the race to
// install theirs use the winner's.
func TestConcurrentFirstBuildsAgree(t *testing.T) {
	const n = 3
	cc := standIn(t, cbuildtest.Options{Together: n, TogetherName: shim.LibraryName})
	root := t.TempDir()
	t.Setenv("CUPROF_CACHE_DIR", root)
	ctx := context.Background()
	var wg sync.WaitGroup
	paths := make([]string, n)
	errs := make([]error, n)
	for i := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = shim.Library(ctx)
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
	if got := cc.Count(shim.LibraryName); got != n {
		t.Errorf("%d builds of the shim, want %d (one per first use, all at once)", got, n)
	}
	if !strings.HasPrefix(paths[0], root) {
		t.Errorf("shim.Library() = %s, not in the cache %s", paths[0], root)
	}
	if _, err := elf.Open(paths[0]); err != nil {
		t.Errorf("the cached shim: %v", err)
	}
	// Nothing of the losers' builds is left beside the entry.
	ents, _ := os.ReadDir(root)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("in the cache after the race: %v, want the one entry", names)
	}
	// Used now, not built again.
	if p, err := shim.Library(ctx); err != nil || p != paths[0] || cc.Count(shim.LibraryName) != n {
		t.Errorf("shim.Library() again = %q, %v after %d builds; want the cached %q", p, err, cc.Count(shim.LibraryName), paths[0])
	}
}

// TestSimDriver: the real build of the simulated driver holds libcuda.so.1
// and its libcuda.so link, and is taken from the cache the next time.
func TestSimDriver(t *testing.T) {
	_, dir := realBuild(t)
	for _, n := range []string{"libcuda.so.1", "libcuda.so"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Error(err)
		}
	}
	t.Setenv("CUPROF_CACHE_DIR", filepath.Dir(dir))
	again, err := sim.Driver(context.Background())
	if err != nil || again != dir {
		t.Errorf("second SimDriver = %q, %v; want cached %q", again, err, dir)
	}
}

func TestNoCompiler(t *testing.T) {
	t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
	t.Setenv("CC", "/nonexistent/cc")
	_, err := shim.Library(context.Background())
	if !errors.Is(err, cbuild.ErrNoCompiler) {
		t.Fatalf("Shim with CC missing: %v, want cbuild.ErrNoCompiler", err)
	}
	if !strings.Contains(err.Error(), "install gcc or set CC") {
		t.Errorf("error %q does not say how to fix it", err)
	}
}

// plant makes a cache entry for the shim with a planted libcuprof.so, as
// someone else sharing the cache could, and returns its directory.
func plant(t *testing.T, root string) string {
	t.Helper()
	cc, err := cbuild.Compiler()
	if err != nil {
		t.Skip(err)
	}
	key, err := cbuild.HashOf("shim", cc, shim.BuildFlags(), shim.Sources)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "shim-"+key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{shim.LibraryName, shim.CalibratorName} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("planted"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestUntrustedCache plants shim builds in caches others could write to
// (the issue: a shared CUPROF_CACHE_DIR of mode 0777 and another owner) and
// checks that cuprof builds its own in a private directory, says so once,
// and never returns the planted file.
func TestUntrustedCache(t *testing.T) {
	needCompiler(t)
	if os.Getuid() != 0 {
		t.Skip("needs root: the cases chown files to another user")
	}
	// The builds of the shim in private directories are the stand-in's
	// copies of the real one: what is tested is which file is used.
	standIn(t, cbuildtest.Options{})
	var warned strings.Builder
	cbuild.SetWarnOut(&warned)
	t.Cleanup(func() { cbuild.SetWarnOut(os.Stderr); cbuild.RemovePrivate(); cbuild.ResetWarned() })
	for _, tc := range []struct {
		name  string
		setup func(root, entry string) error
		want  string
	}{
		{"root mode 0777", func(root, _ string) error { return os.Chmod(root, 0o777) }, "is writable by others"},
		{"entry of another owner", func(_, entry string) error { return os.Chown(entry, 65534, 65534) }, "is owned by uid 65534"},
		{"file of another owner", func(_, entry string) error { return os.Lchown(filepath.Join(entry, shim.LibraryName), 65534, 65534) }, "is owned by uid 65534"},
		{"file writable by group", func(_, entry string) error { return os.Chmod(filepath.Join(entry, shim.LibraryName), 0o770) }, "is writable by others"},
		{"file a symlink", func(_, entry string) error {
			p := filepath.Join(entry, shim.LibraryName)
			os.Remove(p)
			return os.Symlink("/nonexistent/evil.so", p)
		}, "is a link out of its entry"},
		{"parent not sticky", func(root, _ string) error { return os.Chmod(filepath.Dir(root), 0o777) }, "not sticky"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cbuild.RemovePrivate()
			cbuild.ResetWarned()
			warned.Reset()
			root := filepath.Join(t.TempDir(), "cache")
			t.Setenv("CUPROF_CACHE_DIR", root)
			entry := plant(t, root)
			if err := tc.setup(root, entry); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				p, err := shim.Library(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(p, root) {
					t.Fatalf("shim.Library() = %s, in the untrusted cache", p)
				}
				if b, _ := os.ReadFile(p); string(b) == "planted" {
					t.Fatalf("shim.Library() returned the planted file")
				}
				if _, err := elf.Open(p); err != nil {
					t.Fatalf("shim.Library() = %s: %v", p, err)
				}
			}
			if strings.Count(warned.String(), "warning") != 1 || !strings.Contains(warned.String(), tc.want) {
				t.Errorf("warnings %q; want one saying %q", warned.String(), tc.want)
			}
			if b, _ := os.ReadFile(filepath.Join(entry, shim.LibraryName)); string(b) != "planted" && tc.name != "file a symlink" {
				t.Errorf("the untrusted entry was changed")
			}
		})
	}
}

// TestPrivateCacheTrusted checks that an ordinary private cache is used as
// it is, without a warning.
func TestPrivateCacheTrusted(t *testing.T) {
	cc := standIn(t, cbuildtest.Options{})
	var warned strings.Builder
	cbuild.SetWarnOut(&warned)
	t.Cleanup(func() { cbuild.SetWarnOut(os.Stderr) })
	root := filepath.Join(t.TempDir(), "cache")
	t.Setenv("CUPROF_CACHE_DIR", root)
	p, err := shim.Library(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p, root) || warned.Len() != 0 {
		t.Errorf("shim.Library() = %s with warnings %q; want the private cache %s, silently", p, warned.String(), root)
	}
	if n := cc.Count(shim.LibraryName); n != 1 {
		t.Errorf("%d builds of the shim into an empty cache, want 1", n)
	}
}
