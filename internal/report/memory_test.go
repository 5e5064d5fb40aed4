package report

import (
	"iter"
	"math"
	"runtime"
	"testing"

	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// reportHeap reports a loop of about n events made as they are read
// (nothing holds them) and returns the least heap in use, after a
// collection, over 16 points of the second half of the replay: what the
// report keeps, without the phase of any buffer being filled.
func reportHeap(n int) (uint64, *Report) { return reportHeapOf(tracetest.LoopStream, n) }

// reportHeapOf is reportHeap of the stream a trace function makes.
func reportHeapOf(stream func(int) (*trace.Trace, iter.Seq[*trace.Event]), n int) (uint64, *Report) {
	tables, events := stream(n)
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
	return floor, BuildFrom(tables, seq, Options{})
}

// TestMemoryDoesNotGrowWithEvents: the report's memory is per API, device,
// thread, range name and object alive; its percentiles are exact up to a
// sketch limit (2^20 values each, set to 256 here so that both replays are
// past it). Reporting four times the events holds less than a quarter of a
// byte more per added event (anything per event, even an int32, is 4).
func TestMemoryDoesNotGrowWithEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 1M synthetic events")
	}
	defer quantile.SetDefaultLimit(256)()
	const n = 100_000
	reportHeap(n) // warm up
	small, r := reportHeap(n)
	large, r4 := reportHeap(4 * n)
	if r4.Meta.Calls < 3*r.Meta.Calls || len(r.APIs) == 0 {
		t.Fatalf("%d calls at %d events, %d at %d: the longer replay was not reported", r.Meta.Calls, n, r4.Meta.Calls, 4*n)
	}
	growth := int64(large) - int64(small)
	t.Logf("least heap in the second half of the replay: %d B for %d events, %d B for %d (%+.3f B per added event)",
		small, n, large, 4*n, float64(growth)/float64(3*n))
	if limit := int64(3 * n / 4); growth > limit {
		t.Errorf("heap grew by %d B for %d more events (limit %d): the report keeps something per event", growth, 3*n, limit)
	}
}

// TestMemoryOfAllocationChurn: allocation churn (tracetest.ChurnStream: an
// allocation at a new address and its free, again and again, one alive at
// a time) of 2M allocations holds less than a quarter of a byte more per
// added event than 500,000 (issue 43): nothing is kept per object made,
// only per object alive.
func TestMemoryOfAllocationChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 6M synthetic events")
	}
	defer quantile.SetDefaultLimit(256)()
	// about 500,000 allocations; 4n about 2M
	const n = 1_100_000
	reportHeapOf(tracetest.ChurnStream, n/4) // warm up
	small, r := reportHeapOf(tracetest.ChurnStream, n)
	large, r4 := reportHeapOf(tracetest.ChurnStream, 4*n)
	if r4.Meta.Calls < 3*r.Meta.Calls || r4.Meta.Calls < 4_000_000 {
		t.Fatalf("%d calls at %d events, %d at %d: the longer replay was not reported", r.Meta.Calls, n, r4.Meta.Calls, 4*n)
	}
	growth := int64(large) - int64(small)
	t.Logf("least heap in the second half of the replay: %d B for %d events, %d B for %d (%+.3f B per added event)",
		small, n, large, 4*n, float64(growth)/float64(3*n))
	if limit := int64(3 * n / 4); growth > limit {
		t.Errorf("heap grew by %d B for %d more events (limit %d): the report keeps something per object made", growth, 3*n, limit)
	}
}
