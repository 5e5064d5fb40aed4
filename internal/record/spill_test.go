package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// spilledRing returns a ring whose spill file holds n calls on each of
// threads tids, in segments of seg records, the threads interleaved as
// polls interleave them, times on the monotonic clock. Every 100th record
// of a thread is a span over the 99 calls before it, committed after them
// (as the shim commits a span when it ends).
func spilledRing(t testing.TB, dir string, tids []uint32, n, seg int) *ring {
	t.Helper()
	r := &ring{pid: 42, clock: clockMonotonic, path: filepath.Join(dir, "42-0.ring"),
		strs: map[uint32]trace.StringID{}, threads: map[uint32]string{}, drops: map[uint32]uint64{}}
	if err := createSpill(dir, r, 0); err != nil {
		t.Fatal(err)
	}
	var sp spiller
	sp.begin(r)
	for base := 0; base < n; base += seg {
		for _, tid := range tids {
			r.threads[tid] = "worker"
			k := min(seg, n-base)
			var recs []byte
			for i := 0; i < k; i++ {
				j := int64(base + i)
				f := recFields{kind: trace.KindCall, api: trace.APICtxGetCurrent, caller: 0x401000,
					start: uint64(1000 + 10*j), end: uint64(1000 + 10*j + 5)}
				if j%100 == 99 {
					f = recFields{kind: trace.KindSpan, start: uint64(1000 + 10*(j-99)), end: f.end}
				}
				recs = append(recs, encodeRec(f)...)
			}
			buf, err := sp.segment(tid, len(recs)/recSize)
			if err != nil {
				t.Fatal(err)
			}
			copy(buf, recs)
			r.n += k
		}
	}
	if err := sp.flush(); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWriteFromSpill writes a trace from spill files alone: every record
// comes back once, in order, with each thread's batches in time order
// although spans arrive after the calls they cover and the per-thread
// buffers flush many times.
func TestWriteFromSpill(t *testing.T) {
	dir := t.TempDir()
	const n = 3*threadBatch + 123
	tids := []uint32{7, 8, 9}
	r := spilledRing(t, dir, tids, n, 819)
	defer r.close()
	d := &drainer{st: trace.NewStringTable(), rings: []*ring{r}, maps: map[*ring]string{}}
	out := filepath.Join(dir, "out.cuprof")
	res := &Result{}
	if err := writeTrace(d, out, trace.Meta{Capture: "sim"}, clock{source: "monotonic"}, 42, res); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != len(tids)*n || len(tr.Events) != res.Events || res.Processes != 1 {
		t.Fatalf("wrote %d events (file %d), %d processes; want %d, 1", res.Events, len(tr.Events), res.Processes, len(tids)*n)
	}
	if res.outOfOrder != 0 {
		t.Errorf("%d batches went back in time in their thread", res.outOfOrder)
	}
	if res.peakBuffered > maxBuffered {
		t.Errorf("held %d events, more than %d", res.peakBuffered, maxBuffered)
	}
	per := map[uint32]int{}
	for i, ev := range tr.Events {
		per[ev.TID]++
		if i > 0 && ev.Start < tr.Events[i-1].Start {
			t.Fatalf("event %d out of order: %+v after %+v", i, ev, tr.Events[i-1])
		}
	}
	for _, tid := range tids {
		if per[tid] != n {
			t.Errorf("thread %d: %d events, want %d", tid, per[tid], n)
		}
	}
	p := tr.Processes[0]
	if p.ExitCode != 0 || p.End != 1000+10*(n-1)+5 {
		t.Errorf("process %+v", p)
	}
	if len(tr.Threads) != len(tids) {
		t.Errorf("threads %+v", tr.Threads)
	}
	// Read as a stream, the recorder's batches cost one open batch per
	// thread, plus one per thread for a batch whose span started before it.
	f, err := trace.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	er := f.NewEventReader()
	for range er.All() {
	}
	if er.Err() != nil || er.OpenBatches() > 2*len(tids)+1 {
		t.Errorf("stream: err %v, %d batches open at once, want at most %d", er.Err(), er.OpenBatches(), 2*len(tids)+1)
	}
	t.Logf("%d batches open at once for %d threads", er.OpenBatches(), len(tids))
}

// BenchmarkWriteFromSpill measures the final pass: spilled records read
// back, converted and written as a trace.
func BenchmarkWriteFromSpill(b *testing.B) {
	dir := b.TempDir()
	const n = 1 << 16
	r := spilledRing(b, dir, []uint32{1, 2, 3, 4}, n, 819)
	defer r.close()
	d := &drainer{st: trace.NewStringTable(), rings: []*ring{r}, maps: map[*ring]string{}}
	out := filepath.Join(dir, "out.cuprof")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := writeTrace(d, out, trace.Meta{}, clock{source: "monotonic"}, 0, &Result{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(4*n*b.N)/b.Elapsed().Seconds(), "events/s")
}

// TestWriteTraceRescues: when the output cannot be written after the
// program ran, the recording goes to a private file elsewhere, whole.
func TestWriteTraceRescues(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	const n = 100
	r := spilledRing(t, dir, []uint32{7}, n, 819)
	defer r.close()
	d := &drainer{st: trace.NewStringTable(), rings: []*ring{r}, maps: map[*ring]string{}}
	// The output's directory vanished while the program ran.
	out := filepath.Join(dir, "gone", "out.cuprof")
	res := &Result{}
	if err := writeTrace(d, out, trace.Meta{Capture: "sim"}, clock{source: "monotonic"}, 42, res); err != nil {
		t.Fatal(err)
	}
	if res.Rescued == "" || res.WriteErr == nil || !strings.HasPrefix(res.Rescued, os.Getenv("TMPDIR")) {
		t.Fatalf("rescued to %q (%v)", res.Rescued, res.WriteErr)
	}
	tr, err := trace.ReadFile(res.Rescued)
	if err != nil || len(tr.Events) != n {
		t.Fatalf("rescued trace: %v, %d events", err, len(tr.Events))
	}
	if st, _ := os.Stat(res.Rescued); st.Mode().Perm() != 0o600 {
		t.Errorf("rescued file mode %v", st.Mode())
	}
}
