package record

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// TestPythonModuleCapture installs the cuprof Python module (python/) with
// pip and runs testdata/python/capture_mod.py with it on every CPython: under cuprof
// record --capture-range=profiler-api exactly the calls inside its ranges
// are recorded, its frames only inside them, and it warns of nothing;
// without cuprof it does nothing, warns once and the program's output is
// otherwise the same.
func TestPythonModuleCapture(t *testing.T) {
	// in turn: each subtest sets PYTHONPATH
	forEachPythonInTurn(t, func(t *testing.T, py pyInterp) {
		installModule(t, py)
		bare := runBare(t, py, []string{"capture_mod.py"})
		if want := "recording False mode None start False stop False\nwarnings 1\n"; bare.stdout != want || bare.exit != 0 {
			t.Errorf("without cuprof: %q (exit %d, stderr %q), want %q", bare.stdout, bare.exit, bare.stderr, want)
		}
		r := runPython(t, py, []string{"capture_mod.py"}, WithCapture(Capture{Range: CaptureProfilerAPI}))
		if want := "recording True mode profiler-api start True stop True\nwarnings 0\n"; r.stdout != want || r.exit != 0 {
			t.Fatalf("under cuprof: %q (exit %d, stderr %q), want %q", r.stdout, r.exit, r.stderr, want)
		}
		tr := r.rec.Trace
		caps := captures(tr)
		var names []string
		for _, c := range caps {
			names = append(names, tr.String(c.Name))
		}
		if got := strings.Join(names, ","); got != "block,cuprof.start,%cuprof work(3),cell" {
			t.Errorf("capture ranges %s", got)
		}
		if got := fmt.Sprint(seqs(tr)); got != "[0 1 2 3 4 5]" {
			t.Errorf("recorded cuGetErrorName calls %s, want [0 1 2 3 4 5]", got)
		}
		var destroyed, created bool
		for _, e := range tr.Events {
			switch {
			case e.Kind == trace.KindCall && e.API == trace.APIStreamCreate:
				created = !inside(caps, e.Start)
			case e.Kind == trace.KindCall && e.API == trace.APIStreamDestroy:
				destroyed = inside(caps, e.Start)
			case e.Kind == trace.KindFrame:
				if !inside(caps, e.Start) || !inside(caps, e.End) {
					t.Errorf("frame %s at %d..%d outside every capture range", frameName(tr, &e), e.Start, e.End)
				}
			}
		}
		if !created || !destroyed {
			t.Errorf("stream created outside %v, destroyed inside %v: want both", created, destroyed)
		}
		if py.minor >= 12 {
			// sys.monitoring sees the ctypes calls as frames of their own:
			// work's frames hold them
			var works int
			for _, e := range tr.Events {
				if e.Kind == trace.KindFrame && frameName(tr, &e) == "work" {
					works++
				}
			}
			if works != 5 {
				t.Errorf("%d frames of work, want 5 (calls 0, 2, 3, 4, 5)", works)
			}
		}
	})
}

// TestPythonModulePassThrough runs testdata/python/pass_mod.py with the
// cuprof module installed by pip on every CPython: under cuprof record,
// cuprof.pass_through and passing_through switch which calls are recorded
// (exactly the stretches where cuGetErrorName did not pass through), give
// back the set before, refuse unknown and object-creating APIs with
// ValueError, and the trace counts 2 then 3 passed-through calls; without
// cuprof every call returns None and the module warns once.
func TestPythonModulePassThrough(t *testing.T) {
	forEachPythonInTurn(t, func(t *testing.T, py pyInterp) {
		installModule(t, py)
		bare := runBare(t, py, []string{"pass_mod.py"})
		if want := "before None now None kept None inner None after None\nerrors []\nwarnings 1\n"; bare.stdout != want || bare.exit != 0 {
			t.Errorf("without cuprof: %q (exit %d, stderr %q), want %q", bare.stdout, bare.exit, bare.stderr, want)
		}
		r := runPython(t, py, []string{"pass_mod.py"})
		want := "before () now ('cuGetErrorName',) kept ('cuGetErrorName',) inner ('cuStreamQuery', 'cuGetErrorName') after ()\n" +
			"errors ['cuNoSuchCall: no driver API of that na', 'cuMemAlloc: it creates, destroys, re']\nwarnings 0\n"
		if r.stdout != want || r.exit != 0 {
			t.Fatalf("under cuprof: %q (exit %d, stderr %q), want %q", r.stdout, r.exit, r.stderr, want)
		}
		tr := r.rec.Trace
		if got := fmt.Sprint(seqs(tr)); got != "[0 3 7]" {
			t.Errorf("recorded cuGetErrorName calls %s, want [0 3 7]", got)
		}
		var counts []uint64
		for _, e := range tr.Events {
			if e.Kind == trace.KindCount && tr.String(e.Name) == "cuGetErrorName" {
				counts = append(counts, e.Size)
			}
		}
		if got := fmt.Sprint(counts); got != "[2 3]" {
			t.Errorf("passed-through counts %s, want [2 3] (each change writes the stretch before it)", got)
		}
	})
}

// installModule installs the cuprof Python module (python/) for py with
// pip, from the repository, into a directory of the test's that PYTHONPATH
// then names. pip fetches the build backend (hatchling, pinned in
// python/pyproject.toml) from the package index, or its cache: without
// either the test skips, except in CI.
func installModule(t *testing.T, py pyInterp) {
	t.Helper()
	src, _ := filepath.Abs("../../python")
	site := t.TempDir()
	if out, err := exec.Command(py.path, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
		"--target", site, src).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "" && strings.Contains(string(out), "hatchling") {
			t.Skipf("pip install ./python needs its build backend (hatchling) from the package index: %s", out)
		}
		t.Fatalf("pip install ./python: %v\n%s", err, out)
	}
	t.Setenv("PYTHONPATH", site)
}
