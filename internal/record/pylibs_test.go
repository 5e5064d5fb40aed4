package record

import (
	"slices"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/pyvenv"
	"github.com/cuprof/cuprof/trace"
)

// The tests of this file run the real Python CUDA libraries (cuda.core,
// cuda.bindings, numba-cuda, nvtx, IPython; pinned in
// internal/pyvenv/requirements.txt) on the simulated driver, on every
// CPython, in the environments internal/pyvenv makes. Without the package
// index they skip, and in CI fail.

// forEachPyLibs runs f per CPython, one after the other, with py the
// interpreter of that CPython's environment.
func forEachPyLibs(t *testing.T, f func(t *testing.T, py pyInterp)) {
	programs(t) // the simulated driver
	ins, missing, err := pyvenv.Interpreters("testdata/python/versions")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range missing {
		t.Logf("CPython %s not installed: skipped", v)
	}
	if len(ins) == 0 {
		t.Skip("no pyenv CPython installed")
	}
	for _, in := range ins {
		t.Run(in.Version, func(t *testing.T) {
			f(t, pyInterp{version: in.Version, minor: in.Minor, path: pyvenv.Require(t, in)})
		})
	}
}

// callInfo is what the analysis says encloses one driver call.
type callInfo struct {
	api    string
	stack  []string // Python frames, outermost first
	ranges string   // the NVTX path, "domain:name/..." as PathString gives it
}

// enclosing replays tr once and returns, per driver call in trace order,
// its frames and ranges, and per frame code name the frames that ended.
func enclosing(tr *trace.Trace) ([]callInfo, map[string][]analysis.Frame) {
	var infos []callInfo
	frames := map[string][]analysis.Frame{}
	code := func(c trace.CodeID) string {
		if int(c) >= len(tr.Code) {
			return "?"
		}
		return tr.String(tr.Code[c].Name)
	}
	analysis.Of(tr, analysis.OnEvent(func(e *analysis.Event) {
		if e.Kind != trace.KindCall {
			return
		}
		a := e.Analysis()
		var stack []string
		for _, c := range a.FrameStack(e.Frame) {
			stack = append(stack, code(c))
		}
		infos = append(infos, callInfo{api: e.API.String(), stack: stack, ranges: a.PathString(e.Path)})
	}), analysis.OnFrameEnd(func(f *analysis.Frame) {
		frames[code(f.Code)] = append(frames[code(f.Code)], *f)
	}))
	return infos, frames
}

// withoutEnter drops the frames of the context manager's __enter__ that
// opened the nvtx range (annotate.__enter__ and, on 3.12+, push_range):
// the analysis keeps a push range under the frames it was opened in even
// when they return before it is popped, so they show as ancestors of what
// runs inside the range (docs/python.md, "Real libraries").
func withoutEnter(stack []string) []string {
	var out []string
	for _, s := range stack {
		if s != "annotate.__enter__" && s != "__enter__" && s != "push_range" {
			out = append(out, s)
		}
	}
	return out
}

func callsOf(infos []callInfo, api string) []callInfo {
	var out []callInfo
	for _, c := range infos {
		if c.api == api {
			out = append(out, c)
		}
	}
	return out
}

// TestPyLibsSeed records testdata/python/pylibs/seed.py (cuda.core's
// set_current, create_stream, allocate(10, stream=s) and its close, the
// stream's close, inside an nvtx.annotate range, five rounds): the
// program's output is that of a bare run; every seed driver call is inside
// the range; on 3.12+ Device.create_stream's frame holds exactly
// cuCtxGetStreamPriorityRange and cuStreamCreateWithPriority, and its self
// time is its time less theirs, _MemPool.allocate's holds
// cuMemAllocFromPoolAsync, Buffer.close's cuMemFreeAsync and
// Stream.close's cuStreamDestroy; on 3.10/3.11, where the profile function
// does not see Cython functions, the calls sit directly under seed().
func TestPyLibsSeed(t *testing.T) {
	forEachPyLibs(t, func(t *testing.T, py pyInterp) {
		argv := []string{"pylibs/seed.py"}
		bare := runBare(t, py, argv)
		r := runPython(t, py, argv)
		sameOutput(t, r, bare)
		if bare.exit != 0 || !strings.Contains(bare.stdout, "allocated [10, 10, 10, 10, 10]") {
			t.Fatalf("seed.py: exit %d\n%s%s", bare.exit, bare.stdout, bare.stderr)
		}
		infos, frames := enclosing(r.rec.Trace)
		wantUnder := map[string]string{
			"cuCtxGetStreamPriorityRange": "Device.create_stream",
			"cuStreamCreateWithPriority":  "Device.create_stream",
			"cuStreamIsCapturing":         "_MemPool.allocate",
			"cuMemAllocFromPoolAsync":     "_MemPool.allocate",
			"cuMemFreeAsync":              "Buffer.close",
			"cuStreamDestroy":             "Stream.close",
		}
		for api, frame := range wantUnder {
			cs := callsOf(infos, api)
			if len(cs) != 5 {
				t.Errorf("%d calls of %s, want 5 (one a round)", len(cs), api)
			}
			for _, c := range cs {
				if c.ranges != "seed" {
					t.Errorf("%s in ranges %q, want seed", api, c.ranges)
				}
				want := []string{"<module>", "main", "seed"}
				if py.minor >= 12 {
					want = append(want, frame)
				}
				if got := withoutEnter(c.stack); !slices.Equal(got, want) {
					t.Errorf("%s under %v, want %v", api, c.stack, want)
				}
			}
		}
		if py.minor < 12 {
			return
		}
		cs := frames["Device.create_stream"]
		if len(cs) != 5 {
			t.Fatalf("%d frames of Device.create_stream, want 5", len(cs))
		}
		for i, f := range cs {
			// No frame inside it, so its self time is its time less
			// that of the two driver calls under it.
			if f.Calls != 2 || f.SelfNs != f.InclusiveNs-f.DriverNs || f.DriverNs <= 0 || f.SelfNs <= 0 {
				t.Errorf("Device.create_stream %d: %d calls under it, inclusive %d ns, self %d, driver calls %d: want 2 calls, self = inclusive - driver calls > 0",
					i, f.Calls, f.InclusiveNs, f.SelfNs, f.DriverNs)
			}
		}
	})
}

// TestPyLibsNumba records testdata/python/pylibs/numba_seed.py: numba-cuda's
// device_array, stream and synchronize (three rounds) on the simulated
// driver through cuda.bindings, each driver call under the Python frames
// that made it; the output is that of a bare run.
func TestPyLibsNumba(t *testing.T) {
	forEachPyLibs(t, func(t *testing.T, py pyInterp) {
		argv := []string{"pylibs/numba_seed.py"}
		bare := runBare(t, py, argv)
		r := runPython(t, py, argv)
		sameOutput(t, r, bare)
		if bare.exit != 0 || !strings.Contains(bare.stdout, "array (10,) float32") {
			t.Fatalf("numba_seed.py: exit %d\n%s%s", bare.exit, bare.stdout, bare.stderr)
		}
		infos, _ := enclosing(r.rec.Trace)
		for api, frame := range map[string]string{
			"cuMemAlloc":       "device_array",
			"cuStreamCreate":   "stream",
			"cuCtxSynchronize": "synchronize",
		} {
			cs := callsOf(infos, api)
			if len(cs) != 3 {
				t.Errorf("%d calls of %s, want 3", len(cs), api)
			}
			for _, c := range cs {
				if !contains(c.stack, "work") || !contains(c.stack, frame) {
					t.Errorf("%s under %v, want work and %s among them", api, c.stack, frame)
				}
			}
		}
	})
}

// TestPyLibsCapture runs testdata/python/pylibs/capture_core.py with the
// cuprof module under cuprof record --capture-range=profiler-api: real
// cuda.core's seed statements inside cuprof.capture, and in a real IPython
// shell under %cuprof and %%cuprof; the capture ranges are those four, the
// allocations inside them are exactly the four seeds run there, frames
// only inside them, and nothing warns.
func TestPyLibsCapture(t *testing.T) {
	forEachPyLibs(t, func(t *testing.T, py pyInterp) {
		installModule(t, py)
		t.Setenv("IPYTHONDIR", t.TempDir())
		argv := []string{"pylibs/capture_core.py"}
		bare := runBare(t, py, argv)
		if want := "recording False warnings 1\n"; bare.stdout != want || bare.exit != 0 {
			t.Errorf("without cuprof: %q (exit %d, stderr %q), want %q", bare.stdout, bare.exit, bare.stderr, want)
		}
		r := runPython(t, py, argv, WithCapture(Capture{Range: CaptureProfilerAPI}))
		if want := "recording True warnings 0\n"; r.stdout != want || r.exit != 0 {
			t.Fatalf("under cuprof: %q (exit %d, stderr %q), want %q", r.stdout, r.exit, r.stderr, want)
		}
		tr := r.rec.Trace
		caps := captures(tr)
		var names []string
		for _, c := range caps {
			names = append(names, tr.String(c.Name))
		}
		if got := strings.Join(names, ","); got != "block,%cuprof seed(),cell" {
			t.Errorf("capture ranges %s", got)
		}
		in := 0
		for _, e := range calls(tr, "cuMemAllocFromPoolAsync") {
			if inside(caps, e.Start) {
				in++
			}
		}
		if in != 4 {
			t.Errorf("%d allocations inside the capture ranges, want 4 (block, %%cuprof, the cell's two)", in)
		}
		for _, e := range tr.Events {
			if e.Kind == trace.KindFrame && (!inside(caps, e.Start) || !inside(caps, e.End)) {
				t.Errorf("frame %s at %d..%d outside every capture range", frameName(tr, &e), e.Start, e.End)
			}
		}
		if py.minor >= 12 && len(framesOf(tr, "Device.create_stream")) != 4 {
			t.Errorf("%d frames of Device.create_stream, want 4", len(framesOf(tr, "Device.create_stream")))
		}
	})
}
