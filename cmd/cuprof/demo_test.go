package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/internal/seed"
	"github.com/cuprof/cuprof/trace"
)

// TestDemoChild is the recorded program of TestDemo (a no-op otherwise):
// this test binary stands in for "cuprof demo --run-example".
func TestDemoChild(t *testing.T) {
	n := os.Getenv("CUPROF_DEMO_TEST_CHILD")
	if n == "" {
		t.Skip("only runs as the child of TestDemo")
	}
	if err := seed.TempBuffer([]string{"-n", n, "-warmup", "2"}, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	old := demoChild
	t.Cleanup(func() { demoChild = old })
	demoChild = func(_ *globalOptions, _ string, calls int) ([]string, error) {
		return []string{os.Args[0], "-test.run=^TestDemoChild$", "-test.count=1"}, nil
	}
	t.Setenv("CUPROF_DEMO_TEST_CHILD", "30")
	dir := filepath.Join(t.TempDir(), "demo")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"demo", "--sim", "--dir", dir, "-n", "30"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"running examples/tempbuffer on cuprof's simulated driver",
		"tempbuffer (set+stream+alloc+destroy) thr=0 +sync",
		"== cuprof report ",
		"CUDA driver API summary",
		"== flame graph ==",
		"go tool pprof -http=: " + filepath.Join(dir, "tempbuffer.pb.gz"),
		"== cuprof lint ",
		"cuprof lint: ",
		"ERROR pool-trim",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "== cuprof report"), strings.Index(out, "== cuprof lint"); i < 0 || j < i {
		t.Error("the lint findings do not follow the report")
	}
	checkDemoPython(t, out, dir)

	// The driver calls nest inside cudawrap's spans.
	tr, err := trace.ReadFile(filepath.Join(dir, "tempbuffer.cuprof"))
	if err != nil {
		t.Fatal(err)
	}
	var allocSpans, nested int
	for i, ev := range tr.Events {
		if ev.Kind != trace.KindSpan || tr.String(ev.Name) != "Buffer.Alloc" {
			continue
		}
		allocSpans++
		for _, c := range tr.Events[i:] {
			if c.Start > ev.End {
				break
			}
			if c.Kind == trace.KindCall && c.TID == ev.TID && c.API.String() == "cuMemAllocAsync" && c.Start >= ev.Start && c.End <= ev.End {
				nested++
				break
			}
		}
	}
	if allocSpans == 0 || nested != allocSpans {
		t.Errorf("%d Buffer.Alloc spans, %d with a cuMemAllocAsync inside", allocSpans, nested)
	}

	// The threshold-0 variants that give memory back (all but a direct
	// allocation without a synchronize) pay for it in every allocation:
	// the pool handed its memory back at the synchronize (or the stream's
	// destroy), so the next cuMemAllocAsync maps it again. Their median
	// cuMemAllocAsync is compared with their threshold-max twin's, which
	// they beat by 10x or more. Medians, not the flame graph's totals: the
	// simulated driver spins on the wall clock, and a loaded machine's
	// stall of a few milliseconds in one call (seen: 8 ms in a twin whose
	// whole variant takes 0.6 ms) widens a variant's total past the other's.
	f, err := os.Open(filepath.Join(dir, "tempbuffer.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]bool{}
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			if name := loc.Line[0].Function.Name; strings.Contains(name, " thr=") {
				variants[name] = true
				break
			}
		}
	}
	if len(variants) != 8 {
		t.Fatalf("variants in the profile: %v", variants)
	}
	allocs := map[string][]int64{} // cuMemAllocAsync durations, by the variant span around them
	for i, ev := range tr.Events {
		if ev.Kind != trace.KindSpan || !strings.Contains(tr.String(ev.Name), " thr=") {
			continue
		}
		name := tr.String(ev.Name)
		for _, c := range tr.Events[i:] {
			if c.Start > ev.End {
				break
			}
			if c.Kind == trace.KindCall && c.TID == ev.TID && c.API.String() == "cuMemAllocAsync" && c.End <= ev.End && c.Result == 0 {
				allocs[name] = append(allocs[name], c.Duration())
			}
		}
	}
	for _, name := range []string{
		"tempbuffer (set+stream+alloc+destroy) thr=0",
		"tempbuffer (set+stream+alloc+destroy) thr=0 +sync",
		"direct alloc on a stream thr=0 +sync",
	} {
		twin := strings.Replace(name, "thr=0", "thr=max", 1)
		m, mt := medianNs(allocs[name]), medianNs(allocs[twin])
		if len(allocs[name]) == 0 || len(allocs[twin]) == 0 || m < 3*mt {
			t.Errorf("%q: median cuMemAllocAsync %d ns over %d calls, not 3x its threshold-max twin's %d ns over %d",
				name, m, len(allocs[name]), mt, len(allocs[twin]))
		}
	}
}

// medianNs returns the upper median of d, 0 when empty.
func medianNs(d []int64) int64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// checkDemoPython checks the Python seed's part of the demo's output: after
// the Go example's lint findings, when a python3 is installed.
func checkDemoPython(t *testing.T, out, dir string) {
	t.Helper()
	if _, err := seed.Python(""); err != nil {
		if !strings.Contains(out, "(no Python seed: ") {
			t.Errorf("no python3 (%v) and the demo does not say so:\n%s", err, out)
		}
		return
	}
	i := strings.Index(out, "== examples/python/wrappers_ctypes.py with ")
	if i < 0 || i < strings.Index(out, "== cuprof lint") {
		t.Fatalf("no Python seed after the Go example's lint findings:\n%s", out)
	}
	py := out[i:]
	for _, want := range []string{
		"lean: stream_create + stream_destroy",
		"heavy: mr.allocate(10, stream=s) + close(s)",
		"heavy_stream - lean_stream: +",
		"written to " + filepath.Join(dir, "wrappers.cuprof"),
		"Python frames: ",
		"== cuprof report " + filepath.Join(dir, "wrappers.cuprof") + ": the wrapper frames ==",
		"the whole report: cuprof report " + filepath.Join(dir, "wrappers.cuprof"),
		";cuStreamCreate",
		"the heaviest stacks (time; root first):",
		"go tool pprof -http=: " + filepath.Join(dir, "wrappers.pb.gz"),
	} {
		if !strings.Contains(py, want) {
			t.Errorf("Python part lacks %q:\n%s", want, py)
		}
	}
	tr, err := trace.ReadFile(filepath.Join(dir, "wrappers.cuprof"))
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	byName := map[string]int{} // frames by their code's name
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.KindFrame {
			frames++
			if int(e.Code) < len(tr.Code) {
				byName[tr.String(tr.Code[e.Code].Name)]++
			}
		}
	}
	if frames == 0 {
		if !strings.Contains(py, "Python frames: none recorded") || !strings.Contains(py, "Python wrapper frames: none") {
			t.Errorf("no frames in the trace and the demo does not say so:\n%s", py)
		}
		return
	}
	if !strings.Contains(py, "Python wrapper frames") {
		t.Errorf("Python part with %d frames lacks its wrapper frames table:\n%s", frames, py)
	}
	// The wrapper's frames are in the trace, each variant's every call. (Not
	// read from the printed tables: they show the costliest rows only, and
	// on a loaded machine a preempted frame can push a variant out of them.)
	for _, name := range []string{"heavy_stream", "lean_stream", "handle_return", "check_or_create_options"} {
		if byName[name] < 30 {
			t.Errorf("%d frames of %s in the trace, want one a call (30 calls per variant); frames by name: %v", byName[name], name, byName)
		}
	}
}

func TestDemoWithoutPython(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	old := demoChild
	t.Cleanup(func() { demoChild = old })
	demoChild = func(_ *globalOptions, _ string, calls int) ([]string, error) {
		return []string{os.Args[0], "-test.run=^TestDemoChild$", "-test.count=1"}, nil
	}
	t.Setenv("CUPROF_DEMO_TEST_CHILD", "5")
	var stdout, stderr bytes.Buffer
	dir := filepath.Join(t.TempDir(), "demo")
	if err := run([]string{"demo", "--sim", "--dir", dir, "-n", "5", "--python", "no-such-python-cuprof"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "(no Python seed: no python3 found on PATH (no-such-python-cuprof); pass --python PATH)") {
		t.Errorf("output:\n%s", stdout.String())
	}
	stdout.Reset()
	if err := run([]string{"demo", "--sim", "--dir", dir, "-n", "5", "--python", "none"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("demo: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stdout.String(), "wrappers_ctypes") || strings.Contains(stdout.String(), "Python seed") {
		t.Errorf("--python none still ran the Python seed:\n%s", stdout.String())
	}
}

func TestDemoBadCalls(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run([]string{"demo", "-n", strconv.Itoa(-1)}, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "invalid -n") {
		t.Errorf("error %v", err)
	}
	if err := run([]string{"demo", "extra"}, nil, &stdout, &stderr); err == nil {
		t.Error("demo accepted an argument")
	}
}

// TestDemoFromAClone: the demo as a new user runs it, in a clone with no
// --dir: the example is built to a real file with symbols, so lint's
// where-lines name the thread tempbuffer and symbolized callers; no line
// reads like an error; nothing is left in the temporary directory.
func TestDemoFromAClone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and records a program")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	wd, _ := os.Getwd()
	root := filepath.Join(wd, "..", "..")
	// Run from the clone's root, as README says (go run ./cmd/cuprof demo);
	// --dir inside a test dir so the clone stays clean.
	dir := filepath.Join(t.TempDir(), "cuprof-demo")
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var stdout, stderr bytes.Buffer
	if err := run([]string{"demo", "--sim", "--dir", dir, "-n", "10"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String() + stderr.String()
	if !strings.Contains(out, "built examples/tempbuffer from") {
		t.Errorf("the example was not built from the clone:\n%s", out)
	}
	if st, err := os.Stat(filepath.Join(dir, "tempbuffer")); err != nil || st.Mode()&0o100 == 0 {
		t.Errorf("no executable example in %s: %v", dir, err)
	}
	var where []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "where:") {
			where = append(where, line)
		}
		if strings.Contains(line, "CUDA_ERROR") || strings.Contains(strings.ToLower(line), "traceback") {
			t.Errorf("a line that reads like a failure: %q", line)
		}
	}
	if len(where) == 0 {
		t.Fatalf("no lint where-lines:\n%s", out)
	}
	for _, w := range where {
		if !strings.Contains(w, "(tempbuffer)") || !regexp.MustCompile(`caller cw_\w+ \(0x[0-9a-f]+\)`).MatchString(w) {
			t.Errorf("where-line not symbolized or not the example's thread: %q", w)
		}
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the demo left %v in the temporary directory", names)
	}
}
