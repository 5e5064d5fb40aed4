package record

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// seqs lists, in order, the SEQ of every recorded cuGetErrorName(SEQ) of
// testdata/capture.c.
func seqs(tr *trace.Trace) []int {
	var out []int
	for _, e := range tr.Events {
		if e.Kind == trace.KindCall && e.API == trace.APIGetErrorName {
			out = append(out, int(e.Flags))
		}
	}
	return out
}

func captures(tr *trace.Trace) []trace.Event {
	var out []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.KindCapture {
			out = append(out, e)
		}
	}
	return out
}

// inside reports whether t lies in one of the capture ranges.
func inside(caps []trace.Event, t int64) bool {
	for _, c := range caps {
		if t >= c.Start && t <= c.End {
			return true
		}
	}
	return false
}

func TestCaptureProfilerAPIRecordsExactlyTheRanges(t *testing.T) {
	bins, _ := programs(t)
	for _, count := range []int{0, 1} {
		t.Run(fmt.Sprintf("count=%d", count), func(t *testing.T) {
			res, out := record(t, []string{filepath.Join(bins, "capture"), "api"},
				WithCapture(Capture{Range: CaptureProfilerAPI, Count: count}))
			tr := res.Trace
			want := "0 1 2 3 4 100 101 102"
			wantCaps := 2
			if count == 1 {
				want, wantCaps = "0 1 2 3 4", 1
			}
			if got := fmt.Sprint(seqs(tr)); got != "["+want+"]" {
				t.Errorf("recorded cuGetErrorName calls %s, want [%s] (output %q)", got, want, out)
			}
			caps := captures(tr)
			if len(caps) != wantCaps {
				t.Fatalf("%d capture ranges, want %d", len(caps), wantCaps)
			}
			for _, c := range caps {
				if tr.String(c.Name) != "cuProfilerStart" {
					t.Errorf("capture range opened by %q, want cuProfilerStart", tr.String(c.Name))
				}
			}
			if want := (Capture{Range: CaptureProfilerAPI, Count: count}).String(); tr.Meta.CaptureRange != want {
				t.Errorf("Meta.CaptureRange %q", tr.Meta.CaptureRange)
			}
			// Inside: exactly the calls made there. Outside: only the calls
			// that keep objects and contexts, the profiler calls never.
			counts := map[string]int{}
			for _, e := range tr.Events {
				if e.Kind != trace.KindCall {
					continue
				}
				in := inside(caps, e.Start)
				if !in && !e.API.KeptOutsideCapture() {
					t.Errorf("%v at %d recorded outside every capture range", e.API, e.Start)
				}
				if e.API == trace.APIProfilerStart || e.API == trace.APIProfilerStop {
					t.Errorf("%v recorded as a call", e.API)
				}
				key := e.API.String()
				if !in {
					key += " outside"
				}
				counts[key]++
			}
			wantCounts := map[string]int{"cuGetErrorName": len(strings.Fields(want)), "cuStreamQuery": 5,
				"cuStreamDestroy": 1, "cuStreamCreate outside": 2, "cuStreamDestroy outside": 1,
				"cuDevicePrimaryCtxRetain outside": 1, "cuCtxSetCurrent outside": 1}
			if fmt.Sprint(counts) != fmt.Sprint(wantCounts) {
				t.Errorf("calls %v\nwant %v", counts, wantCounts)
			}
		})
	}
}

func TestCaptureNVTXRangesNestedAndRepeated(t *testing.T) {
	bins, _ := programs(t)
	for _, tc := range []struct {
		spec, seqs string
		ranges     int
		events     string // NVTX events recorded
	}{
		{"nvtx:step", "0 1 2 3 4 5", 3, "push step,push inner,push step,pop,pop,pop,start step,end,push step,pop"},
		{"nvtx:step@train", "50", 1, "push step@train,pop@train"},
		{"nvtx:nothing", "", 0, ""},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			c, err := ParseCaptureRange(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			res, out := record(t, []string{filepath.Join(bins, "capture"), "nvtx"}, WithCapture(c))
			if strings.TrimSpace(out) != "ok" {
				t.Fatalf("output %q", out)
			}
			tr := res.Trace
			var got []string
			for _, s := range seqs(tr) {
				got = append(got, strconv.Itoa(s))
			}
			if strings.Join(got, " ") != tc.seqs {
				t.Errorf("recorded cuGetErrorName calls %v, want %s", got, tc.seqs)
			}
			caps := captures(tr)
			if len(caps) != tc.ranges {
				t.Errorf("%d capture ranges, want %d", len(caps), tc.ranges)
			}
			var nv []string
			for _, e := range tr.Events {
				switch e.Kind {
				case trace.KindRangePush, trace.KindRangePop, trace.KindRangeStart, trace.KindRangeEnd, trace.KindMark:
					s := e.Kind.String()
					if n := tr.String(e.Name); n != "" {
						s += " " + n
					}
					if d := tr.String(e.Domain); d != "" {
						s += "@" + d
					}
					nv = append(nv, s)
					if !inside(caps, e.Start) {
						t.Errorf("%s at %d outside every capture range", s, e.Start)
					}
				}
			}
			if strings.Join(nv, ",") != tc.events {
				t.Errorf("NVTX events %s\nwant %s", strings.Join(nv, ","), tc.events)
			}
		})
	}
}

// TestCaptureWindow checks --delay and --duration by structure, not by
// time: the calls recorded are one unbroken run of the program's calls,
// inside the one window range, none of those that ended before the
// window's start (the program reads the window from its environment) nor
// of those made after the shim's window thread closed it and ended. The
// delay is counted from just before the program starts: a machine so slow
// that the program's first call ends after it is tried again with a longer
// delay.
func TestCaptureWindow(t *testing.T) {
	bins, _ := programs(t)
	delays := []time.Duration{time.Second, 5 * time.Second, 20 * time.Second}
	for i, delay := range delays {
		res, out := record(t, []string{filepath.Join(bins, "capture"), "window"},
			WithCapture(Capture{Delay: delay, Duration: 300 * time.Millisecond}))
		var made, before, after int
		if _, err := fmt.Sscanf(out, "made %d before %d after %d", &made, &before, &after); err != nil {
			t.Fatalf("output %q", out)
		}
		if before == 0 {
			if i < len(delays)-1 {
				t.Logf("with a %v delay the program's first call ended inside the window: again with %v", delay, delays[i+1])
				continue
			}
			t.Fatalf("with a %v delay the program's first call ended inside the window", delay)
		}
		tr := res.Trace
		s := seqs(tr)
		caps := captures(tr)
		if len(caps) != 1 || tr.String(caps[0].Name) != "window" {
			t.Fatalf("capture ranges %v, want one opened by the window", caps)
		}
		if len(s) == 0 {
			t.Fatal("nothing recorded in the window")
		}
		if s[0] < before || s[len(s)-1] >= made-after {
			t.Errorf("recorded calls %d..%d of 0..%d: the %d that ended before the window and the last %d, made after it closed, should not be",
				s[0], s[len(s)-1], made-1, before, after)
		}
		for i := 1; i < len(s); i++ {
			if s[i] != s[i-1]+1 {
				t.Fatalf("recorded calls skip from %d to %d: a window is one unbroken run", s[i-1], s[i])
			}
		}
		for _, e := range tr.Events {
			if e.Kind == trace.KindCall && e.API == trace.APIGetErrorName && !inside(caps, e.Start) {
				t.Fatalf("call %d at %d outside the window %d..%d", e.Flags, e.Start, caps[0].Start, caps[0].End)
			}
		}
		return
	}
}

// TestCaptureCallInFlightAtTheEdges: a call running when its range closes
// is recorded whole; one running when a range opens is not recorded. The
// program closes and opens the ranges once the thread making the call has
// spun inside it for a while (its CPU time, not a nap: a loaded machine may
// not run it for a long time); the call lasts 2 s, the program's margin for
// the range's edge to come while it runs.
func TestCaptureCallInFlightAtTheEdges(t *testing.T) {
	bins, _ := programs(t)
	t.Setenv("CUPROF_SIM_COST_SCALE", "1")
	t.Setenv("CUPROF_SIM_COSTS", "cuCtxSynchronize=2000000000")
	res, out := record(t, []string{filepath.Join(bins, "capture"), "midcall"},
		WithCapture(Capture{Range: CaptureProfilerAPI}))
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("output %q", out)
	}
	tr := res.Trace
	caps := captures(tr)
	if len(caps) != 2 {
		t.Fatalf("%d capture ranges, want 2", len(caps))
	}
	var syncs []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.KindCall && e.API == trace.APICtxSynchronize {
			syncs = append(syncs, e)
		}
	}
	if len(syncs) != 1 {
		t.Fatalf("%d cuCtxSynchronize recorded, want 1 (the one the first range's end cut through)", len(syncs))
	}
	s := syncs[0]
	if !(s.Start > caps[0].Start && s.Start < caps[0].End && s.End > caps[0].End) {
		t.Errorf("cuCtxSynchronize %d..%d, range %d..%d: want it started inside and ended after", s.Start, s.End, caps[0].Start, caps[0].End)
	}
	if s.Duration() < 1.9e9 {
		t.Errorf("cuCtxSynchronize lasted %d ns: the record is not the whole call", s.Duration())
	}
	if fmt.Sprint(seqs(tr)) != "[8]" {
		t.Errorf("recorded cuGetErrorName %v, want [8]", seqs(tr))
	}
	if tr.TotalDrops() != 0 {
		t.Errorf("%d drops (bad records count as drops)", tr.TotalDrops())
	}
}

func TestParseCaptureRange(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"", "", ""},
		{"none", "", ""},
		{"profiler-api", "profiler-api", ""},
		{"cudaProfilerApi", "profiler-api", ""},
		{"nvtx:step", "nvtx:step", ""},
		{"nvtx:a@b@dom", "nvtx:a@b@dom", ""},
		{"nvtx:", "", "has no name"},
		{"nvtx:@d", "", "has no name"},
		{"nvtx:x@", "", "nothing after @"},
		{"cupti", "", "use profiler-api or nvtx:NAME[@DOMAIN]"},
	} {
		c, err := ParseCaptureRange(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseCaptureRange(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || c.String() != tc.want {
			t.Errorf("ParseCaptureRange(%q) = %q, %v; want %q", tc.in, c.String(), err, tc.want)
		}
	}
}

func FuzzParseCaptureRange(f *testing.F) {
	for _, s := range []string{"profiler-api", "nvtx:step", "nvtx:a@b", "nvtx:", "nvtx:x@", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCaptureRange(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			return
		}
		if err := c.check(); err != nil {
			t.Errorf("ParseCaptureRange(%q) accepted what check refuses: %v", s, err)
		}
		if c.Range == CaptureNVTX {
			back, err := ParseCaptureRange(c.String())
			if err != nil || back != c {
				t.Errorf("%q -> %+v -> %q -> %+v, %v", s, c, c.String(), back, err)
			}
		}
	})
}
