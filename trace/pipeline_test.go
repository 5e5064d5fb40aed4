package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"
)

// The pipeline's tests read each trace with the pipeline always on
// (pipeMin 0, even for a few events and with one processor) and never on,
// and want the same events in the same order and the same error after them.

const (
	pipeAlways = 0
	pipeNever  = math.MaxInt64
)

// readerWith is f's EventReader with the pipeline always or never on.
func readerWith(f *File, pipeMin int64) *EventReader {
	r := f.NewEventReader()
	r.pipeMin = pipeMin
	return r
}

// allEvents reads the rest of r through All, copying the events.
func allEvents(r *EventReader) ([]Event, error) {
	var out []Event
	for e := range r.All() {
		out = append(out, *e)
	}
	return out, r.Err()
}

// waitGoroutines waits until at most n goroutines run, failing after a
// deadline: a stopped producer ends soon after All returns.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines run, want %d: the producer did not end", runtime.NumGoroutine(), n)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// pipelineFixtures are binary traces: generated ones of a few shapes, the
// small text fixture and the version 1 file.
func pipelineFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, c := range []struct {
		name              string
		n, procs, threads int
		seed              uint64
	}{
		{"one-thread", 30_000, 1, 1, 1},
		{"2x4", 100_000, 2, 4, 2},
		{"3x7", 50_000, 3, 7, 3},
		{"tiny", 50, 1, 2, 4},
	} {
		out[c.name] = encode(t, genTrace(t, c.n, c.procs, c.threads, c.seed))
	}
	out["small.txt"] = encode(t, readTextFile(t, "testdata/small.txt"))
	v1, err := os.ReadFile("testdata/v1.cuprof")
	if err != nil {
		t.Fatal(err)
	}
	out["v1.cuprof"] = v1
	return out
}

// TestPipelineSameEvents: the pipelined reader yields ReadBinary's events in
// the same order as the unpipelined one, from a file and from memory, through
// All, Events and Next.
func TestPipelineSameEvents(t *testing.T) {
	for name, data := range pipelineFixtures(t) {
		want, err := ReadBinary(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, inMemory := range []bool{false, true} {
			var f *File
			if inMemory {
				f, err = newBinaryFile(memSource(data))
			} else {
				f, err = NewFile(bytes.NewReader(data), int64(len(data)))
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, pipeMin := range []int64{pipeAlways, pipeNever} {
				got, err := allEvents(readerWith(f, pipeMin))
				if err != nil || !slices.Equal(got, want.Events) {
					t.Fatalf("%s (memory %v, pipeMin %d): %d events, err %v; want ReadBinary's %d",
						name, inMemory, pipeMin, len(got), err, len(want.Events))
				}
			}
			var got []Event
			for e, err := range f.Events() { // the default: on from pipeMinEvents
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, *e)
			}
			if !slices.Equal(got, want.Events) {
				t.Fatalf("%s: Events differs from ReadBinary", name)
			}
		}
	}
}

// TestPipelineRandomStops reads random traces through a mix of Next and All
// stopped early at random events: the events come out once each, in order,
// and no producer is left running after each All.
func TestPipelineRandomStops(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	base := runtime.NumGoroutine()
	ran := false // a producer was started: the pipelined path was taken
	for round := range 6 {
		n := 20_000 + rng.IntN(60_000)
		tr := genTrace(t, n, 1+rng.IntN(3), 1+rng.IntN(5), uint64(round))
		want, f := readBoth(t, tr)
		r := readerWith(f, pipeAlways)
		var got []Event
		for step := 0; ; step++ {
			if step%2 == 0 {
				// All, stopped after k+1 events (at a block's edge, or not)
				k := []int{0, 1, pipeBlockEvents - 1, pipeBlockEvents, rng.IntN(5 * pipeBlockEvents)}[rng.IntN(5)]
				i := 0
				for e := range r.All() {
					// r.pipe, not a goroutine count: the producer may
					// have ended, or another test's goroutine with it
					ran = ran || r.pipe != nil
					got = append(got, *e)
					if i++; i > k {
						break // after k+1 events
					}
				}
				if r.Err() != nil {
					t.Fatal(r.Err())
				}
				waitGoroutines(t, base)
				if i <= k {
					break // All ended at the last event
				}
				continue
			}
			end := false
			for range rng.IntN(3 * pipeBlockEvents) {
				e, err := r.Next()
				if err == io.EOF {
					end = true
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, *e)
			}
			if r.pipe != nil {
				t.Fatal("Next started a producer")
			}
			if end {
				break
			}
		}
		if !slices.Equal(got, want.Events) {
			t.Fatalf("round %d: %d events through Next and stopped Alls, want ReadBinary's %d in order", round, len(got), len(want.Events))
		}
		if len(r.pending)+len(r.spare) > pipeBlocks {
			t.Errorf("round %d: %d blocks held, want at most %d", round, len(r.pending)+len(r.spare), pipeBlocks)
		}
	}
	if !ran {
		t.Error("no producer was started")
	}
}

// TestPipelineErrorAtBatch damages batch k after the scan: the pipelined
// reader yields the same events as the unpipelined one before the error,
// then the same error, from All's Err and from Next after it.
func TestPipelineErrorAtBatch(t *testing.T) {
	data := encode(t, genTrace(t, 80_000, 2, 3, 11))
	f, err := NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	nb := len(f.bin.batches)
	base := runtime.NumGoroutine()
	for _, k := range []int{0, 1, nb / 3, nb / 2, nb - 1} {
		b := f.bin.batches[k]
		at := b.off + int64(b.len)/2
		data[at] ^= 0x40
		want, wantErr := allEvents(readerWith(f, pipeNever))
		var ce *CorruptError
		if !errors.As(wantErr, &ce) || ce.Offset != b.off {
			t.Fatalf("batch %d: unpipelined err %v, want a checksum error at %d", k, wantErr, b.off)
		}
		r := readerWith(f, pipeAlways)
		got, err := allEvents(r)
		if !slices.Equal(got, want) || err == nil || err.Error() != wantErr.Error() {
			t.Errorf("batch %d: pipelined %d events then %v; want %d then %v", k, len(got), err, len(want), wantErr)
		}
		if _, err := r.Next(); err == nil || err.Error() != wantErr.Error() {
			t.Errorf("batch %d: Next after the error: %v, want %v again", k, err, wantErr)
		}
		var evs []Event
		var iterErr error
		for e, err := range f.Events() {
			if err != nil {
				iterErr = err
				break
			}
			evs = append(evs, *e)
		}
		if !slices.Equal(evs, want) || iterErr == nil || iterErr.Error() != wantErr.Error() {
			t.Errorf("batch %d: Events: %d events then %v; want %d then %v", k, len(evs), iterErr, len(want), wantErr)
		}
		waitGoroutines(t, base)
		data[at] ^= 0x40
	}
}

// TestPipelineStopsOnPanic: a yield that panics stops the producer too.
func TestPipelineStopsOnPanic(t *testing.T) {
	data := encode(t, genTrace(t, 40_000, 1, 2, 5))
	f, err := NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	r := readerWith(f, pipeAlways)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		n := 0
		for range r.All() {
			if n++; n == 3000 {
				panic("consumer")
			}
		}
	}()
	waitGoroutines(t, base)
}

// TestPipelineNextInsideAll: Next called from All's loop takes the next
// event from the running producer, and All goes on after it.
func TestPipelineNextInsideAll(t *testing.T) {
	want, f := readBoth(t, genTrace(t, 30_000, 2, 2, 9))
	r := readerWith(f, pipeAlways)
	var got []Event
	for e := range r.All() {
		got = append(got, *e)
		if len(got)%3 == 0 {
			if e, err := r.Next(); err == nil {
				got = append(got, *e)
			} else if err != io.EOF {
				t.Fatal(err)
			}
		}
	}
	if r.Err() != nil || !slices.Equal(got, want.Events) {
		t.Fatalf("%d events, err %v; want ReadBinary's %d", len(got), r.Err(), len(want.Events))
	}
}

// TestPipelineWhenItRuns: with the default threshold a small trace starts no
// goroutine, a large one does, and with one processor none does.
func TestPipelineWhenItRuns(t *testing.T) {
	ran := func(f *File) bool {
		base := runtime.NumGoroutine()
		r := f.NewEventReader()
		more := false
		for range r.All() {
			more = more || r.pipe != nil // a producer started
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		waitGoroutines(t, base)
		return more
	}
	open := func(n int) *File {
		data := encode(t, genTrace(t, n, 1, 2, 3))
		f, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	small, large := open(5_000), open(2*pipeMinEvents)
	if ran(small) {
		t.Errorf("a trace of %d events started a goroutine", small.NumEvents())
	}
	if runtime.GOMAXPROCS(0) > 1 && !ran(large) {
		t.Errorf("a trace of %d events started no goroutine", large.NumEvents())
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if ran(large) {
		t.Errorf("with GOMAXPROCS 1, a trace of %d events started a goroutine", large.NumEvents())
	}
}

// BenchmarkPipeline reads generated traces through All with a consumer that
// does little, with the pipeline on and off: the cost of starting it for a
// small trace, and what it gains for a large one (where the consumer is as
// fast as this one, not much: the merge is then the whole work).
func BenchmarkPipeline(b *testing.B) {
	for _, n := range []int{4_096, 16_384, 65_536, 262_144} {
		data := encode(b, genTrace(b, n, 2, 2, 1))
		f, err := NewFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name    string
			pipeMin int64
		}{{"on", pipeAlways}, {"off", pipeNever}} {
			b.Run(fmt.Sprintf("events=%d/pipe=%s", f.NumEvents(), c.name), func(b *testing.B) {
				var calls [1 << 16]uint64
				for b.Loop() {
					r := readerWith(f, c.pipeMin)
					for e := range r.All() {
						calls[e.API]++
						for range 20 { // some work per event, as a consumer does
							calls[e.API] += uint64(e.Start) >> 60
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(f.NumEvents()), "ns/event")
			})
		}
	}
}

// TestSequential: a reader made with Sequential starts no goroutine, even
// for a large trace, and reads the same events.
func TestSequential(t *testing.T) {
	data := encode(t, genTrace(t, 2*pipeMinEvents, 1, 2, 3))
	f, err := NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := allEvents(f.NewEventReader())
	if err != nil {
		t.Fatal(err)
	}
	r := f.NewEventReader(Sequential())
	var got []Event
	for e := range r.All() {
		if r.pipe != nil {
			t.Fatal("a Sequential reader started a producer")
		}
		got = append(got, *e)
	}
	if r.Err() != nil || !slices.Equal(got, want) {
		t.Fatalf("%d events, err %v; want %d", len(got), r.Err(), len(want))
	}
}

// readBoth encodes tr and returns it read whole (ReadBinary: what every
// reading must give) and opened as a File to read as a stream.
func readBoth(t *testing.T, tr *Trace) (*Trace, *File) {
	t.Helper()
	data := encode(t, tr)
	want, err := ReadBinary(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return want, f
}
