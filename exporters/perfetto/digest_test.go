package perfetto

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// timelineDigests are the SHA-256 of timelines, and the size Writer.Size
// said after half the events, the Writer wrote before its
// bookkeeping moved between goroutines (main at f5807d1): of random traces
// (every kind of event, counters of several devices and pools, ranges,
// frames, names, marks, lifetimes on lanes) and the loop, in both formats.
var timelineDigests = map[string]string{
	"loop chrome-json":    "6b4ef47b7f94d484c55f30c57696e48baa1443e18455aea6cb93445fb02ef71e 20718005",
	"loop perfetto":       "7f4396826165954f38a3aa11e81b0d9911a655b138df1cff5f87eca3427ddc46 5761405",
	"python chrome-json":  "d1227f2bc726aafd9ad477926e11e7a2dd8928c00127140504f15ef61f54a367 2477",
	"python perfetto":     "5a70263cf85783a69b873d260d513f829879e9ea113abad0709dea38579039b8 1527",
	"random1 chrome-json": "d3a1494e2079cd00aff8a42e92436aa9a241d745ebf8da43edb0e15cb2b17729 3709153",
	"random1 perfetto":    "da4b5548883ad8cdaa8e7ca8af777c3cc80bdf4335fa0da542877bb6da89dabd 1222246",
	"random2 chrome-json": "d312ce65f78e4a759e6a9226988c962fb013745fe5e21712c2ea7a4889e8211a 3705200",
	"random2 perfetto":    "c24a0c0fece7da72a857f9d2e108a771baf40230d35b87be39169fb82e90f105 1233620",
	"random3 chrome-json": "5bebd22169383e344392ef238ad984e21ccf7f380f711ae9b32f81426fc3be46 3699186",
	"ticks chrome-json":   "005988443297f042675571952da8714661a2d656664fe87e118d97fcb14bb769 504949",
	"ticks perfetto":      "a4d9c14c48879ff0b79cea181e434c7e29179a90bd2666ec945593fe5e71885b 138305",
	"random3 perfetto":    "38eedf431a0c3c2775f50023f7bc3c5fa7ad565c34c140d5ca1ea431ce71add4 1232100",
}

// TestTimelineDigests: the timelines of these traces are byte for byte
// those written before, on one goroutine and on several: what the
// Writer does and what its renderer does, and in which order, is as it
// was.
func TestTimelineDigests(t *testing.T) {
	traces := map[string]func() *trace.Trace{
		"random1": func() *trace.Trace { return tracetest.Random(1, 30_000) },
		"random2": func() *trace.Trace { return tracetest.Random(2, 30_000) },
		"random3": func() *trace.Trace { return tracetest.Random(3, 30_000) },
		"loop":    func() *trace.Trace { return tracetest.LoopTrace(20_000) },
		"python":  tracetest.PythonTrace,
		"ticks":   func() *trace.Trace { return ticksTrace(4000) },
	}
	for name, mk := range traces {
		tr := mk()
		for _, format := range []string{"perfetto", "chrome-json"} {
			for _, procs := range []int{1, 2} {
				prev := runtime.GOMAXPROCS(procs)
				var out bytes.Buffer
				size, err := writeTimeline(&out, tr, format, len(tr.Events)/2)
				runtime.GOMAXPROCS(prev)
				if err != nil {
					t.Fatalf("%s %s: %v", name, format, err)
				}
				sum := sha256.Sum256(out.Bytes())
				got, key := hex.EncodeToString(sum[:])+" "+strconv.FormatInt(size, 10), name+" "+format
				if want := timelineDigests[key]; got != want {
					t.Errorf("%s on %d goroutines: %d bytes, SHA-256 and size midway %s, want %s", key, procs, out.Len(), got, want)
				}
			}
		}
	}
}

// ticksTrace is n events on a coarse clock (many at one time) where the
// counters' changes fall due at events that write nothing themselves
// (object names, start/end ranges' starts, pops) and at those whose
// replay ends lifetimes and ranges before they begin: allocations and
// frees of two processes, two devices and pools, some with an End before
// their Start, named objects, start/end ranges, push/pop ranges and marks.
func ticksTrace(n int) *trace.Trace {
	r := rand.New(rand.NewPCG(25, 5))
	st := trace.NewStringTable()
	names := []trace.StringID{st.ID("a"), st.ID("b"), st.ID("")}
	tr := &trace.Trace{Processes: []trace.Process{{PID: 1, Cmdline: []string{"p1"}}, {PID: 2, Cmdline: []string{"p2"}}}}
	allocs := []trace.API{trace.APIMemAlloc, trace.APIMemAllocAsync, trace.APIMemAllocHost, trace.APIMemAllocManaged}
	frees := []trace.API{trace.APIMemFree, trace.APIMemFreeAsync, trace.APIMemFreeHost, trace.APIMemFree}
	pushed := map[uint32]int{}
	var id uint64
	for i := 0; i < n; i++ {
		pid := uint32(1 + r.IntN(2))
		tid := pid*10 + uint32(r.IntN(2))
		t := int64(10 * (i / 3))
		h := uint64(0x1000 * (1 + r.IntN(24)))
		e := trace.Event{PID: pid, TID: tid, Start: t, End: t + int64(r.IntN(40)) - 8, Device: trace.NoDevice}
		switch k := r.IntN(10); {
		case k < 3:
			a := r.IntN(len(allocs))
			e.Kind, e.API, e.Handle, e.Size, e.Device = trace.KindCall, allocs[a], h, uint64(256*(1+r.IntN(8))), int32(r.IntN(2))
			if e.API == trace.APIMemAllocAsync {
				e.Stream = 0x10
			}
		case k < 5:
			e.Kind, e.API, e.Handle, e.Device = trace.KindCall, frees[r.IntN(len(frees))], h, int32(r.IntN(2))
			if e.API == trace.APIMemFreeAsync {
				e.Stream = 0x10
			}
		case k == 5:
			e.Kind, e.Object, e.Handle, e.Name = trace.KindObjectName, trace.ObjectAllocation, h, names[r.IntN(len(names))]
		case k == 6:
			id++
			e.Kind, e.ID, e.Name, e.End = trace.KindRangeStart, id, names[r.IntN(2)], t
		case k == 7:
			e.Kind, e.ID, e.End = trace.KindRangeEnd, uint64(1+r.IntN(int(id)+1)), t
		case k == 8 && pushed[tid] > 0:
			pushed[tid]--
			e.Kind, e.End = trace.KindRangePop, t
		case k == 8:
			pushed[tid]++
			e.Kind, e.Name, e.End = trace.KindRangePush, names[r.IntN(2)], t
		default:
			e.Kind, e.Name, e.End = trace.KindMark, names[r.IntN(2)], t
		}
		tr.Events = append(tr.Events, e)
	}
	tr.Strings = st.Strings
	trace.SortEvents(tr.Events)
	return tr
}
