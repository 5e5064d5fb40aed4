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
// frames, names, marks, lifetimes on lanes) and the loop, in both formats;
// those with callers since the calls carry their caller argument.
var timelineDigests = map[string]string{
	"loop chrome-json":    "57711c902781efa7ff97ba4f51b0aa75cb0a55ddbf1250ea9a89d2507d9e47a9 22118005",
	"loop perfetto":       "585775777bcd0ddf0c427547005c253f4b91094e920a688783166d9bbb4bbd1e 6741429",
	"python chrome-json":  "d1227f2bc726aafd9ad477926e11e7a2dd8928c00127140504f15ef61f54a367 2477",
	"python perfetto":     "5a70263cf85783a69b873d260d513f829879e9ea113abad0709dea38579039b8 1527",
	"random1 chrome-json": "15cd80d22f231d151b577abeba1f994d01e591a04162eb332151c416e0a3522a 3929622",
	"random1 perfetto":    "f16a9aa6b485e47256cee9164b19b0f32a677ebb187743bd3d56d68085734e95 1376616",
	"random2 chrome-json": "8052170dc5b747aa3f447b847010e6cff7aa2f89a5989118231ea3e432876a6b 3926227",
	"random2 perfetto":    "9d2da52ebf74360e4e61e88a5e0d6bd1fe69ace2535357b7b8955e0a5ae37f0c 1388368",
	"random3 chrome-json": "fa7fd1355476c71f703bbb276d50fdabd5bdb2931d4864a42fdde1ee2920bdab 3918664",
	"ticks chrome-json":   "005988443297f042675571952da8714661a2d656664fe87e118d97fcb14bb769 504949",
	"ticks perfetto":      "a4d9c14c48879ff0b79cea181e434c7e29179a90bd2666ec945593fe5e71885b 138305",
	"random3 perfetto":    "371431c2291175ff389262082a91cf12ca4d6238bd0bad8cbe1772a9739fdda2 1385770",
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
