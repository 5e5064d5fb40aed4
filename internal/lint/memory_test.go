package lint

import (
	"iter"
	"runtime"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// mixEvents returns a replay of a synthetic trace of about n events, made
// as they are read (nothing holds them): two threads looping over a range
// with every pattern a rule keeps state for (stream, event and allocation
// churn, pools trimmed at a synchronize and re-grown by the next
// allocation, idle and waiting synchronizes, redundant set-current, failed
// calls, error-name lookups) and a few allocations leaked at the start. The
// objects alive at one time and the sites are the same whatever n is.
func mixEvents(n int) (*trace.Trace, func() iter.Seq[*trace.Event]) {
	st := trace.NewStringTable()
	step := st.ID("step")
	tables := &trace.Trace{Meta: trace.Meta{Overhead: trace.Overhead{InsideNs: 12, AddedNs: 28}},
		Threads: []trace.Thread{{PID: 1, TID: 1, Name: "main"}, {PID: 1, TID: 2, Name: "worker"}}}
	tables.Strings = st.Strings
	replay := func() iter.Seq[*trace.Event] {
		return func(yield func(*trace.Event) bool) {
			var e trace.Event
			ts, k := int64(1000), 0
			emit := func(ev trace.Event) bool {
				e = ev
				k++
				return yield(&e)
			}
			call := func(tid uint32, api trace.API, d int64, h, stream, size uint64, res trace.Result) bool {
				ok := emit(trace.Event{Kind: trace.KindCall, API: api, PID: 1, TID: tid, Device: 0, Start: ts, End: ts + d,
					Handle: h, Stream: stream, Size: size, Result: res, Caller: 0x401000 + uint64(api)})
				ts += d + 40
				return ok
			}
			for tid := uint32(1); tid <= 2; tid++ {
				if !call(tid, trace.APIDevicePrimaryCtxRetain, 100, 0xc0, 0, 0, trace.Success) ||
					!call(tid, trace.APICtxSetCurrent, 30, 0xc0, 0, 0, trace.Success) {
					return
				}
			}
			for i := 0; k < n; i++ {
				tid := uint32(1 + i%2)
				s := uint64(0x10 + i%8)
				a := uint64(0x7000000 + (i%16)*0x1000)
				trim := i%4 == 0
				syncNs, allocNs := int64(3000), int64(700)
				if trim {
					syncNs = 200_000
				}
				if i%4 == 1 {
					allocNs = 60_000 // the regrowth after the trim
				}
				if !emit(trace.Event{Kind: trace.KindRangePush, PID: 1, TID: tid, Start: ts, End: ts, Name: step, Device: trace.NoDevice}) {
					return
				}
				ts += 20
				ok := call(tid, trace.APICtxSetCurrent, 30, 0xc0, 0, 0, trace.Success) &&
					call(tid, trace.APIStreamCreate, 4000, s, 0, 0, trace.Success) &&
					call(tid, trace.APIMemAllocAsync, allocNs, a, s, 4096, trace.Success) &&
					call(tid, trace.APILaunchKernel, 2500, 0xf0, s, 0, trace.Success) &&
					call(tid, trace.APIMemFreeAsync, 600, a, s, 0, trace.Success) &&
					call(tid, trace.APIStreamSynchronize, syncNs, s, s, 0, trace.Success) &&
					call(tid, trace.APIMemAlloc, 800, 0x9000000+uint64(tid)*0x1000, 0, 1<<20, trace.Success) &&
					call(tid, trace.APIMemFree, 500, 0x9000000+uint64(tid)*0x1000, 0, 0, trace.Success) &&
					call(tid, trace.APIEventCreate, 200, 0xe0+uint64(tid), 0, 0, trace.Success) &&
					call(tid, trace.APIEventDestroy, 150, 0xe0+uint64(tid), 0, 0, trace.Success) &&
					call(tid, trace.APICtxSynchronize, 400, 0, 0, 0, trace.Success) &&
					call(tid, trace.APIMemAlloc, 300, 0, 0, 1<<40, trace.ErrOutOfMemory) &&
					call(tid, trace.APIGetErrorName, 20, 0, 0, 0, trace.Success) &&
					call(tid, trace.APIStreamDestroy, 3000, s, 0, 0, trace.Success)
				if ok && i < 10 { // leaked
					ok = call(tid, trace.APIMemAlloc, 800, 0xa000000+uint64(i)*0x1000, 0, 4096, trace.Success)
				}
				if !ok || !emit(trace.Event{Kind: trace.KindRangePop, PID: 1, TID: tid, Start: ts, End: ts, Device: trace.NoDevice}) {
					return
				}
				ts += 20
			}
		}
	}
	return tables, replay
}

// lintHeap lints mixEvents(n) and returns the most heap in use (after a
// collection) at the end of any of lint's replays, when its state is
// largest, and the findings.
func lintHeap(n int) (uint64, []Finding) { return lintHeapOf(mixEvents(n)) }

// lintHeapOf is lintHeap of a trace's tables and replay.
func lintHeapOf(tables *trace.Trace, replay func() iter.Seq[*trace.Event]) (uint64, []Finding) {
	var peak uint64
	fs := Stream(tables, func() iter.Seq[*trace.Event] {
		return func(yield func(*trace.Event) bool) {
			for e := range replay() {
				if !yield(e) {
					return
				}
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	})
	return peak, fs
}

// TestMemoryDoesNotGrowWithEvents: lint's memory is per object alive, site,
// pool and stream, with each median exact up to exactValues values: linting
// four times the events of a trace of the same sites holds no more than a
// quarter byte more per added event (holding anything per event, even an
// int32, would be 4). The medians are made small so that they are past
// their exact limit at both lengths.
func TestMemoryDoesNotGrowWithEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 2M synthetic events")
	}
	defer func(v int) { exactValues = v }(exactValues)
	exactValues = 256
	const n = 100_000
	lintHeap(n) // warm up: the runtime's own first allocations
	small, fs := lintHeap(n)
	large, fs4 := lintHeap(4 * n)
	rules := map[string]int{}
	for _, f := range fs {
		rules[f.Rule]++
	}
	for _, r := range []string{"pool-trim", "stream-churn", "event-churn", "alloc-churn", "redundant-set-current",
		"sync-idle", "error-check", "leak"} {
		if rules[r] == 0 {
			t.Errorf("no %s finding: the synthetic trace does not exercise that rule (findings %v)", r, rules)
		}
	}
	if len(fs4) != len(fs) {
		t.Errorf("%d findings at %d events, %d at %d", len(fs), n, len(fs4), 4*n)
	}
	growth := int64(large) - int64(small)
	t.Logf("heap at the end of a replay: %d B for %d events, %d B for %d (%+.3f B per added event)",
		small, n, large, 4*n, float64(growth)/float64(3*n))
	if limit := int64(3 * n / 4); growth > limit {
		t.Errorf("heap grew by %d B for %d more events (limit %d): lint keeps something per event", growth, 3*n, limit)
	}
}

// churnEvents is tracetest.ChurnStream(n) as mixEvents gives a trace: a
// replay that makes the events again each time lint asks.
func churnEvents(n int) (*trace.Trace, func() iter.Seq[*trace.Event]) {
	tables, _ := tracetest.ChurnStream(n)
	return tables, func() iter.Seq[*trace.Event] {
		_, events := tracetest.ChurnStream(n)
		return events
	}
}

// TestMemoryOfAllocationChurn: linting allocation churn
// (tracetest.ChurnStream: an allocation at a new address and its free,
// again and again) of 2M allocations holds less than a quarter of a byte
// more per added event than 500,000 (issue 43): the rules keep what is per
// object alive and per site, not per object made; both find the same.
func TestMemoryOfAllocationChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("replays about 6M synthetic events")
	}
	defer func(v int) { exactValues = v }(exactValues)
	exactValues = 256
	const n = 1_100_000 // about 500,000 allocations; 4n about 2M
	small, fs := lintHeapOf(churnEvents(n))
	large, fs4 := lintHeapOf(churnEvents(4 * n))
	rules := func(fs []Finding) string {
		var r []string
		for _, f := range fs {
			r = append(r, f.Rule)
		}
		return strings.Join(r, " ")
	}
	if len(fs) == 0 || rules(fs) != rules(fs4) {
		t.Errorf("findings %q at %d events, %q at %d: want the same, some", rules(fs), n, rules(fs4), 4*n)
	}
	growth := int64(large) - int64(small)
	t.Logf("most heap at the end of a replay: %d B for %d events, %d B for %d (%+.3f B per added event)",
		small, n, large, 4*n, float64(growth)/float64(3*n))
	if limit := int64(3 * n / 4); growth > limit {
		t.Errorf("heap grew by %d B for %d more events (limit %d): lint keeps something per object made", growth, 3*n, limit)
	}
}
