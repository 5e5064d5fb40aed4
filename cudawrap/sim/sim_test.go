package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtLib  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildOrSkip builds the simulated driver once per test run (the compile
// takes seconds on a loaded machine).
func buildOrSkip(t *testing.T) string {
	t.Helper()
	if _, err := Compiler(); errors.Is(err, ErrNoCompiler) {
		t.Skip("no C compiler (gcc or $CC): the simulated driver cannot be built")
	}
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "cuprof-sim-test-"); buildErr != nil {
			return
		}
		builtLib, buildErr = Build(context.Background(), buildDir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtLib
}

func TestBuildExportsEveryVariant(t *testing.T) {
	lib := buildOrSkip(t)
	nm, err := exec.LookPath("nm")
	if err != nil {
		t.Skip("no nm")
	}
	out, err := exec.Command(nm, "-D", "--defined-only", lib).Output()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			exported[f[2]] = true
		}
	}
	apis, err := fs.ReadFile(Sources, "cuprof_apis.h")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(apis), "\n") {
		line = strings.TrimSpace(line)
		// Symbol rows have a parameter list; the cost and lookup rows
		// (CUPROF_COSTS, CUPROF_PROCS) do not.
		if !strings.HasPrefix(line, "X(") || !strings.Contains(line, ", (") {
			continue
		}
		sym := strings.TrimPrefix(line[:strings.Index(line, ",")], "X(")
		n++
		if !exported[sym] {
			t.Errorf("%s is not exported", sym)
		}
	}
	for _, sym := range []string{"cuGetProcAddress", "cuGetProcAddress_v2"} {
		if !exported[sym] {
			t.Errorf("%s is not exported", sym)
		}
	}
	if n < 100 {
		t.Errorf("found only %d symbols in cuprof_apis.h", n)
	}
	for sym := range exported {
		if !strings.HasPrefix(sym, "cu") {
			t.Errorf("unexpected export %s", sym)
		}
	}
}

// runSimTest compiles testdata/simtest.c against the library and runs it.
func runSimTest(t *testing.T, lib string, env ...string) string {
	t.Helper()
	return runSimProgram(t, lib, "simtest", env...)
}

// runSimProgram compiles testdata/NAME.c against the library and runs it:
// it must print "checks passed" and exit 0.
func runSimProgram(t *testing.T, lib, name string, env ...string) string {
	t.Helper()
	dir := filepath.Dir(lib)
	cc, _ := Compiler()
	exe := filepath.Join(t.TempDir(), name)
	src, err := filepath.Abs(filepath.Join("testdata", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	inc := t.TempDir()
	if err := WriteSources(inc); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(cc, "-O1", "-Wall", "-I", inc, "-o", exe, src, "-L", dir, "-lcuda", "-ldl", "-pthread",
		"-Wl,-rpath,"+dir)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("compile %s: %v\n%s", name, err, out)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "CUPROF_SIM_DEVICES=2", "CUPROF_SIM_MEM_BYTES=1073741824")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	if !strings.Contains(string(out), "checks passed") {
		t.Fatalf("%s said:\n%s", name, out)
	}
	return string(out)
}

func TestSimulatedDriver(t *testing.T) {
	lib := buildOrSkip(t)
	t.Run("no costs", func(t *testing.T) {
		t.Log(runSimTest(t, lib, "CUPROF_SIM_COST_SCALE=0"))
	})
	t.Run("default costs", func(t *testing.T) {
		runSimTest(t, lib)
	})
	t.Run("custom costs", func(t *testing.T) {
		runSimTest(t, lib, "CUPROF_SIM_COSTS=cuCtxSynchronize=900,poolRelease=1000,cuGetProcAddress=5", "CUPROF_SIM_COST_SCALE=0.5")
	})
}

// TestSimulatedFamilies runs testdata/simfamilies.c: stream capture and
// graph replay and update, virtual memory (create, reserve, map, access,
// unmap, release, with the deferred free of a handle released while
// mapped), libraries, kernels and their functions, module globals and
// occupancy, and cuGetProcAddress at these families' versions.
func TestSimulatedFamilies(t *testing.T) {
	lib := buildOrSkip(t)
	t.Run("no costs", func(t *testing.T) {
		t.Log(runSimProgram(t, lib, "simfamilies", "CUPROF_SIM_COST_SCALE=0"))
	})
	t.Run("default costs", func(t *testing.T) {
		runSimProgram(t, lib, "simfamilies")
	})
	t.Run("custom costs", func(t *testing.T) {
		runSimProgram(t, lib, "simfamilies", "CUPROF_SIM_COSTS=cuGraphLaunch=100,graphNodeLaunch=10,cuMemUnmap=50")
	})
}

// TestSimulatedQueries runs testdata/simqueries.c: device UUIDs (the same
// in every process, different per device) and PCI ids, the attributes that
// gate the Python libraries' code paths, context, stream and pointer
// queries, peer and pool access, host functions and stream callbacks; with
// CUPROF_SIM_CALL_COUNTS, the file the driver writes at exit holds what the
// program counted it called, and without it nothing is counted.
func TestSimulatedQueries(t *testing.T) {
	lib := buildOrSkip(t)
	var uuids []string
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		out := runSimProgram(t, lib, "simqueries", "CUPROF_SIM_COST_SCALE=0", "CUPROF_SIM_CALL_COUNTS="+dir)
		files, _ := filepath.Glob(filepath.Join(dir, "sim-calls-*"))
		if len(files) != 1 {
			t.Fatalf("%d call count files in %s, want 1", len(files), dir)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", files[0], fi.Mode().Perm(), err)
		}
		counted := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				counted[f[0]] = f[1]
			} else {
				t.Errorf("call count line %q", line)
			}
		}
		n := 0
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 2 && f[0] == "uuid0":
				uuids = append(uuids, f[1])
			case len(f) == 3 && f[0] == "calls":
				n++
				if counted[f[1]] != f[2] {
					t.Errorf("the program called %s %s times, the driver's file says %q", f[1], f[2], counted[f[1]])
				}
			}
		}
		if n != 4 {
			t.Errorf("the program reported %d counts, want 4:\n%s", n, out)
		}
	}
	if len(uuids) != 2 || uuids[0] != uuids[1] {
		t.Errorf("device 0's UUID in two processes: %v, want the same", uuids)
	}
	runSimProgram(t, lib, "simqueries") // not counted, default costs
}

// BenchmarkSimCosts reports what the simulated driver's calls cost with the
// default (H200) costs, in ns per call, one metric per call or pair; compare
// with the H200 column of docs/benchmarks.md section 6.
func BenchmarkSimCosts(b *testing.B) {
	if _, err := Compiler(); errors.Is(err, ErrNoCompiler) {
		b.Skip("no C compiler")
	}
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "cuprof-sim-test-"); buildErr != nil {
			return
		}
		builtLib, buildErr = Build(context.Background(), buildDir)
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	dir := b.TempDir()
	if err := WriteSources(dir); err != nil {
		b.Fatal(err)
	}
	cc, _ := Compiler()
	exe := filepath.Join(dir, "simbench")
	src, _ := filepath.Abs(filepath.Join("testdata", "simbench.c"))
	libDir := filepath.Dir(builtLib)
	if out, err := exec.Command(cc, "-O2", "-I", dir, "-o", exe, src, "-L", libDir, "-lcuda", "-Wl,-rpath,"+libDir).CombinedOutput(); err != nil {
		b.Fatalf("compile simbench: %v\n%s", err, out)
	}
	b.ResetTimer()
	out, err := exec.Command(exe, fmt.Sprint(max(b.N, 1000))).Output()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			b.Fatalf("bad line %q", line)
		}
		b.ReportMetric(v, f[0]+"-ns")
	}
}

// FuzzCostSpec feeds CUPROF_SIM_COSTS values to the driver's parser (run in
// its constructor): whatever the value, the driver loads, initializes and
// complains only with "cuprof sim:" lines.
func FuzzCostSpec(f *testing.F) {
	for _, seed := range []string{
		"cuCtxSynchronize=900,cuStreamCreate=3000",
		"poolRelease=0,poolGrow=1e9",
		"nosuch=5", "=", ",,,", "cuInit", "cuInit=-4", "cuInit=abc", " cuCtxGetCurrent =7",
	} {
		f.Add(seed)
	}
	if _, err := Compiler(); errors.Is(err, ErrNoCompiler) {
		f.Skip("no C compiler")
	}
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "cuprof-sim-test-"); buildErr != nil {
			return
		}
		builtLib, buildErr = Build(context.Background(), buildDir)
	})
	if buildErr != nil {
		f.Fatal(buildErr)
	}
	dir := f.TempDir()
	if err := WriteSources(dir); err != nil {
		f.Fatal(err)
	}
	cc, _ := Compiler()
	exe := filepath.Join(dir, "siminit")
	src, _ := filepath.Abs(filepath.Join("testdata", "siminit.c"))
	libDir := filepath.Dir(builtLib)
	if out, err := exec.Command(cc, "-O1", "-I", dir, "-o", exe, src, "-L", libDir, "-lcuda", "-Wl,-rpath,"+libDir).CombinedOutput(); err != nil {
		f.Fatalf("compile siminit: %v\n%s", err, out)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if strings.ContainsRune(spec, 0) {
			t.Skip("environment values cannot hold NUL")
		}
		cmd := exec.Command(exe)
		cmd.Env = []string{"CUPROF_SIM_COSTS=" + spec, "CUPROF_SIM_COST_SCALE=0"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("CUPROF_SIM_COSTS=%q: %v\n%s", spec, err, stderr.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if line != "" && !strings.HasPrefix(line, "cuprof sim: ") {
				t.Errorf("CUPROF_SIM_COSTS=%q: stderr %q", spec, line)
			}
		}
	})
}
