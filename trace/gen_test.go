package trace

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// genTrace builds a realistic trace of about n events across procs processes
// of threads threads each: mostly driver calls 10-100 ns apart and 10-100 ns
// long, dominated by cuCtxGetCurrent/SetCurrent/GetErrorName, allocation and
// free, stream create/destroy; a few contexts, streams and callers reused;
// allocations recycled from a small pool; some NVTX ranges, marks and spans.
func genTrace(tb testing.TB, n, procs, threads int, seed uint64) *Trace {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 42))
	api := func(name string) API {
		a, ok := LookupAPI(name)
		if !ok {
			tb.Fatalf("unknown API %s", name)
		}
		return a
	}
	mix := []struct {
		api    API
		weight int
	}{
		{api("cuCtxGetCurrent"), 40},
		{api("cuCtxSetCurrent"), 20},
		{api("cuGetErrorName"), 10},
		{api("cuMemAllocAsync"), 9},
		{api("cuMemFreeAsync"), 9},
		{api("cuStreamCreate"), 2},
		{api("cuStreamDestroy"), 2},
		{api("cuEventRecord"), 4},
		{api("cuStreamSynchronize"), 2},
		{api("cuLaunchKernel"), 2},
	}
	var total int
	for _, m := range mix {
		total += m.weight
	}
	pick := func() API {
		w := rng.IntN(total)
		for _, m := range mix {
			if w < m.weight {
				return m.api
			}
			w -= m.weight
		}
		return mix[0].api
	}
	st := NewStringTable()
	names := []StringID{st.ID("step"), st.ID("forward"), st.ID("backward"), st.ID("Stream.Create"), st.ID("checkpoint")}
	domain := st.ID("cudawrap")
	t := &Trace{Meta: Meta{Host: "node1", Capture: "sim", DriverVersion: 13000, CuprofVersion: "0.1.0",
		Clock: Clock{Source: "tsc", TSCHz: 2.4e9}, Overhead: Overhead{InsideNs: 12, AddedNs: 28, InPlaceNs: -1.5},
		WallStart: 1_700_000_000_000_000_000, Command: []string{"python3", "bench.py"},
		GPUs: []GPU{{Ordinal: 0, Name: "NVIDIA H200", UUID: "GPU-1234"}, {Ordinal: 1, Name: "NVIDIA H200"}}}}
	perThread := n / (procs * threads)
	for p := 0; p < procs; p++ {
		pid := uint32(1000 + p)
		t.Processes = append(t.Processes, Process{PID: pid, PPID: 1, Exe: "/usr/bin/python3",
			Cmdline: []string{"python3", "bench.py", "--rank", string(rune('0' + p%10))},
			Env:     map[string]string{"RANK": string(rune('0' + p%10))}, Start: 0, End: 1 << 40, ExitCode: int32(p % 2)})
		t.Mappings = append(t.Mappings, Mapping{PID: pid, Start: 0x400000, Limit: 0x500000, File: "/usr/bin/python3", BuildID: "abcd"})
		t.Symbols = append(t.Symbols, Symbol{PID: pid, Addr: 0x401000, Size: 0x40, Name: "main"})
		ctx := uint64(0x5555_0000 + p*0x100)
		for th := 0; th < threads; th++ {
			tid := pid + uint32(th)
			t.Threads = append(t.Threads, Thread{PID: pid, TID: tid, Name: "worker"})
			if th == 1 {
				t.Drops = append(t.Drops, Drop{PID: pid, TID: tid, Events: 7, Reason: "buffer full"})
			}
			now := int64(rng.IntN(1000))
			streams := []uint64{0x10, 0x20, 0x30}
			var live []uint64
			nextAlloc := uint64(0x7f00_0000_0000)
			callers := []uint64{0x401020, 0x401088, 0x4010f0, 0x401200, 0x401333}
			depth := 0
			for i := 0; i < perThread; i++ {
				now += 10 + int64(rng.IntN(91))
				e := Event{PID: pid, TID: tid, Start: now, End: now, Device: NoDevice}
				r := rng.IntN(100)
				switch {
				case r < 2 && depth < 4:
					e.Kind, e.Name = KindRangePush, names[rng.IntN(3)]
					depth++
				case r < 4 && depth > 0:
					e.Kind = KindRangePop
					depth--
				case r < 5:
					e.Kind, e.Name, e.Domain = KindMark, names[4], 0
				case r < 6:
					e.Kind, e.Name, e.Domain = KindSpan, names[3], domain
					e.Start -= 5
					e.End = now + 3
				default:
					e.Kind = KindCall
					e.API = pick()
					d := 10 + int64(rng.IntN(91))
					e.End = now + d
					now = e.End
					e.Caller = callers[rng.IntN(len(callers))]
					e.Device = 0
					switch e.API.String() {
					case "cuCtxGetCurrent", "cuCtxSetCurrent":
						e.Handle = ctx
					case "cuGetErrorName":
						e.Flags = uint64(rng.IntN(3))
						e.Device = NoDevice
					case "cuMemAllocAsync":
						nextAlloc += 0x200
						e.Handle = nextAlloc
						e.Stream = streams[rng.IntN(len(streams))]
						e.Size = uint64(512 << rng.IntN(4))
						live = append(live, nextAlloc)
					case "cuMemFreeAsync":
						if len(live) > 0 {
							j := rng.IntN(len(live))
							e.Handle = live[j]
							live = slices.Delete(live, j, j+1)
						} else {
							e.Result = ErrInvalidValue
						}
						e.Stream = streams[rng.IntN(len(streams))]
					case "cuStreamCreate":
						e.Handle = 0x100 + uint64(i)*0x10
						e.Flags = 1
					case "cuStreamDestroy":
						e.Handle = 0x100 + uint64(rng.IntN(i+1))*0x10
					default:
						e.Handle = streams[rng.IntN(len(streams))]
						e.Stream = e.Handle
					}
					if rng.IntN(200) == 0 {
						e.Result = ErrNotReady
					}
				}
				t.Events = append(t.Events, e)
			}
		}
	}
	t.Strings = st.Strings
	SortEvents(t.Events)
	return t
}
