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
	// step is 20000 ns inclusive, less 12 ns for each of the 6 calls inside
	// but the 10 ns and 5 ns ones, which clamp at 0
	if got, want := sum(p, "step", vTime), int64(20000-4*12-10-5); got != want {
		t.Errorf("step inclusive time = %d, want %d", got, want)
	}
	// the first Buffer.alloc span: 5000 ns, 1100 ns in calls: 3900 self
	if got, want := sum(p, "Buffer.alloc", vTime), int64(5000-2*12+3000-12); got != want {
		t.Errorf("Buffer.alloc inclusive time = %d, want %d", got, want)
	}
	if got := sum(p, "cuCtxGetCurrent", vTime); got != 0 {
		t.Errorf("a 5 ns call less 12 ns = %d, want 0 (clamped)", got)
	}
	if got := sum(p, "libfoo.so:my_alloc", vCalls); got != 2 {
		t.Errorf("calls under libfoo.so:my_alloc = %d, want 2", got)
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
	for _, want := range []string{"pop with no open push range", "never started", "still open when the push range", "not properly nested", "never closed"} {
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
