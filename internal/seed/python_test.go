package seed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/trace"
)

// recordPythonSeed records the Python seed under the simulated driver (its
// H200 costs on) and returns the trace and what the script measured: the
// median time per call of each variant (ns), by function name.
func recordPythonSeed(t *testing.T, calls string) (*trace.Trace, map[string]float64) {
	t.Helper()
	if testing.Short() {
		t.Skip("records a program")
	}
	py, err := Python("")
	if errors.Is(err, ErrNoPython) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script, err := WritePython(filepath.Join(dir, "py"))
	if err != nil {
		t.Fatal(err)
	}
	tracePath, jsonPath := filepath.Join(dir, "seed.cuprof"), filepath.Join(dir, "seed.json")
	var stdout, stderr bytes.Buffer
	res, err := record.Run(context.Background(), []string{py, script, "-n", calls, "--warmup", "20", "--json", jsonPath},
		record.WithSim(true), record.WithOutput(tracePath), record.WithStdio(nil, &stdout, &stderr))
	if err != nil {
		t.Fatalf("record: %v\n%s", err, stderr.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("the seed exited with %d:\n%s\n%s", res.ExitCode, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"heavy wrapper, device 9999: minicore.core.CUDAError: CUDA_ERROR_INVALID_DEVICE",
		"lean wrapper, device 9999: minicore.lean.CUDAError: CUDA_ERROR_INVALID_DEVICE",
		"heavy: dev.create_stream() + close()",
		"heavy_stream - lean_stream: +",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Variants []struct {
			Function string
			P50      float64
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	medians := map[string]float64{}
	for _, v := range doc.Variants {
		medians[v.Function] = v.P50
	}
	tr, err := trace.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	return tr, medians
}

// spread returns the 10th and 90th percentiles of the durations of the
// successful calls to api.
func spread(tr *trace.Trace, api string) (n int, p10, p90 int64) {
	var d []int64
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind == trace.KindCall && e.API.String() == api && e.Result == 0 {
			d = append(d, e.Duration())
		}
	}
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	return len(d), d[len(d)/10], d[len(d)*9/10]
}

// The heavy wrapper and the lean one make the same driver calls, whose
// simulated costs are fixed: the difference the script measures is the
// wrapper's own time. With Python frames recorded, cuprof must put most of
// it in the heavy wrapper's options, finalize and check frames.
func TestPythonSeedAttributesTheWrapper(t *testing.T) {
	const calls = 300
	tr, medians := recordPythonSeed(t, "300")

	// Both wrappers ran and raised their typed errors: the failed cuDeviceGet
	// of each, and the heavy one named the code.
	var failed, named int
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind == trace.KindCall && e.API.String() == "cuDeviceGet" && e.Result != 0 {
			failed++
		}
		if e.Kind == trace.KindCall && e.API.String() == "cuGetErrorName" {
			named++
		}
	}
	if failed != 2 || named < 2 {
		t.Errorf("%d failed cuDeviceGet, %d cuGetErrorName calls; want 2 and at least 2", failed, named)
	}

	for _, v := range PythonVariants {
		d := medians[v.Heavy] - medians[v.Lean]
		if d <= 0 {
			t.Errorf("%s is not slower than %s: %.0f against %.0f ns", v.Heavy, v.Lean, medians[v.Heavy], medians[v.Lean])
		}
	}
	// The driver side of a variant: create+destroy, alloc+free, each at the
	// simulated cost with little spread; per variant 2 calls, so the driver
	// cannot account for the difference.
	diff := medians["heavy_stream"] - medians["lean_stream"]
	for _, api := range []string{"cuStreamCreate", "cuStreamDestroy", "cuMemAllocAsync", "cuMemFreeAsync"} {
		n, p10, p90 := spread(tr, api)
		if n < 2*calls {
			t.Errorf("%d %s calls, want at least %d", n, api, 2*calls)
		}
		if float64(p90-p10) > diff/4 {
			t.Errorf("%s durations spread %d..%d ns, more than a quarter of the wrappers' difference %.0f ns", api, p10, p90, diff)
		}
	}

	frames := 0
	for i := range tr.Events {
		if tr.Events[i].Kind == trace.KindFrame {
			frames++
		}
	}
	if frames == 0 {
		t.Skipf("no Python frames in the trace (capture %q, %v): the attribution checks need them", tr.Meta.Capture, pythonOf(tr))
	}
	for _, v := range PythonVariants {
		checkAttribution(t, tr, v.Heavy, v.Lean, calls)
	}
}

func pythonOf(tr *trace.Trace) []string {
	var s []string
	for _, p := range tr.Processes {
		if p.Python != "" {
			s = append(s, p.Python)
		}
	}
	return s
}

// frameMatches reports whether code c is the qualified name q: the same, or
// q's last component in q's module where the interpreter gives no qualname.
func frameMatches(tr *trace.Trace, c trace.CodeID, q string) bool {
	if int(c) >= len(tr.Code) {
		return false
	}
	name := tr.String(tr.Code[c].Name)
	return name == q || strings.HasSuffix(name, "."+q)
}

func checkAttribution(t *testing.T, tr *trace.Trace, heavy, lean string, calls int) {
	t.Helper()
	type kept struct {
		code  trace.CodeID
		stack analysis.FrameID
		analysis.Times
	}
	var all []kept
	a := analysis.Of(tr, analysis.OnFrameEnd(func(f *analysis.Frame) {
		all = append(all, kept{f.Code, f.Stack, f.Times})
	}))
	var nHeavy, nLean int
	var inclHeavy, inclLean, drvHeavy, drvLean int64
	by := map[string]int64{}
	for _, f := range all {
		stack := a.FrameStack(f.stack) // outermost first, ending with f itself
		switch {
		case frameMatches(tr, f.code, heavy):
			nHeavy++
			inclHeavy += f.InclusiveNs
			drvHeavy += f.DriverNs
			continue
		case frameMatches(tr, f.code, lean):
			nLean++
			inclLean += f.InclusiveNs
			drvLean += f.DriverNs
			continue
		}
		under := false
		for _, c := range stack[:len(stack)-1] {
			if frameMatches(tr, c, heavy) {
				under = true
			}
		}
		if !under {
			continue
		}
		// The outermost frame of a kind counts with all it called; the
		// bindings' own time is building the result tuples the check reads.
		for kind, names := range PythonWrapperFrames {
			if !slices.ContainsFunc(names, func(q string) bool { return frameMatches(tr, f.code, q) }) {
				continue
			}
			// Only the outermost frame of a kind: it holds the others.
			outer := true
			for _, c := range stack[:len(stack)-1] {
				if slices.ContainsFunc(names, func(q string) bool { return frameMatches(tr, c, q) }) {
					outer = false
				}
			}
			if outer {
				by[kind] += f.InclusiveNs
			}
		}
		if tr.String(tr.Code[f.code].Module) == "minicore.driver" {
			by["check"] += f.SelfNs
		}
	}
	if nHeavy < calls || nLean < calls {
		t.Fatalf("%d %s and %d %s frames, want at least %d each", nHeavy, heavy, nLean, lean, calls)
	}
	d := float64(inclHeavy)/float64(nHeavy) - float64(inclLean)/float64(nLean)
	dd := float64(drvHeavy)/float64(nHeavy) - float64(drvLean)/float64(nLean)
	var w float64
	for kind := range PythonWrapperFrames {
		if by[kind] == 0 && !(heavy == "heavy_alloc" && kind == "options") {
			t.Errorf("%s: no %s frames under it", heavy, kind)
		}
		w += float64(by[kind]) / float64(nHeavy)
	}
	t.Logf("%s - %s: %.0f ns per call (driver %+.0f); options %.0f, finalize %.0f, check %.0f ns per call",
		heavy, lean, d, dd, float64(by["options"])/float64(nHeavy), float64(by["finalize"])/float64(nHeavy), float64(by["check"])/float64(nHeavy))
	if d <= 0 {
		t.Fatalf("%s is not slower than %s in the trace (%.0f ns per call)", heavy, lean, d)
	}
	if dd > d/4 || dd < -d/4 {
		t.Errorf("driver time differs by %.0f ns per call between %s and %s: more than a quarter of %.0f", dd, heavy, lean, d)
	}
	if w < d/2 {
		t.Errorf("the options, finalize and check frames hold %.0f of the %.0f ns per call %s costs more than %s", w, d, heavy, lean)
	}
}

func TestWritePython(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "py")
	script, err := WritePython(dir)
	if err != nil {
		t.Fatal(err)
	}
	if script != filepath.Join(dir, "wrappers_ctypes.py") {
		t.Errorf("script %s", script)
	}
	for _, f := range []string{"wrappers_ctypes.py", "_percall.py", "minicore/__init__.py", "minicore/core.py", "minicore/lean.py", "minicore/driver.py"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v", f, st.Mode().Perm())
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "minicore")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("minicore/: %v %v", st.Mode(), err)
	}
	// Again over the same files: fine. Over a symbolic link: refused, and
	// the link's target is left alone.
	if _, err := WritePython(dir); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "_percall.py")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePython(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("error %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
}

func TestPythonNotFound(t *testing.T) {
	if _, err := Python("no-such-python-cuprof"); !errors.Is(err, ErrNoPython) {
		t.Errorf("error %v", err)
	}
}
