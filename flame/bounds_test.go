package flame

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// deepTrace is depth NVTX ranges pushed one inside the other and never
// popped, a call inside each (issue 47, item 6).
func deepTrace(depth int) *trace.Trace {
	st := trace.NewStringTable()
	step := st.ID("step")
	t := &trace.Trace{Processes: []trace.Process{{PID: 1}}}
	ts := int64(100)
	for range depth {
		t.Events = append(t.Events,
			trace.Event{Kind: trace.KindRangePush, PID: 1, TID: 1, Device: trace.NoDevice, Start: ts, End: ts, Name: step},
			trace.Event{Kind: trace.KindCall, API: trace.APICtxGetCurrent, PID: 1, TID: 1, Device: trace.NoDevice,
				Start: ts + 10, End: ts + 20, Handle: 0xc0})
		ts += 40
	}
	t.Strings = st.Strings
	return t
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDeepStacksAreCut: a stack of 10,000 ranges costs what one of
// MaxStackDepth does, not the sum of every depth's copy: building the
// profile of twice the depth allocates at most 2.5 times as much (the
// quadratic copies made it four times), no sample's stack is deeper than
// MaxStackDepth ranges plus the cut frame, and every call is counted, those
// past the depth under the cut frame.
func TestDeepStacksAreCut(t *testing.T) {
	build := func(depth int) (uint64, int64, int, []string) {
		var calls int64
		var deepest int
		var comments []string
		bytes := allocated(func() {
			p, _, err := Build(deepTrace(depth))
			if err != nil {
				t.Fatal(err)
			}
			comments = p.Comments
			for _, s := range p.Sample {
				calls += s.Value[0]
				deepest = max(deepest, len(s.Location))
				if len(s.Location) > MaxStackDepth+1 && s.Location[len(s.Location)-MaxStackDepth-1].Line[0].Function.Name != CutFrames {
					t.Fatalf("a stack of %d locations without the cut frame at depth %d", len(s.Location), MaxStackDepth+1)
				}
			}
		})
		return bytes, calls, deepest, comments
	}
	b1, calls1, deep1, comments := build(5_000)
	b2, calls2, deep2, _ := build(10_000)
	t.Logf("allocated %d B for 5,000 deep, %d B for 10,000; deepest stacks %d and %d locations", b1, b2, deep1, deep2)
	if calls1 != 5_000 || calls2 != 10_000 {
		t.Errorf("calls %d and %d, want 5000 and 10000", calls1, calls2)
	}
	// api, cut frame and MaxStackDepth ranges
	if deep2 > MaxStackDepth+2 || deep1 != deep2 {
		t.Errorf("deepest stacks %d and %d locations, want at most %d", deep1, deep2, MaxStackDepth+2)
	}
	if b2 > b1*5/2 {
		t.Errorf("twice as deep allocated %.2f times the bytes: stacks are copied per depth", float64(b2)/float64(b1))
	}
	if !strings.Contains(strings.Join(comments, "\n"), fmt.Sprintf("%d ranges and Python frames nested deeper than %d", 5_000-MaxStackDepth, MaxStackDepth)) {
		t.Errorf("comments do not count the cut scopes:\n%s", strings.Join(comments, "\n"))
	}
}

// TestDistinctNamesShareAFrame: past MaxScopeNames distinct range names, the
// ranges share one OtherNames frame: the profile has at most MaxScopeNames
// range frames plus it, every call is counted and the comments say how
// many ranges were merged.
func TestDistinctNamesShareAFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a profile of 70,000 distinct range names")
	}
	const n = MaxScopeNames + 4_464
	st := trace.NewStringTable()
	tr := &trace.Trace{Processes: []trace.Process{{PID: 1}}}
	ts := int64(100)
	for i := range n {
		tr.Events = append(tr.Events,
			trace.Event{Kind: trace.KindRangePush, PID: 1, TID: 1, Device: trace.NoDevice, Start: ts, End: ts, Name: st.ID(fmt.Sprint("step ", i))},
			trace.Event{Kind: trace.KindCall, API: trace.APICtxGetCurrent, PID: 1, TID: 1, Device: trace.NoDevice,
				Start: ts + 10, End: ts + 20, Handle: 0xc0},
			trace.Event{Kind: trace.KindRangePop, PID: 1, TID: 1, Device: trace.NoDevice, Start: ts + 30, End: ts + 30})
		ts += 40
	}
	tr.Strings = st.Strings
	p, _, err := Build(tr)
	if err != nil {
		t.Fatal(err)
	}
	var calls int64
	for _, s := range p.Sample {
		calls += s.Value[0]
	}
	names := map[string]bool{}
	for _, f := range p.Function {
		names[f.Name] = true
	}
	if calls != n {
		t.Errorf("%d calls, want %d", calls, n)
	}
	// the range names, OtherNames and the API
	if len(names) != MaxScopeNames+2 || !names[OtherNames] {
		t.Errorf("%d functions (with %q: %v), want %d", len(names), OtherNames, names[OtherNames], MaxScopeNames+2)
	}
	if want := fmt.Sprintf("%d more ranges and frames are shown as %q", n-MaxScopeNames, OtherNames); !strings.Contains(strings.Join(p.Comments, "\n"), want) {
		t.Errorf("comments do not say %q:\n%s", want, strings.Join(p.Comments, "\n"))
	}
}
