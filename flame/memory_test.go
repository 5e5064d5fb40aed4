package flame

import (
	"iter"
	"math"
	"runtime"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// flameHeap builds the profile of view from a loop of about n events made
// as they are read (nothing holds them) and returns the least heap in use,
// after a collection, over 16 points of the second half of the replay, and
// the number of samples.
func flameHeap(t *testing.T, view View, n int) (uint64, int) {
	return flameHeapOf(t, tracetest.LoopStream, view, n)
}

// flameHeapOf is flameHeap of the stream a trace function makes.
func flameHeapOf(t *testing.T, stream func(int) (*trace.Trace, iter.Seq[*trace.Event]), view View, n int) (uint64, int) {
	tables, events := stream(n)
	b, err := NewBuilder(tables, WithView(view))
	if err != nil {
		t.Fatal(err)
	}
	floor := uint64(math.MaxUint64)
	var seq iter.Seq[*trace.Event] = func(yield func(*trace.Event) bool) {
		k := 0
		for e := range events {
			if !yield(e) {
				return
			}
			if k++; k > n/2 && k%(n/32) == 0 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				floor = min(floor, ms.HeapAlloc)
			}
		}
	}
	p, _ := b.Profile(analysis.Run(tables, seq, b.Options()...))
	var total int64
	for _, s := range p.Sample {
		total += s.Value[0]
	}
	return floor, int(total)
}

// TestMemoryDoesNotGrowWithEvents: each view's memory is per distinct stack
// and what is open at one time; building four times the events holds less
// than a quarter of a byte more per added event.
func TestMemoryDoesNotGrowWithEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 3M synthetic events")
	}
	const n = 100_000
	for _, view := range []View{ViewAPI, ViewMemory, ViewLifetime} {
		flameHeap(t, view, n) // warm up
		small, v := flameHeap(t, view, n)
		large, v4 := flameHeap(t, view, 4*n)
		if v == 0 || v4 < 3*v {
			t.Fatalf("%s: sample values %d at %d events, %d at %d: the longer replay was not profiled", view, v, n, v4, 4*n)
		}
		growth := int64(large) - int64(small)
		t.Logf("%s: least heap in the second half of the replay: %d B for %d events, %d B for %d (%+.3f B per added event)",
			view, small, n, large, 4*n, float64(growth)/float64(3*n))
		if limit := int64(3 * n / 4); growth > limit {
			t.Errorf("%s: heap grew by %d B for %d more events (limit %d): the builder keeps something per event", view, growth, 3*n, limit)
		}
	}
}

// TestMemoryOfAllocationChurn: each view of allocation churn
// (tracetest.ChurnStream) of 2M allocations, each at a new address, holds
// less than a quarter of a byte more per added event than 500,000 (issue
// 43): what is kept is per site and per object alive, not per object made.
func TestMemoryOfAllocationChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 16M synthetic events")
	}
	const n = 1_100_000 // about 500,000 allocations; 4n about 2M
	for _, view := range []View{ViewAPI, ViewMemory, ViewLifetime} {
		small, v := flameHeapOf(t, tracetest.ChurnStream, view, n)
		large, v4 := flameHeapOf(t, tracetest.ChurnStream, view, 4*n)
		if v == 0 || v4 < 3*v {
			t.Fatalf("%s: sample values %d at %d events, %d at %d: the longer replay was not profiled", view, v, n, v4, 4*n)
		}
		growth := int64(large) - int64(small)
		t.Logf("%s: least heap in the second half of the replay: %d B for %d events, %d B for %d (%+.3f B per added event)",
			view, small, n, large, 4*n, float64(growth)/float64(3*n))
		if limit := int64(3 * n / 4); growth > limit {
			t.Errorf("%s: heap grew by %d B for %d more events (limit %d): the builder keeps something per object made", view, growth, 3*n, limit)
		}
	}
}
