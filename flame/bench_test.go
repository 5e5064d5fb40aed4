package flame

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// benchTrace makes a trace of about n spans (calls and ranges) on 4 threads:
// an NVTX step around a cudawrap span around allocation calls, with a few
// distinct callers and sizes, so the distinct stacks stay few.
func benchTrace(n int) *trace.Trace {
	st := trace.NewStringTable()
	tr := &trace.Trace{Meta: trace.Meta{Overhead: trace.Overhead{InsideNs: 12}}}
	step, wrap, dom := st.ID("step"), st.ID("Buffer.alloc"), st.ID("cudawrap")
	for pid := uint32(1); pid <= 1; pid++ {
		tr.Mappings = append(tr.Mappings, trace.Mapping{PID: pid, Start: 0x1000, Limit: 0x100000, File: "/lib/libfoo.so"})
		tr.Symbols = append(tr.Symbols, trace.Symbol{PID: pid, Addr: 0x2000, Size: 0x100, Name: "my_alloc"},
			trace.Symbol{PID: pid, Addr: 0x3000, Size: 0x100, Name: "my_free"})
	}
	apis := []trace.API{trace.APIMemAllocAsync, trace.APIStreamSynchronize, trace.APIMemFreeAsync, trace.APICtxGetCurrent}
	callers := []uint64{0x2010, 0x2020, 0x3008, 0}
	t := int64(0)
	spans := 0
	for i := 0; spans < n; i++ {
		tid := uint32(1 + i%4)
		tr.Events = append(tr.Events, trace.Event{Kind: trace.KindRangePush, PID: 1, TID: tid, Start: t, Name: step, Device: -1})
		tr.Events = append(tr.Events, trace.Event{Kind: trace.KindSpan, PID: 1, TID: tid, Start: t + 10, End: t + 900, Name: wrap, Domain: dom, Device: -1})
		spans += 2
		for j := 0; j < 8; j++ {
			a := apis[j%len(apis)]
			tr.Events = append(tr.Events, trace.Event{Kind: trace.KindCall, API: a, PID: 1, TID: tid, Device: 0,
				Start: t + 20 + int64(j)*100, End: t + 80 + int64(j)*100, Handle: uint64(0x7f0000 + i), Stream: 0x10,
				Size: uint64(4096 << (j % 3)), Caller: callers[j%len(callers)]})
			spans++
		}
		tr.Events = append(tr.Events, trace.Event{Kind: trace.KindRangePop, PID: 1, TID: tid, Start: t + 1000})
		t += 1001
	}
	tr.Strings = st.Strings
	return tr
}

func spanCount(tr *trace.Trace) int {
	n := 0
	for i := range tr.Events {
		switch tr.Events[i].Kind {
		case trace.KindCall, trace.KindRangePush, trace.KindSpan, trace.KindRangeStart:
			n++
		}
	}
	return n
}

// BenchmarkBuild measures trace-to-profile conversion: spans/s and, across
// sizes, that allocations do not grow with the number of spans.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		for _, v := range []View{ViewAPI, ViewMemory, ViewLifetime} {
			tr := benchTrace(n)
			spans := spanCount(tr)
			b.Run(fmt.Sprintf("view=%s/spans=%d", v, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := Build(tr, WithView(v)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
			})
		}
	}
}

// TestSampleKeyEqualAndHashSeeEveryField: sampleKey.equal and hash name
// its fields one by one; a field added to the key must be added to both,
// and then counted here.
func TestSampleKeyEqualAndHashSeeEveryField(t *testing.T) {
	if n := reflect.TypeFor[sampleKey]().NumField(); n != 11 {
		t.Errorf("sampleKey has %d fields, equal and hash compare 11: add the new one to both and count it here", n)
	}
}
