package record

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// validRing returns a small well-formed ring file with one committed record.
func validRing() []byte {
	const nchunks, chunk = 2, 4 * recSize
	threads := uint64(hdrSize)
	chunks := threads + 2*slotSize
	strs := chunks + nchunks*chunkHdrSize
	data := strs + 64
	b := make([]byte, data+nchunks*chunk)
	le := binary.LittleEndian
	le.PutUint64(b[hOffMagic:], ringMagic)
	le.PutUint32(b[hOffVersion:], ringVersion)
	le.PutUint32(b[hOffRecSize:], recSize)
	le.PutUint32(b[hOffChunkSize:], chunk)
	le.PutUint32(b[hOffNChunks:], nchunks)
	le.PutUint32(b[hOffMaxThreads:], 2)
	le.PutUint32(b[hOffClock:], clockMonotonic)
	le.PutUint32(b[hOffPID:], 42)
	le.PutUint32(b[hOffNThreads:], 1)
	le.PutUint64(b[hOffThreadsOff:], threads)
	le.PutUint64(b[hOffChunksOff:], chunks)
	le.PutUint64(b[hOffStringsOff:], strs)
	le.PutUint64(b[hOffStringsSize:], 64)
	le.PutUint64(b[hOffDataOff:], data)
	le.PutUint32(b[threads+sOffTID:], 7)
	copy(b[threads+sOffName:], "main")
	le.PutUint32(b[hOffStringsUsed:], 12)
	le.PutUint32(b[strs:], 1)
	le.PutUint32(b[strs+4:], 4)
	copy(b[strs+8:], "step")
	le.PutUint32(b[chunks+cOffState:], chunkFull)
	le.PutUint32(b[chunks+cOffGen:], 1)
	le.PutUint32(b[chunks+cOffTID:], 7)
	rec := encodeRec(recFields{kind: trace.KindRangePush, start: 100, end: 100, name: 1, device: -1,
		forceArgs: true, forceDetail: true})
	le.PutUint32(b[chunks+cOffCount:], uint32(len(rec)/recSize))
	copy(b[data:], rec)
	return b
}

// openSpilledRing writes ring bytes b to a ring file, opens it and gives it
// a spill file, as the drainer does; the ring is closed when t ends.
func openSpilledRing(t *testing.T, b []byte) *ring {
	t.Helper()
	path := filepath.Join(t.TempDir(), "1-0.ring")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := openRing(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	if err := createSpill(t.TempDir(), r, 0); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReadValidRing(t *testing.T) {
	r := openSpilledRing(t, validRing())
	st := trace.NewStringTable()
	var sp spiller
	if n, err := r.poll(st, &sp); err != nil || n != 1 {
		t.Fatalf("poll = %d, %v; want 1 event", n, err)
	}
	evs := spilled(t, r, st)
	if len(evs) != 1 {
		t.Fatalf("spilled %d events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Kind != trace.KindRangePush || st.Strings[ev.Name] != "step" || ev.PID != 42 || ev.TID != 7 || ev.Start != 100 {
		t.Errorf("event %+v", ev)
	}
	if r.threads[7] != "main" {
		t.Errorf("threads %v", r.threads)
	}
	// The full chunk was handed back to the shim.
	b, _ := os.ReadFile(r.path)
	chunks := binary.LittleEndian.Uint64(b[hOffChunksOff:])
	if s := binary.LittleEndian.Uint32(b[chunks+cOffState:]); s != chunkFree {
		t.Errorf("chunk state after reading: %d, want free", s)
	}
	if n, _ := r.poll(st, &sp); n != 0 {
		t.Errorf("second poll read %d events again", n)
	}
	if evs := spilled(t, r, st); len(evs) != 1 {
		t.Errorf("spill file holds %d events after the second poll, want 1", len(evs))
	}
}

// TestReadThreadsOnlyFromSlots: nthreads counts threads beyond the last slot
// too (the shim's counter keeps going); the reader must read max_threads
// slots at most, not the chunk headers after them as threads and drops.
func TestReadThreadsOnlyFromSlots(t *testing.T) {
	b := validRing()
	binary.LittleEndian.PutUint32(b[hOffNThreads:], 5000)
	r := openSpilledRing(t, b)
	var sp spiller
	if _, err := r.poll(trace.NewStringTable(), &sp); err != nil {
		t.Fatal(err)
	}
	if len(r.threads) != 1 || r.threads[7] != "main" || r.totalDrops() != 0 {
		t.Errorf("threads %v, drops %v (%d in all); want only thread 7, no drops", r.threads, r.drops, r.totalDrops())
	}
}

// TestReusedTIDsStayApart: Linux reuses thread ids, so two threads of a
// process may have one tid (51,200 short-lived threads came out as 32,385).
// The shim numbers threads (the chunk's slot field, the thread slot's
// index): the second thread with tid 7 is 7 | 1<<22 in the trace, with its
// own records, name and drops (they used to be merged into thread 7's).
func TestReusedTIDsStayApart(t *testing.T) {
	b := validRing()
	le := binary.LittleEndian
	slots := le.Uint64(b[hOffThreadsOff:])
	chunks := le.Uint64(b[hOffChunksOff:])
	data := le.Uint64(b[hOffDataOff:])
	le.PutUint32(b[hOffNThreads:], 2)
	le.PutUint64(b[slots+sOffDrops:], 3)
	le.PutUint32(b[slots+slotSize+sOffTID:], 7)
	copy(b[slots+slotSize+sOffName:], "worker")
	le.PutUint64(b[slots+slotSize+sOffDrops:], 4)
	c1 := chunks + chunkHdrSize
	le.PutUint32(b[c1+cOffState:], chunkFull)
	le.PutUint32(b[c1+cOffGen:], 1)
	le.PutUint32(b[c1+cOffTID:], 7)
	le.PutUint32(b[c1+cOffSlot:], 1)
	rec := encodeRec(recFields{kind: trace.KindRangePush, start: 200, end: 200, name: 1, device: -1,
		forceArgs: true, forceDetail: true})
	le.PutUint32(b[c1+cOffCount:], uint32(len(rec)/recSize))
	copy(b[data+4*recSize:], rec)
	r := openSpilledRing(t, b)
	st := trace.NewStringTable()
	var sp spiller
	for i := 0; i < 2; i++ { // every poll reads the slots again
		if _, err := r.poll(st, &sp); err != nil {
			t.Fatal(err)
		}
	}
	second := uint32(7 | 1<<reusedTIDShift)
	if r.threads[7] != "main" || r.threads[second] != "worker" || len(r.threads) != 2 {
		t.Errorf("threads %v, want 7 main and %d worker", r.threads, second)
	}
	if r.drops[7] != 3 || r.drops[second] != 4 || r.totalDrops() != 7 {
		t.Errorf("drops %v, want 3 for thread 7 and 4 for %d", r.drops, second)
	}
	by := map[uint32]int64{}
	for _, ev := range spilled(t, r, st) {
		by[ev.TID] = ev.Start
	}
	if len(by) != 2 || by[7] != 100 || by[second] != 200 {
		t.Errorf("events by thread %v, want thread 7's at 100 and %d's at 200", by, second)
	}
}

// TestCorruptRingRefused: a header whose areas do not fit the file, or
// whose chunk size is absurd, is refused when the ring opens (a chunk size
// of 4 GB with a matching count made poll allocate 4 GB for one segment).
func TestCorruptRingRefused(t *testing.T) {
	le := binary.LittleEndian
	for name, corrupt := range map[string]func(b []byte){
		"huge chunk": func(b []byte) {
			le.PutUint32(b[hOffChunkSize:], recSize*50_000_000)
			le.PutUint32(b[le.Uint64(b[hOffChunksOff:])+cOffCount:], 50_000_000)
		},
		"data past the end":    func(b []byte) { le.PutUint64(b[hOffDataOff:], uint64(len(b))) },
		"strings past the end": func(b []byte) { le.PutUint64(b[hOffStringsSize:], 1<<40) },
		"chunk table past end": func(b []byte) { le.PutUint32(b[hOffNChunks:], 1<<20) },
	} {
		b := validRing()
		corrupt(b)
		path := filepath.Join(t.TempDir(), "1-0.ring")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := openRing(path)
		if err == nil {
			r.close()
			t.Errorf("%s: opened", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// spilled decodes r's spill file, names interned in st.
func spilled(t testing.TB, r *ring, st *trace.StringTable) []trace.Event {
	t.Helper()
	var evs []trace.Event
	err := r.replay(func(e *trace.Event, spill *trace.Trace) error {
		names := spill.Strings
		ev := *e
		ev.Name, ev.Domain = st.ID(names[e.Name]), st.ID(names[e.Domain])
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// ringWindows are the parts of a ring's header a fuzz input holds (see
// ringImage): the fixed fields, the start of exe, cmdline and env, the
// Python status, growth and drop counters, and the lost children's.
var ringWindows = [][2]int{
	{0, hOffExe + 32}, {hOffCmdline, 64}, {hOffEnv, 64},
	{hOffPyEventMilliticks, hOffInplaceCounts + 8 - hOffPyEventMilliticks}, {hOffLostChildren, 16},
}

// ringImage expands a fuzz input into a ring file: the input fills the
// header's windows in turn, the rest of the header is zero, and what is
// left of the input follows the header. A ring file's header is 8 KiB of
// mostly zeros: given whole, the fuzzer spent its time minimizing them (a
// minute per new input), and ran 16 inputs a minute.
func ringImage(in []byte) []byte {
	img := make([]byte, hdrSize)
	for _, w := range ringWindows {
		n := copy(img[w[0]:w[0]+w[1]], in)
		in = in[n:]
	}
	return append(img, in...)
}

// ringInput is ringImage's inverse for a ring whose header is zero outside
// the windows: a seed.
func ringInput(img []byte) []byte {
	var in []byte
	for _, w := range ringWindows {
		in = append(in, img[w[0]:w[0]+w[1]]...)
	}
	return append(in, img[hdrSize:]...)
}

// FuzzRing feeds arbitrary ring files to the reader (ringImage of the
// input): it may refuse them but must not panic or allocate without bound.
func FuzzRing(f *testing.F) {
	f.Add(ringInput(validRing()))
	f.Add(ringInput(validRing())[:hOffExe])
	// One directory for all inputs, in memory where there is /dev/shm: a
	// t.TempDir per input made each take seconds.
	base, err := os.MkdirTemp("/dev/shm", "cuprof-fuzzring-")
	if err != nil {
		base = f.TempDir()
	} else {
		f.Cleanup(func() { os.RemoveAll(base) })
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		dir, err := os.MkdirTemp(base, "in")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "f.ring")
		if err := os.WriteFile(path, ringImage(in), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := openRing(path)
		if err != nil {
			return
		}
		defer r.close()
		if err := createSpill(dir, r, 0); err != nil {
			t.Fatal(err)
		}
		st := trace.NewStringTable()
		var sp spiller
		for i := 0; i < 2; i++ {
			if _, err := r.poll(st, &sp); err != nil {
				return
			}
		}
		spilled(t, r, st)
	})
}

// BenchmarkRingPoll measures reading and spilling committed records (one
// full chunk of 4 records per iteration, handed back and re-marked full).
func BenchmarkRingPoll(b *testing.B) {
	data := validRing()
	le := binary.LittleEndian
	chunks := le.Uint64(data[hOffChunksOff:])
	le.PutUint32(data[chunks+cOffCount:], 4)
	path := filepath.Join(b.TempDir(), "1-0.ring")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	r, err := openRing(path)
	if err != nil {
		b.Fatal(err)
	}
	defer r.close()
	if err := createSpill(b.TempDir(), r, 0); err != nil {
		b.Fatal(err)
	}
	st := trace.NewStringTable()
	var sp spiller
	var full [4]byte
	le.PutUint32(full[:], chunkFull)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The shim claims the chunk again (new generation) and fills it.
		var gen [4]byte
		le.PutUint32(gen[:], uint32(i+2))
		r.f.WriteAt(gen[:], int64(chunks+cOffGen))
		r.f.WriteAt(full[:], int64(chunks+cOffState))
		if _, err := r.poll(st, &sp); err != nil {
			b.Fatal(err)
		}
		if r.n > 1<<16 { // keep the spill file small
			r.n = 0
			r.spill.Truncate(0)
			r.spill.Seek(0, 0)
		}
	}
	b.ReportMetric(float64(4*b.N)/b.Elapsed().Seconds(), "records/s")
}

// TestNameInternedDuringPoll: a string the shim interned after a poll read
// the string area, named by a record committed before the poll read it (an
// NVTX range, a span, a capture range), is read when the record is decoded,
// not lost as "". The ring's header first says no strings, as the poll saw
// it; then the shim's intern lands.
func TestNameInternedDuringPoll(t *testing.T) {
	b := validRing()
	binary.LittleEndian.PutUint32(b[hOffStringsUsed:], 0)
	r := openSpilledRing(t, b)
	st := trace.NewStringTable()
	r.st = st
	if err := r.readStrings(st, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.strs[1]; ok {
		t.Fatal("string 1 known before it was interned")
	}
	var used [4]byte
	binary.LittleEndian.PutUint32(used[:], 12)
	if _, err := r.f.WriteAt(used[:], hOffStringsUsed); err != nil {
		t.Fatal(err)
	}
	if got := st.Strings[r.str(1)]; got != "step" {
		t.Errorf("string 1 decoded as %q, want \"step\"", got)
	}
	if r.str(0) != 0 {
		t.Error("string 0 is not the empty string")
	}
	// An id the ring never interned stays unknown (one more read, no panic).
	if got := st.Strings[r.str(99)]; got != "" {
		t.Errorf("unknown string 99 decoded as %q", got)
	}
}
