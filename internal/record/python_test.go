package record

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// pythonVersions returns the CPython versions the tests run on (pyenv's on
// the CI machine), listed once in testdata/python/versions (.ci/run reads it
// too); a version that is not installed is skipped.
func pythonVersions(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/python/versions")
	if err != nil {
		t.Fatalf("the CPython versions to test: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatal("testdata/python/versions lists no CPython version")
	}
	return out
}

type pyInterp struct {
	version string
	minor   int
	path    string
}

// pythons returns the installed interpreters of pythonVersions, or those
// CUPROF_TEST_PYTHON names (VERSION=PATH, comma-separated: an arm64 CPython
// under emulation, say) instead of pyenv's.
func pythons(t *testing.T) []pyInterp {
	t.Helper()
	if list := os.Getenv("CUPROF_TEST_PYTHON"); list != "" {
		var out []pyInterp
		for _, item := range strings.Split(list, ",") {
			v, p, ok := strings.Cut(item, "=")
			parts := strings.Split(v, ".")
			if !ok || len(parts) < 2 {
				t.Fatalf("CUPROF_TEST_PYTHON: %q is not VERSION=PATH", item)
			}
			minor, err := strconv.Atoi(parts[1])
			if err != nil {
				t.Fatalf("CUPROF_TEST_PYTHON: %q: bad version", item)
			}
			out = append(out, pyInterp{version: v, minor: minor, path: p})
		}
		return out
	}
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		if out, err := exec.Command("pyenv", "root").Output(); err == nil {
			root = strings.TrimSpace(string(out))
		} else if home, err := os.UserHomeDir(); err == nil {
			root = filepath.Join(home, ".pyenv")
		}
	}
	var out []pyInterp
	for _, v := range pythonVersions(t) {
		p := filepath.Join(root, "versions", v, "bin", "python3")
		if _, err := os.Stat(p); err != nil {
			t.Logf("CPython %s not installed (%s): skipped", v, p)
			continue
		}
		minor, _ := strconv.Atoi(strings.Split(v, ".")[1])
		out = append(out, pyInterp{version: v, minor: minor, path: p})
	}
	if len(out) == 0 {
		t.Skip("no pyenv CPython installed")
	}
	return out
}

// forEachPython runs f as a subtest per installed interpreter, side by
// side (as many at once as go test's -parallel, the machine's cores): each
// is a recording of its own processes, and most of a run is spent starting
// them.
func forEachPython(t *testing.T, f func(t *testing.T, py pyInterp)) {
	programs(t) // the simulated driver
	for _, py := range pythons(t) {
		t.Run(py.version, func(t *testing.T) {
			t.Parallel()
			f(t, py)
		})
	}
}

// forEachPythonInTurn runs f as a subtest per installed interpreter, one
// after the other: for tests that compare times, which runs beside them
// would stretch.
func forEachPythonInTurn(t *testing.T, f func(t *testing.T, py pyInterp)) {
	programs(t) // the simulated driver
	for _, py := range pythons(t) {
		t.Run(py.version, func(t *testing.T) { f(t, py) })
	}
}

// pyRun is one run of a Python program: under cuprof (Trace set) or bare.
type pyRun struct {
	rec            *recording
	stdout, stderr string
	exit           int
}

// runPython records python argv (scripts from testdata/python) against the
// simulated driver.
func runPython(t *testing.T, py pyInterp, argv []string, opts ...Option) *pyRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	dir, _ := filepath.Abs("testdata/python")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "py.cuprof")
	args := append([]string{py.path}, argv...)
	res, err := Run(ctx, args, append([]Option{WithSim(true), WithOutput(out), WithStdio(nil, &stdout, &stderr),
		withDir(dir)}, opts...)...)
	if err != nil {
		t.Fatalf("record %v: %v", args, err)
	}
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatalf("read the trace: %v", err)
	}
	checkWritten(t, out, res, tr)
	return &pyRun{rec: &recording{Result: res, Trace: tr}, stdout: stdout.String(), stderr: stderr.String(), exit: res.ExitCode}
}

// runBare runs python argv without cuprof, on the simulated driver.
func runBare(t *testing.T, py pyInterp, argv []string, env ...string) *pyRun {
	t.Helper()
	_, sim := programs(t)
	dir, _ := filepath.Abs("testdata/python")
	cmd := exec.Command(py.path, argv...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "LD_LIBRARY_PATH="+sim), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exit := 0
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return &pyRun{stdout: stdout.String(), stderr: stderr.String(), exit: exit}
}

// sameOutput checks that the recorded run printed and returned what the
// bare run did (cuprof's own notices on stderr aside).
func sameOutput(t *testing.T, rec, bare *pyRun) {
	t.Helper()
	var kept []string
	for _, l := range strings.SplitAfter(rec.stderr, "\n") {
		if !strings.HasPrefix(l, "cuprof: ") {
			kept = append(kept, l)
		}
	}
	if got := strings.Join(kept, ""); rec.stdout != bare.stdout || got != bare.stderr || rec.exit != bare.exit {
		t.Errorf("the program's output changed under cuprof:\nstdout %q\n  bare %q\nstderr %q\n  bare %q\nexit %d, bare %d",
			rec.stdout, bare.stdout, got, bare.stderr, rec.exit, bare.exit)
	}
}

// frameName is the qualified name of a frame's code.
func frameName(tr *trace.Trace, e *trace.Event) string {
	if int(e.Code) >= len(tr.Code) {
		return "?"
	}
	return tr.String(tr.Code[e.Code].Name)
}

// stackOf returns the names of the frames enclosing e on its thread, the
// outermost first.
func stackOf(tr *trace.Trace, e *trace.Event) []string {
	var fs []*trace.Event
	for i := range tr.Events {
		f := &tr.Events[i]
		if f.Kind == trace.KindFrame && f.PID == e.PID && f.TID == e.TID && f.Start <= e.Start && f.End >= e.End && f != e {
			fs = append(fs, f)
		}
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Start != fs[j].Start {
			return fs[i].Start < fs[j].Start
		}
		return fs[i].End > fs[j].End
	})
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = frameName(tr, f)
	}
	return names
}

// calls returns the events of api.
func calls(tr *trace.Trace, api string) []*trace.Event {
	a, _ := trace.LookupAPI(api)
	var out []*trace.Event
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.KindCall && e.API == a {
			out = append(out, e)
		}
	}
	return out
}

func framesOf(tr *trace.Trace, name string) []*trace.Event {
	var out []*trace.Event
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.KindFrame && frameName(tr, e) == name {
			out = append(out, e)
		}
	}
	return out
}

func hasSuffix(stack []string, want ...string) bool {
	if len(stack) < len(want) {
		return false
	}
	for i, w := range want {
		if stack[len(stack)-len(want)+i] != w {
			return false
		}
	}
	return true
}

func contains(stack []string, name string) bool {
	for _, s := range stack {
		if s == name {
			return true
		}
	}
	return false
}

// TestPythonFramesAboveDriverCalls: every driver call of a ctypes wrapper
// sits under the Python frames that made it, and on 3.12+ directly under
// the ctypes function's frame; wrapper helpers called by code leading to
// CUDA get frames of their own; an exception unwinding through frames and
// a generator's suspensions are flagged; the program's output is unchanged.
func TestPythonFramesAboveDriverCalls(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"frames.py"})
		sameOutput(t, r, runBare(t, py, []string{"frames.py"}))
		if r.exit != 0 {
			t.Fatalf("frames.py exited %d: %s", r.exit, r.stderr)
		}
		tr := r.rec.Trace
		if err := tr.Validate(); err != nil {
			t.Fatalf("trace does not validate: %v", err)
		}
		p := tr.Processes[0]
		if !strings.HasPrefix(p.Python, "CPython "+py.version+", ") {
			t.Errorf("Process.Python = %q", p.Python)
		}
		creates := calls(tr, "cuStreamCreate")
		if len(creates) != 23 {
			t.Fatalf("%d cuStreamCreate calls, want 23", len(creates))
		}
		for i, c := range creates[3:] {
			st := stackOf(tr, c)
			want := []string{"<module>", "main", "create_stream", "Stream.__init__"}
			if py.minor < 11 {
				want[3] = "__init__" // co_qualname is 3.11+
			}
			if py.minor >= 12 {
				// the class call, a C-level call seen by CALL events
				want = []string{"<module>", "main", "create_stream", "Stream", "Stream.__init__", "CFuncPtr cuStreamCreate"}
			}
			if !hasSuffix(st, want[1:]...) || st[0] != "<module>" {
				t.Errorf("create %d: stack %q, want %q", i, st, want)
			}
		}
		for i, c := range creates[:3] {
			if st := stackOf(tr, c); !contains(st, "gen") {
				t.Errorf("generator create %d: stack %q", i, st)
			}
		}
		// Destroys from weakref.finalize: under Stream.close (a Python
		// function) and finalize.__call__.
		destroys := calls(tr, "cuStreamDestroy")
		if len(destroys) != 24 {
			t.Fatalf("%d cuStreamDestroy calls, want 24", len(destroys))
		}
		if st := stackOf(tr, destroys[10]); !contains(st, "_destroy") || !contains(st, "main") {
			t.Errorf("destroy: stack %q", st)
		}
		// Helpers under Stream.__init__ (known to lead to CUDA after its
		// first call): the options class's __init__, weakref.finalize.
		init := "Stream.__init__"
		if py.minor < 11 {
			init = "__init__"
		}
		for _, h := range []string{"StreamOptions.__init__", "finalize.__init__", "check"} {
			if py.minor < 11 {
				h = h[strings.LastIndexByte(h, '.')+1:]
			}
			found := false
			for _, f := range framesOf(tr, h) {
				if st := stackOf(tr, f); len(st) > 0 && (st[len(st)-1] == init ||
					py.minor >= 12 && len(st) > 1 && st[len(st)-2] == init) { // under the class call
					found = true
				}
			}
			if !found {
				t.Errorf("no %s frame under %s", h, init)
			}
		}
		// The failing destroy raised through check and fail to main's try.
		if fs := framesOf(tr, "fail"); len(fs) != 1 || fs[0].Flags&trace.FrameUnwound == 0 {
			t.Errorf("fail frames %+v, want one flagged FrameUnwound", fs)
		}
		gens := framesOf(tr, "gen")
		if len(gens) < 3 {
			t.Fatalf("%d gen frames, want one per resumption", len(gens))
		}
		if py.minor >= 12 {
			yielded := 0
			for _, g := range gens {
				if g.Flags&trace.FrameYielded != 0 {
					yielded++
				}
			}
			if yielded != 3 {
				t.Errorf("%d gen frames flagged FrameYielded, want 3", yielded)
			}
		}
		if tr.Meta.Overhead.PyEventNs <= 0 || tr.Meta.Overhead.PyEventNs > plausibleNs(5000) {
			t.Errorf("PyEventNs = %v", tr.Meta.Overhead.PyEventNs)
		}
		for _, c := range tr.Code[1:] {
			if c.Kind == trace.CodePython && (tr.String(c.File) == "" || c.Line == 0) {
				t.Errorf("code %q has no file or line", tr.String(c.Name))
			}
		}
	})
}

// TestPythonFrameTimes compares frames' inclusive and self times with the
// program's own perf_counter measurements: within 10 % for frames of 20 us
// and more.
func TestPythonFrameTimes(t *testing.T) {
	forEachPythonInTurn(t, func(t *testing.T, py pyInterp) {
		meas := filepath.Join(t.TempDir(), "times.txt")
		r := runPython(t, py, []string{"timing.py", meas})
		b, err := os.ReadFile(meas)
		if err != nil {
			t.Fatal(err)
		}
		var works, outers, mself []float64
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Fields(l)
			us, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "work":
				works = append(works, us)
			case "outer":
				outers = append(outers, us)
			case "self":
				mself = append(mself, us)
			}
		}
		tr := r.rec.Trace
		fw, fo := framesOf(tr, "work"), framesOf(tr, "outer")
		if len(fw) != len(works) || len(fo) != len(outers) || len(fo) != 10 {
			t.Fatalf("%d work and %d outer frames, the program measured %d and %d", len(fw), len(fo), len(works), len(outers))
		}
		// A preemption on a loaded machine lands in one activation's
		// figures, in both cuprof's and the program's (they time the same
		// activation) or, when it hits the edges the program does not
		// time, in cuprof's only. So each activation is compared with the
		// program's own figure for it: the median of the ratios must be
		// within 10 % of 1, and three in four within 10 % one by one.
		// (Comparing the two medians instead fails on a loaded machine:
		// stalls make the times bimodal, about 200 and 300 us for work, and
		// one activation off moves a median from one mode to the other.)
		ok := func(got, want float64) bool { return got >= want*0.9 && got <= want*1.1 }
		check := func(what string, got, want []float64) {
			t.Helper()
			if len(want) == 0 || median(want) < 20 {
				return
			}
			good := 0
			var ratios []float64
			for i := range got {
				if ok(got[i], want[i]) {
					good++
				}
				ratios = append(ratios, got[i]/want[i])
			}
			if r := median(ratios); !ok(r, 1) || good*4 < len(got)*3 {
				t.Errorf("%s: cuprof/program %.3f at the median of the activations (cuprof %.1f us at the median, the program %.1f us); %d of %d activations within 10 %%:\ncuprof  %.1f\nprogram %.1f",
					what, r, median(got), median(want), good, len(got), got, want)
			}
		}
		// The first activations pay one-time costs (CPython instruments
		// each code object when it first runs under sys.monitoring; cuprof
		// names the code of a frame the first time it writes one): the
		// program's measurements then miss the part spent before the
		// function's first line and after its last.
		var gotWork []float64
		for _, f := range fw[3:] {
			gotWork = append(gotWork, float64(f.Duration())/1e3)
		}
		check("work inclusive", gotWork, works[3:])
		// Self time: the program's figure is outer's time less its calls of
		// work, timed around each call.
		var incl, mincl, selfs, mselfs []float64
		for i, f := range fo {
			if i == 0 {
				continue
			}
			// Its direct callees: work, and the C calls (range,
			// perf_counter) that show up as frames under code leading
			// to CUDA.
			var children float64
			for i := range tr.Events {
				c := &tr.Events[i]
				if c.Kind != trace.KindFrame || c.PID != f.PID || c.TID != f.TID || c == f ||
					c.Start < f.Start || c.End > f.End {
					continue
				}
				if st := stackOf(tr, c); len(st) > 0 && st[len(st)-1] == "outer" {
					children += float64(c.Duration()) / 1e3
				}
			}
			incl = append(incl, float64(f.Duration())/1e3)
			mincl = append(mincl, outers[i])
			selfs = append(selfs, float64(f.Duration())/1e3-children)
			mselfs = append(mselfs, mself[i])
		}
		check("outer inclusive", incl, mincl)
		check("outer self", selfs, mselfs)
	})
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// TestPythonThreads: a thread alive before the hooks start (python -S, the
// bootstrap imported by the script after starting it) and one started
// after both get their frames above their driver calls.
func TestPythonThreads(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		argv := []string{"-S", "threads.py", "--boot"}
		r := runPython(t, py, argv)
		sameOutput(t, r, runBare(t, py, argv))
		tr := r.rec.Trace
		creates := calls(tr, "cuStreamCreate")
		if len(creates) != 2 {
			t.Fatalf("%d cuStreamCreate calls, want 2", len(creates))
		}
		main := tr.Processes[0].PID
		for i, want := range []string{"early_call", "late_call"} {
			c := creates[i]
			if c.TID == main {
				t.Errorf("%s's call on the main thread", want)
			}
			if st := stackOf(tr, c); !contains(st, want) || !contains(st, "create_stream") {
				t.Errorf("%s: stack of its call %q", want, st)
			}
		}
	})
}

// TestPythonFork: the child of a fork records its own frames above its
// driver calls, and neither process deadlocks.
func TestPythonFork(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"fork.py"})
		sameOutput(t, r, runBare(t, py, []string{"fork.py"}))
		tr := r.rec.Trace
		if len(tr.Processes) != 2 {
			t.Fatalf("%d processes, want the parent and the child", len(tr.Processes))
		}
		for _, c := range calls(tr, "cuStreamCreate") {
			if st := stackOf(tr, c); !contains(st, "child_work") || !contains(st, "create_stream") {
				t.Errorf("pid %d: stack of its create %q", c.PID, st)
			}
		}
		if n := len(calls(tr, "cuStreamCreate")); n != 2 {
			t.Errorf("%d creates, want one per process", n)
		}
	})
}

// TestPythonShutdownInDriverCall: the interpreter exits while a daemon
// thread is inside a driver call (of 100 s: no recording on any machine
// takes that long, one that waited for the call does); its frames are
// written open.
func TestPythonShutdownInDriverCall(t *testing.T) {
	const call = 100 * time.Second
	t.Setenv("CUPROF_SIM_COST_SCALE", "1")
	t.Setenv("CUPROF_SIM_COSTS", fmt.Sprintf("cuCtxSynchronize=%d", call.Nanoseconds()))
	forEachPython(t, func(t *testing.T, py pyInterp) {
		began := time.Now()
		r := runPython(t, py, []string{"daemon.py"})
		if d := time.Since(began); d >= call {
			t.Errorf("the recording took %v: the exit waited for the daemon thread's call of %v", d, call)
		}
		sameOutput(t, r, runBare(t, py, []string{"daemon.py"}))
		tr := r.rec.Trace
		var open []string
		for i := range tr.Events {
			if e := &tr.Events[i]; e.Kind == trace.KindFrame && e.Flags&trace.FrameOpen != 0 {
				open = append(open, frameName(tr, e))
				if e.TID == tr.Processes[0].PID {
					t.Errorf("open frame %s on the main thread", frameName(tr, e))
				}
			}
		}
		if !contains(open, "blocked") || !contains(open, "daemon_main") {
			t.Errorf("open frames %q, want blocked and daemon_main", open)
		}
	})
}

// TestPythonTeardown: __del__ calling the driver during interpreter
// teardown neither crashes nor loses the call.
func TestPythonTeardown(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"teardown.py"})
		sameOutput(t, r, runBare(t, py, []string{"teardown.py"}))
		if r.exit != 0 {
			t.Fatalf("exit %d: %s", r.exit, r.stderr)
		}
		if n := len(calls(r.rec.Trace, "cuStreamDestroy")); n != 1 {
			t.Errorf("%d cuStreamDestroy calls, want __del__'s", n)
		}
	})
}

// TestPythonProfilers: cProfile and another sys.monitoring tool work as
// without cuprof; on 3.12+ cuprof shares the interpreter with them (its
// own tool id), below 3.12 cProfile's profile function replaces cuprof's
// on its thread: driver calls are still recorded.
func TestPythonProfilers(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"profilers.py"})
		sameOutput(t, r, runBare(t, py, []string{"profilers.py"}))
		if !strings.Contains(r.stdout, "cProfile saw work: True") {
			t.Errorf("output %q", r.stdout)
		}
		tr := r.rec.Trace
		creates := calls(tr, "cuStreamCreate")
		want := 5
		if py.minor >= 12 {
			want = 6
		}
		if len(creates) != want {
			t.Fatalf("%d creates, want %d", len(creates), want)
		}
		if py.minor >= 12 {
			for i, c := range creates {
				if st := stackOf(tr, c); !contains(st, "work") {
					t.Errorf("create %d: stack %q", i, st)
				}
			}
		}
	})
}

// TestPythonUserSitecustomize: the program's own sitecustomize still runs
// (cuprof's bootstrap runs it after starting the hooks), with its output.
func TestPythonUserSitecustomize(t *testing.T) {
	dir, _ := filepath.Abs("testdata/python/usersite")
	t.Setenv("PYTHONPATH", dir)
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"usersite_main.py"})
		sameOutput(t, r, runBare(t, py, []string{"usersite_main.py"}))
		if !strings.Contains(r.stdout, "marker: True") || !strings.Contains(r.stderr, "user sitecustomize ran") {
			t.Errorf("the user's sitecustomize did not run: %q %q", r.stdout, r.stderr)
		}
		if c := calls(r.rec.Trace, "cuStreamCreate"); len(c) != 1 || !contains(stackOf(r.rec.Trace, c[0]), "create_stream") {
			t.Errorf("no frames above the create")
		}
	})
}

// TestPythonBootstrapSkipped: python -E (PYTHONPATH ignored) or -S (no
// site) never runs the bootstrap: driver calls are recorded, and cuprof
// says once, in the trace and on stderr, that Python frames are off and why.
func TestPythonBootstrapSkipped(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		for _, flag := range []string{"-E", "-S"} {
			argv := []string{flag, "frames.py"}
			r := runPython(t, py, argv)
			sameOutput(t, r, runBare(t, py, argv))
			tr := r.rec.Trace
			if n := len(calls(tr, "cuStreamCreate")); n != 23 {
				t.Errorf("%s: %d creates, want 23", flag, n)
			}
			for _, e := range tr.Events {
				if e.Kind == trace.KindFrame {
					t.Fatalf("%s: a frame was recorded", flag)
				}
			}
			if p := tr.Processes[0].Python; !strings.Contains(p, "frames off (the bootstrap did not run") ||
				!strings.Contains(p, py.version) {
				t.Errorf("%s: Process.Python = %q", flag, p)
			}
			if n := strings.Count(r.stderr, "cuprof: Python frames were not recorded"); n != 1 {
				t.Errorf("%s: %d notices on stderr, want 1:\n%s", flag, n, r.stderr)
			}
		}
	})
}

// TestPythonStacks: --python=stacks writes the Python frames of every
// driver call's stack and no others: no C-level frames, no helpers (the
// options class's __init__, weakref.finalize's), each frame written having
// a driver call under it.
func TestPythonStacks(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"frames.py"}, WithPython(PythonStacks))
		sameOutput(t, r, runBare(t, py, []string{"frames.py"}))
		tr := r.rec.Trace
		creates := calls(tr, "cuStreamCreate")
		if len(creates) != 23 {
			t.Fatalf("%d cuStreamCreate calls, want 23", len(creates))
		}
		init := "Stream.__init__"
		if py.minor < 11 {
			init = "__init__"
		}
		for i, c := range creates[3:] {
			if st := stackOf(tr, c); !hasSuffix(st, "main", "create_stream", init) {
				t.Errorf("create %d: stack %q, want it to end main, create_stream, %s", i, st, init)
			}
		}
		var driver []*trace.Event
		for i := range tr.Events {
			if e := &tr.Events[i]; e.Kind == trace.KindCall {
				driver = append(driver, e)
			}
		}
		for i := range tr.Events {
			f := &tr.Events[i]
			if f.Kind != trace.KindFrame || f.Flags&trace.FrameOpen != 0 {
				continue
			}
			name := frameName(tr, f)
			if tr.Code[f.Code].Kind != trace.CodePython {
				t.Errorf("a C-level frame %q in stacks mode", name)
				continue
			}
			under := false
			for _, c := range driver {
				if c.PID == f.PID && c.TID == f.TID && f.Start <= c.Start && c.End <= f.End {
					under = true
					break
				}
			}
			if !under {
				t.Errorf("frame %q (%d-%d) has no driver call under it", name, f.Start, f.End)
			}
		}
	})
}

// TestPythonLongFrame: a frame longer than 2^32 clock ticks (the head's
// duration field) is written in the three-slot form and read back with its
// whole length. One interpreter only: it sleeps 4.4 s.
func TestPythonLongFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("sleeps 4.4 s")
	}
	programs(t)
	pys := pythons(t)
	py := pys[len(pys)-1]
	began := time.Now()
	r := runPython(t, py, []string{"long.py", "4.4"})
	took := time.Since(began)
	if r.exit != 0 || r.stdout != "done\n" {
		t.Fatalf("long.py: exit %d, stdout %q, stderr %s", r.exit, r.stdout, r.stderr)
	}
	fs := framesOf(r.rec.Trace, "long_call")
	if len(fs) != 1 {
		t.Fatalf("%d long_call frames, want 1", len(fs))
	}
	// At least its sleep, and no longer than the whole recording took.
	if d := time.Duration(fs[0].End - fs[0].Start); d < 4400*time.Millisecond || d > took {
		t.Errorf("long_call lasted %v, want its 4.4 s sleep and no more than the recording's %v", d, took)
	}
}

// TestPythonCodeReuse: code objects made and freed one after another, most
// at an address a dead one had, are each named as themselves: a code's
// state found by its address (the shim's cache in front of the code extra)
// goes when the code dies.
func TestPythonCodeReuse(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"reuse.py"})
		if r.exit != 0 {
			t.Fatalf("reuse.py: exit %d, stderr %s", r.exit, r.stderr)
		}
		var reused int
		if _, err := fmt.Sscanf(r.stdout, "reused %d", &reused); err != nil || reused == 0 {
			t.Fatalf("reuse.py printed %q: want some code objects at a freed one's address, or this tests nothing", r.stdout)
		}
		tr := r.rec.Trace
		gets := calls(tr, "cuCtxGetCurrent")
		if len(gets) != 40 {
			t.Fatalf("%d cuCtxGetCurrent calls, want 40", len(gets))
		}
		for k, c := range gets {
			want := fmt.Sprintf("made_%d", k)
			var made []string
			for _, name := range stackOf(tr, c) {
				if strings.HasPrefix(name, "made_") {
					made = append(made, name)
				}
			}
			if len(made) != 1 || made[0] != want {
				t.Errorf("call %d: made_ frames %q on its stack, want [%s]", k, made, want)
			}
		}
	})
}

// TestPythonSignalSpans: a native timer's signal handler records a span
// every 100 us while the thread writes a Python frame at every return
// (scope all): a span that lands while a frame is being written is counted
// as dropped (the shim is inside a record), never written where the frame
// then goes, and every frame is there. The loop runs until the handler has
// run a fixed number of times, however slow the machine (a 10 us timer
// used to leave a loaded machine's loop no time to run at all); the run's
// deadline is a failure.
func TestPythonSignalSpans(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libsigtick.so")
	if out, err := exec.Command(testCC(), "-O1", "-shared", "-fPIC", "-o", lib, "testdata/python/sigtick.c", "-ldl", "-lrt").CombinedOutput(); err != nil {
		t.Fatalf("compile sigtick.c: %v: %s", err, out)
	}
	const signals, periodUs = 1000, 100
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"sigframes.py", lib, fmt.Sprint(signals), fmt.Sprint(periodUs)}, WithPythonScope(ScopeAll, 0))
		var handled, n int
		if _, err := fmt.Sscanf(r.stdout, "handled %d loops %d", &handled, &n); err != nil || handled < signals || n == 0 {
			t.Fatalf("sigframes.py printed %q (stderr %s): want at least %d signals handled while the loop ran", r.stdout, r.stderr, signals)
		}
		tr := r.rec.Trace
		var spans int
		for _, ev := range tr.Events {
			if ev.Kind == trace.KindSpan {
				spans++
			}
		}
		// Every span and frame is recorded or counted as dropped (the
		// program's other frames, dropped too when the buffer fills, only
		// add to the drops), none recorded twice.
		drops := tr.TotalDrops()
		mid, leaf := len(framesOf(tr, "mid")), len(framesOf(tr, "leaf"))
		made := uint64(handled + 3*n)
		if got := uint64(spans + mid + leaf); got > made || got+drops < made || mid > n || leaf > 2*n {
			t.Errorf("%d spans, %d mid and %d leaf frames recorded, %d dropped: the handler made %d spans, the loop %d and %d frames",
				spans, mid, leaf, drops, handled, n, 2*n)
		}
		t.Logf("%d spans, %d recorded, %d dropped; %d loops", handled, spans, drops, n)
	})
}

// TestPythonCheapHelpers: a wrapper's helpers are written for their first
// --python-threshold calls; after that one whose calls are cheap (under
// --python-helper-min, 5 us here so that a loaded machine's slower calls
// stay under it) no longer is, and a dear one (50 us) still is, every call.
// The wrapper's frames are all there.
func TestPythonCheapHelpers(t *testing.T) {
	const n, threshold = 400, 50
	forEachPythonInTurn(t, func(t *testing.T, py pyInterp) {
		argv := []string{"helpers.py", fmt.Sprint(n)}
		r := runPython(t, py, argv, WithPythonScope(ScopeCUDA, threshold), WithPythonHelperMin(5*time.Microsecond))
		sameOutput(t, r, runBare(t, py, argv))
		tr := r.rec.Trace
		if got := len(calls(tr, "cuCtxGetCurrent")); got != n {
			t.Fatalf("%d cuCtxGetCurrent calls, want %d", got, n)
		}
		if got := len(framesOf(tr, "wrapper")); got != n {
			t.Errorf("%d wrapper frames, want one per call (%d)", got, n)
		}
		// Under the profile hook (3.10, 3.11) the wrapper's first call
		// writes no helpers (so already before helpers were judged).
		if got, want := len(framesOf(tr, "dear")), n-boolInt(py.minor < 12); got != want {
			t.Errorf("%d dear frames, want one per call (%d)", got, want)
		}
		// Judged at its threshold-th call once the clock's rate is known (a
		// millisecond after the first judgement): so between threshold and
		// a few times it. cheap is judged only once tiny, its own helper,
		// is gone (while tiny is written, cheap has a frame under it).
		for _, name := range []string{"tiny", "cheap", "check"} {
			if got := len(framesOf(tr, name)); got < threshold-1 || got > 5*threshold {
				t.Errorf("%d %s frames, want about %d (written until judged cheap), not %d", got, name, threshold, n)
			}
		}
		for _, f := range framesOf(tr, "dear") {
			if d := time.Duration(f.End - f.Start); d < 50*time.Microsecond {
				t.Fatalf("a dear frame lasted %v, less than its 50 us wait", d)
			}
		}
	})
}

// TestPythonJudgedHelperCallsDriver: a helper judged cheap is turned off
// only after --python-threshold more activations with nothing written, as
// code that does not lead to CUDA is, however many it had before it was
// judged: a driver call it makes soon after keeps it on its stack.
func TestPythonJudgedHelperCallsDriver(t *testing.T) {
	const threshold = 50
	forEachPythonInTurn(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"judged.py", fmt.Sprint(threshold)}, WithPythonScope(ScopeCUDA, threshold),
			WithPythonHelperMin(5*time.Microsecond))
		if r.exit != 0 || r.stdout != "done\n" {
			t.Fatalf("judged.py: exit %d, stdout %q, stderr %s", r.exit, r.stdout, r.stderr)
		}
		tr := r.rec.Trace
		if got := len(framesOf(tr, "maybe")); got > 3*threshold {
			t.Skipf("%d maybe frames: not judged cheap (a loaded machine?), nothing to test", got)
		}
		gets := calls(tr, "cuCtxGetCurrent")
		var last *trace.Event
		for _, c := range gets {
			if last == nil || c.Start > last.Start {
				last = c
			}
		}
		if last == nil {
			t.Fatal("no cuCtxGetCurrent call")
		}
		if st := stackOf(tr, last); !contains(st, "maybe") {
			t.Errorf("the last driver call's stack %q has no maybe frame", st)
		}
	})
}

// TestPythonHelperMinOff: --python-helper-min 0 writes every helper at
// every call, however cheap.
func TestPythonHelperMinOff(t *testing.T) {
	const n, threshold = 200, 20
	forEachPython(t, func(t *testing.T, py pyInterp) {
		argv := []string{"helpers.py", fmt.Sprint(n)}
		r := runPython(t, py, argv, WithPythonScope(ScopeCUDA, threshold), WithPythonHelperMin(-1))
		want := n - boolInt(py.minor < 12) // the profile hook: see TestPythonCheapHelpers
		for _, name := range []string{"tiny", "cheap", "dear"} {
			if got := len(framesOf(r.rec.Trace, name)); got != want {
				t.Errorf("%d %s frames, want %d (one per call)", got, name, want)
			}
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPythonOff: --python=off runs no bootstrap and leaves PYTHONPATH as
// it was.
func TestPythonOff(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"frames.py"}, WithPython(PythonOff))
		tr := r.rec.Trace
		for _, e := range tr.Events {
			if e.Kind == trace.KindFrame {
				t.Fatalf("a frame was recorded with --python=off")
			}
		}
		if strings.Contains(r.stderr, "cuprof: Python frames") {
			t.Errorf("a notice with --python=off: %s", r.stderr)
		}
	})
}

// TestPythonToolIDsLeftToTheProgram: on 3.12+ cuprof took sys.monitoring
// tool id 4, and a program that then asked for it got ValueError; cuprof
// takes OPTIMIZER_ID (5) now, and a program using 3 and 4 runs as bare,
// its driver call recorded under its frame.
func TestPythonToolIDsLeftToTheProgram(t *testing.T) {
	forEachPython(t, func(t *testing.T, py pyInterp) {
		r := runPython(t, py, []string{"toolids.py"})
		sameOutput(t, r, runBare(t, py, []string{"toolids.py"}))
		if r.exit != 0 || !strings.Contains(r.stdout, "tool ids done") {
			t.Fatalf("exit %d: %s%s", r.exit, r.stdout, r.stderr)
		}
		if py.minor < 12 {
			return
		}
		if !strings.Contains(r.stdout, "the program's tools saw work: True") {
			t.Errorf("output %q", r.stdout)
		}
		creates := calls(r.rec.Trace, "cuStreamCreate")
		if len(creates) != 1 || !contains(stackOf(r.rec.Trace, creates[0]), "work") {
			t.Errorf("%d creates; want one under work", len(creates))
		}
		for _, p := range r.rec.Trace.Processes {
			if p.Python != "" && !strings.Contains(p.Python, "sys.monitoring tool 5") {
				t.Errorf("cuprof's hook: %q, want tool 5", p.Python)
			}
		}
	})
}

// TestPythonHiddenCounts: what the hooks did in a frame's self time and
// did not write is counted in its event, for analysis to take out (issue
// 41). work calls tiny n times, then the driver, under --python=stacks:
// tiny's first threshold activations and cuda.check's one are pushed and
// not written (Size),
// the next one finds its code turned off (a hook call that pushed nothing,
// ID); from then on 3.12+ hands its events DISABLE and no hook runs, while
// the frame evaluation hook of 3.10/3.11 still passes each call over.
func TestPythonHiddenCounts(t *testing.T) {
	const n, threshold = 300, 100
	forEachPython(t, func(t *testing.T, py pyInterp) {
		argv := []string{"hidden.py", fmt.Sprint(n)}
		r := runPython(t, py, argv, WithPython("stacks"), WithPythonScope(ScopeCUDA, threshold))
		sameOutput(t, r, runBare(t, py, argv))
		tr := r.rec.Trace
		work := framesOf(tr, "work")
		if len(work) != 1 {
			t.Fatalf("%d work frames, want 1", len(work))
		}
		if len(framesOf(tr, "tiny")) != 0 {
			t.Errorf("tiny written in stacks mode")
		}
		w := work[0]
		wantLone := uint64(1)
		if py.minor < 12 {
			wantLone = n - threshold
		}
		if w.Size != threshold+1 || w.Aux != 0 || w.ID != wantLone { // + cuda.check's
			t.Errorf("work counts %d hidden Python activations, %d C-level, %d hook calls that pushed nothing; want %d, 0, %d",
				w.Size, w.Aux, w.ID, threshold+1, wantLone)
		}
	})
}
