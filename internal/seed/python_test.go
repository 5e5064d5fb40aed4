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
	pyexamples "github.com/cuprof/cuprof/examples/python"
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
		"heavy wrapper: device 9999 refused, as this seed means it to be (minicore.core.CUDAError raised;",
		"lean wrapper: device 9999 refused, as this seed means it to be (minicore.lean.CUDAError raised;",
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

// frameMatches reports whether code c is the qualified name q: the same
// name, or q's last component on interpreters that record only co_name
// (3.10), then told apart by where it is defined: the line of q's def in
// the embedded minicore/core.py, or weakref.py for finalize.__init__.
func frameMatches(tr *trace.Trace, c trace.CodeID, q string) bool {
	if int(c) >= len(tr.Code) {
		return false
	}
	code := tr.Code[c]
	name := tr.String(code.Name)
	if name == q || strings.HasSuffix(name, "."+q) {
		return true
	}
	last := q[strings.LastIndex(q, ".")+1:]
	if strings.Contains(name, ".") || name != last || !strings.Contains(q, ".") {
		return false
	}
	file := tr.String(code.File)
	if q == "finalize.__init__" {
		return strings.HasSuffix(file, "/weakref.py")
	}
	return strings.HasSuffix(file, "/minicore/core.py") && code.Line != 0 && code.Line == coreDefLine(q)
}

// coreDefLine returns the line of the class or def of qualified name q in
// the embedded minicore/core.py, 0 when not found.
func coreDefLine(q string) uint32 {
	src, err := pyexamples.Seed.ReadFile("minicore/core.py")
	if err != nil {
		return 0
	}
	lines := strings.Split(string(src), "\n")
	at := 0
	for _, part := range strings.Split(q, ".") {
		found := false
		for ; at < len(lines); at++ {
			l := strings.TrimSpace(lines[at])
			if strings.HasPrefix(l, "class "+part+":") || strings.HasPrefix(l, "class "+part+"(") || strings.HasPrefix(l, "def "+part+"(") {
				found = true
				break
			}
		}
		if !found {
			return 0
		}
		at++
	}
	return uint32(at)
}

func median(xs []int64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// checkAttribution compares the heavy variant's frames with the lean one's,
// per activation and at the median (a loaded machine's stalls land in
// whichever frame was running): the heavy one's extra time must be mostly in
// its options, finalize and check frames, and not in the driver.
func checkAttribution(t *testing.T, tr *trace.Trace, heavy, lean string, calls int) {
	t.Helper()
	type activation struct {
		analysis.Times
		Start, End int64            // as recorded
		by         map[string]int64 // wrapper time inside, by kind
	}
	var heavyActs, leanActs []activation
	pending := map[uint32]map[string]int64{} // by thread: kinds seen since its last variant frame ended
	type ended struct {
		f     analysis.Frame
		stack analysis.FrameID
	}
	var frames []ended
	a := analysis.Of(tr, analysis.OnFrameEnd(func(f *analysis.Frame) {
		frames = append(frames, ended{*f, f.Stack})
	}))
	for _, e := range frames {
		f := e.f
		stack := a.FrameStack(e.stack) // outermost first, ending with f itself
		switch {
		case frameMatches(tr, f.Code, heavy):
			heavyActs = append(heavyActs, activation{f.Times, f.Start, f.End, pending[f.TID]})
			delete(pending, f.TID)
			continue
		case frameMatches(tr, f.Code, lean):
			leanActs = append(leanActs, activation{f.Times, f.Start, f.End, nil})
			delete(pending, f.TID)
			continue
		}
		if !slices.ContainsFunc(stack[:len(stack)-1], func(c trace.CodeID) bool { return frameMatches(tr, c, heavy) }) {
			continue
		}
		by := pending[f.TID]
		if by == nil {
			by = map[string]int64{}
			pending[f.TID] = by
		}
		// The outermost frame of a kind counts with all it called.
		for kind, names := range PythonWrapperFrames {
			is := func(c trace.CodeID) bool {
				return slices.ContainsFunc(names, func(q string) bool { return frameMatches(tr, c, q) })
			}
			if is(f.Code) && !slices.ContainsFunc(stack[:len(stack)-1], is) {
				by[kind] += f.InclusiveNs
			}
		}
		// The bindings' time less the ctypes calls in them (which the lean
		// wrapper makes too) is building the result tuples the check reads.
		binding := func(c trace.CodeID) bool { return tr.String(tr.Code[c].Module) == "minicore.driver" }
		above := stack[:len(stack)-1]
		switch {
		case binding(f.Code) && !slices.ContainsFunc(above, binding):
			by["check"] += f.InclusiveNs - f.DriverNs
		case tr.Code[f.Code].Kind == trace.CodeNative && strings.HasPrefix(tr.String(tr.Code[f.Code].Name), "CFuncPtr") &&
			len(above) > 0 && binding(above[len(above)-1]):
			by["check"] -= f.InclusiveNs - f.DriverNs
		}
	}
	if len(heavyActs) < calls || len(leanActs) < calls {
		t.Fatalf("%d %s and %d %s frames, want at least %d each", len(heavyActs), heavy, len(leanActs), lean, calls)
	}
	col := func(acts []activation, get func(activation) int64) []int64 {
		var xs []int64
		for _, x := range acts {
			xs = append(xs, get(x))
		}
		return xs
	}
	incl := func(x activation) int64 { return x.InclusiveNs }
	drv := func(x activation) int64 { return x.DriverNs }
	d := median(col(heavyActs, incl)) - median(col(leanActs, incl))
	dd := median(col(heavyActs, drv)) - median(col(leanActs, drv))
	kinds := map[string]float64{}
	var w float64
	for kind := range PythonWrapperFrames {
		kinds[kind] = median(col(heavyActs, func(x activation) int64 { return x.by[kind] }))
		w += kinds[kind]
		if kinds[kind] == 0 && !(heavy == "heavy_alloc" && kind == "options") {
			t.Errorf("%s: no %s frames under it", heavy, kind)
		}
	}
	t.Logf("%s - %s: %.0f ns per call at the median (%.0f - %.0f; driver %+.0f); options %.0f, finalize %.0f, check %.0f ns; %d and %d activations, py_event_ns %.1f, inside_ns %.1f",
		heavy, lean, d, median(col(heavyActs, incl)), median(col(leanActs, incl)), dd, kinds["options"], kinds["finalize"], kinds["check"],
		len(heavyActs), len(leanActs), tr.Meta.Overhead.PyEventNs, tr.Meta.Overhead.InsideNs)
	// The cost taken out of a frame is py_event_ns per Python event
	// recorded inside it, and the heavy wrapper has more of them inside:
	// a calibration inflated by a loaded machine (the shim times its loop
	// in short runs, best of 7; 356 ns against a usual 60-130 was seen once
	// in 150 recordings with four hogs on this 2-core VM) takes more out of
	// it than it cost and can put it below the lean one. That is the
	// calibration's failure, not the attribution's: say so.
	raw := func(x activation) int64 { return x.End - x.Start }
	if dRaw := median(col(heavyActs, raw)) - median(col(leanActs, raw)); d <= 0 && dRaw > 0 {
		t.Fatalf("%s is slower than %s by %.0f ns per call as recorded but not once the calibrated cost (py_event_ns %.1f per Python event) is taken out (%.0f ns): the calibration was inflated (cudawrap/shim/csrc/python.c, time_loop), not the attribution wrong",
			heavy, lean, dRaw, tr.Meta.Overhead.PyEventNs, d)
	}
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
