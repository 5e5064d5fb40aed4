package perfetto

import (
	"iter"
	"runtime"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// timelineHeap writes the timeline of tracetest.LoopStream(n) (made as it
// is read: nothing holds the events) in format and returns the heap in use
// (after a collection) once the last event was replayed, when the writer
// holds the most, and the bytes written.
func timelineHeap(n int, format string) (uint64, int64) {
	return timelineHeapOf(tracetest.LoopStream, n, format)
}

// timelineHeapOf is timelineHeap of the stream a trace function makes.
func timelineHeapOf(stream func(int) (*trace.Trace, iter.Seq[*trace.Event]), n int, format string) (uint64, int64) {
	tables, events := stream(n)
	var w countWriter
	tw := NewWriter(&w, tables)
	if format == "chrome-json" {
		tw = NewChromeJSONWriter(&w, tables)
	}
	tk := analysis.NewTracker(tables, tw.Options()...)
	for e := range events {
		tk.Step(e)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	tk.Finish()
	if err := tw.Close(); err != nil {
		panic(err)
	}
	return ms.HeapAlloc, w.n
}

// TestMemoryDoesNotGrowWithEvents: the writers hold what is open (the
// thread's range, the live objects, lanes, counters, interned names),
// never the events: writing four times the events of a trace of the same
// sites holds no more than a quarter byte more per added event (anything
// kept per event, even an int32, would be 4), in both formats.
func TestMemoryDoesNotGrowWithEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 2M synthetic events")
	}
	const n = 100_000
	for _, format := range []string{"perfetto", "chrome-json"} {
		timelineHeap(n, format) // warm up: the runtime's own first allocations
		small, wrote := timelineHeap(n, format)
		large, wrote4 := timelineHeap(4*n, format)
		if wrote4 < 3*wrote {
			t.Fatalf("%s: %d bytes written for %d events, %d for %d: the larger trace is not larger", format, wrote, n, wrote4, 4*n)
		}
		growth := int64(large) - int64(small)
		t.Logf("%s: heap at the end of a replay: %d B for %d events, %d B for %d (%+.3f B per added event); %d and %d bytes written",
			format, small, n, large, 4*n, float64(growth)/float64(3*n), wrote, wrote4)
		if limit := int64(3 * n / 4); growth > limit {
			t.Errorf("%s: heap grew by %d B for %d more events (limit %d): the writer keeps something per event", format, growth, 3*n, limit)
		}
	}
}

// TestMemoryOfAllocationChurn: the timeline of allocation churn
// (tracetest.ChurnStream) of 2M allocations, each at a new address and so
// a lifetime of a name of its own, holds less than a quarter of a byte
// more per added event than 500,000, in both formats (issue 43): lanes and
// names are kept while their objects live (and at most maxObjectNames
// names interned), not per object made.
func TestMemoryOfAllocationChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 11M synthetic events")
	}
	const n = 1_100_000 // about 500,000 allocations; 4n about 2M
	for _, format := range []string{"perfetto", "chrome-json"} {
		small, wrote := timelineHeapOf(tracetest.ChurnStream, n, format)
		large, wrote4 := timelineHeapOf(tracetest.ChurnStream, 4*n, format)
		if wrote4 < 3*wrote {
			t.Fatalf("%s: %d bytes written for %d events, %d for %d: the larger trace is not larger", format, wrote, n, wrote4, 4*n)
		}
		growth := int64(large) - int64(small)
		t.Logf("%s: heap at the end of a replay: %d B for %d events, %d B for %d (%+.3f B per added event)",
			format, small, n, large, 4*n, float64(growth)/float64(3*n))
		if limit := int64(3 * n / 4); growth > limit {
			t.Errorf("%s: heap grew by %d B for %d more events (limit %d): the writer keeps something per object made", format, growth, 3*n, limit)
		}
	}
}
