package flame

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

var update = golden.NewFlag("update", "rewrite the golden files under testdata")

func readFixture(t testing.TB, name string) *trace.Trace {
	t.Helper()
	return tracetest.ReadFile(t, filepath.Join("testdata", name))
}

// render is the golden form: the profile's text rendering and the warnings.
func render(t testing.TB, p *profile.Profile, warnings []Warning) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, p); err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	update.Check(t, filepath.Join("testdata", name), []byte(got))
}

// checkProfile validates p and that it survives pprof's encoding.
func checkProfile(t *testing.T, p *profile.Profile) {
	t.Helper()
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatalf("write: %v", err)
	}
	q, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parse back: %v", err)
	}
	var a, b bytes.Buffer
	WriteText(&a, p)
	WriteText(&b, q)
	if a.String() != b.String() {
		t.Errorf("profile changed through encoding:\n%s", golden.Diff(a.String(), b.String()))
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		golden, fixture string
		opts            []Option
	}{
		{"nested.api.golden", "nested.txt", nil},
		{"nested.bythread.golden", "nested.txt", []Option{WithThreadRoots()}},
		{"nested.focus.golden", "nested.txt", []Option{WithFocus(regexp.MustCompile(`^Buffer\.alloc$`))}},
		{"threads.api.golden", "threads.txt", nil},
		{"threads.bythread.golden", "threads.txt", []Option{WithThreadRoots()}},
		{"unmatched.api.golden", "unmatched.txt", nil},
		{"memory.api.golden", "memory.txt", nil},
		{"memory.memory.golden", "memory.txt", []Option{WithView(ViewMemory)}},
		{"memory.lifetime.golden", "memory.txt", []Option{WithView(ViewLifetime)}},
		{"nested.memory.golden", "nested.txt", []Option{WithView(ViewMemory)}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			p, w, err := Build(readFixture(t, tc.fixture), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkProfile(t, p)
			checkGolden(t, tc.golden, render(t, p, w))
		})
	}
}

// sum returns the total of value i over samples with a frame named fn.
func sum(p *profile.Profile, fn string, i int) int64 {
	var n int64
	for _, s := range p.Sample {
		for _, l := range s.Location {
			if l.Line[0].Function.Name == fn {
				n += s.Value[i]
				break
			}
		}
	}
	return n
}

// TestNestedTimes checks the arithmetic the golden file encodes.
func TestNestedTimes(t *testing.T) {
	p, w, err := Build(readFixture(t, "nested.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 0 {
		t.Errorf("warnings on a well-nested trace: %v", w)
	}
	// step is 20000 ns inclusive, less the whole cost (AddedNs, 28 ns) of
	// each of the 6 calls inside
	if got, want := sum(p, "step", vTime), int64(20000-6*28); got != want {
		t.Errorf("step inclusive time = %d, want %d", got, want)
	}
	// the Buffer.alloc spans: 5000 ns around 2 calls, 3000 ns around 1
	if got, want := sum(p, "Buffer.alloc", vTime), int64(5000-2*28+3000-28); got != want {
		t.Errorf("Buffer.alloc inclusive time = %d, want %d", got, want)
	}
	// the driver calls themselves lose InsideNs (12 ns) each
	if got, want := sum(p, "cuMemAllocAsync", vTime), int64(2*(1000-12)); got != want {
		t.Errorf("cuMemAllocAsync time = %d, want %d", got, want)
	}
	if got := sum(p, "cuCtxGetCurrent", vTime); got != 0 {
		t.Errorf("a 5 ns call less 12 ns = %d, want 0 (clamped)", got)
	}
	if got := sum(p, "my_alloc", vCalls); got != 2 {
		t.Errorf("calls under my_alloc = %d, want 2", got)
	}
	var sawComment bool
	for _, c := range p.Comments {
		sawComment = sawComment || strings.Contains(c, "12 ns per call")
	}
	if !sawComment {
		t.Errorf("comments do not state the subtracted cost: %q", p.Comments)
	}
	for _, s := range p.Sample {
		for k := range s.Label {
			if k == "handle" || k == "stream" || k == "id" {
				t.Errorf("label %q: handles and IDs must not be labels", k)
			}
		}
		if r := s.Label["result"]; len(r) > 0 && r[0] == "CUDA_SUCCESS" {
			t.Errorf("result label on a successful call")
		}
	}
	if len(p.Mapping) != 1 || p.Mapping[0].File != "/opt/lib/libfoo.so" {
		t.Errorf("mappings = %v, want libfoo.so only", p.Mapping)
	}
}

func TestUnmatchedWarnings(t *testing.T) {
	_, w, err := Build(readFixture(t, "unmatched.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, x := range w {
		all = append(all, x.String())
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{"event 0: pop with no open range", "event 1: end of unknown range id 42", "event 11: range \"never-closed\" never closed"} {
		if !strings.Contains(text, want) {
			t.Errorf("no warning %q in:\n%s", want, text)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	if _, _, err := Build(nil); !errors.Is(err, ErrNoTrace) {
		t.Errorf("Build(nil) = %v, want ErrNoTrace", err)
	}
	tr := &trace.Trace{Strings: []string{""}, Events: []trace.Event{
		{Kind: trace.KindCall, API: trace.APIInit, Start: 100, End: 110},
		{Kind: trace.KindCall, API: trace.APIInit, Start: 50, End: 60},
	}}
	if _, _, err := Build(tr); !errors.Is(err, ErrUnsorted) {
		t.Errorf("Build(unsorted) = %v, want ErrUnsorted", err)
	}
	if _, _, err := Build(&trace.Trace{}, WithView(View(9))); err == nil {
		t.Error("Build with an unknown view: no error")
	}
	if _, err := ParseView("heap"); err == nil {
		t.Error(`ParseView("heap"): no error`)
	}
	// an empty trace is a valid, empty profile
	p, _, err := Build(&trace.Trace{})
	if err != nil {
		t.Fatal(err)
	}
	checkProfile(t, p)
}

func TestWarningCap(t *testing.T) {
	tr := &trace.Trace{Strings: []string{""}}
	for i := 0; i < 3*MaxWarnings; i++ {
		tr.Events = append(tr.Events, trace.Event{Kind: trace.KindRangePop, PID: 1, TID: 1, Start: int64(i)})
	}
	_, w, err := Build(tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != MaxWarnings+1 || !strings.Contains(w[MaxWarnings].Reason, "200 more") {
		t.Errorf("got %d warnings, last %v; want %d and a count of the rest", len(w), w[len(w)-1], MaxWarnings+1)
	}
}

// TestPythonFrames checks that driver calls sit under the Python frames that
// made them, that frames carry their file and line, and that their self time
// (the analysis' cost subtraction) is their own sample.
func TestPythonFrames(t *testing.T) {
	tr := tracetest.PythonTrace()
	for _, v := range []View{ViewAPI, ViewMemory, ViewLifetime} {
		t.Run(v.String(), func(t *testing.T) {
			p, w, err := Build(tr, WithView(v))
			if err != nil {
				t.Fatal(err)
			}
			if len(w) != 0 {
				t.Errorf("warnings on a well-nested trace: %v", w)
			}
			checkProfile(t, p)
			checkGolden(t, "python."+v.String()+".golden", render(t, p, w))
		})
	}
	p, _, err := Build(tr)
	if err != nil {
		t.Fatal(err)
	}
	stack := func(s *profile.Sample) string {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			names = append(names, s.Location[i].Line[0].Function.Name)
		}
		return strings.Join(names, ";")
	}
	self := map[string]int64{}
	for _, s := range p.Sample {
		self[stack(s)] += s.Value[vTime]
	}
	// Device.create_stream: 17000 ns, less 4 frames' entry and exit (8 x 20
	// ns) and one call (30 ns) recorded inside: 16810 inclusive; less the
	// frames directly inside (1500, 3000-30, 1000, 4000)
	for st, want := range map[string]int64{
		"<module>;main;step;Device.create_stream":                                        16810 - 1500 - 2970 - 1000 - 4000,
		"<module>;main;step;Device.create_stream;CFuncPtr cuStreamCreate":                2970 - 1990,
		"<module>;main;step;Device.create_stream;CFuncPtr cuStreamCreate;cuStreamCreate": 2000 - 10,
		"<module>;main;step;Device.create_stream;StreamOptions.__init__":                 1500,
		"<module>;main;step;gen;cuMemAlloc":                                              600 - 10,
		"<module>;main;step;gen":                                                         (1000 - 30 - 590) + (1000 - 30 - 390),
	} {
		if self[st] != want {
			t.Errorf("self time of %s = %d, want %d", st, self[st], want)
		}
	}
	var sawFile bool
	for _, fn := range p.Function {
		if fn.Name == "Device.create_stream" {
			sawFile = true
			if fn.Filename != "cuda/core/_device.py" || fn.StartLine != 120 || fn.SystemName != "cuda.core._device.Device.create_stream" {
				t.Errorf("frame function %+v: want file cuda/core/_device.py, line 120, module-qualified system name", fn)
			}
		}
		if fn.Name == "CFuncPtr cuStreamCreate" && fn.Filename != "_ctypes" {
			t.Errorf("C callable %+v: want its module as the file", fn)
		}
	}
	if !sawFile {
		t.Error("no function for the Device.create_stream frame")
	}
}

// TestViewMetadata: each view's period type names its unit with period 1
// (nothing is sampled), and the memory and lifetime views say in their
// comments what a sample is; the lifetime view gives no duration, which
// pprof would turn into a share over 100 %.
func TestViewMetadata(t *testing.T) {
	tr := readFixture(t, "memory.txt")
	for view, want := range map[View]string{ViewAPI: "time/nanoseconds", ViewMemory: "space/bytes", ViewLifetime: "lifetime/nanoseconds"} {
		p, _, err := Build(tr, WithView(view))
		if err != nil {
			t.Fatal(err)
		}
		if p.PeriodType == nil || p.PeriodType.Type+"/"+p.PeriodType.Unit != want || p.Period != 1 {
			t.Errorf("%v: period type %v period %d, want %s 1", view, p.PeriodType, p.Period, want)
		}
		said := strings.Join(p.Comments, "\n")
		if view != ViewAPI && !strings.Contains(said, "a sample is every") {
			t.Errorf("%v: comments do not say what a sample is: %q", view, said)
		}
		if (view == ViewLifetime) != (p.DurationNanos == 0) {
			t.Errorf("%v: duration %d", view, p.DurationNanos)
		}
	}
}
