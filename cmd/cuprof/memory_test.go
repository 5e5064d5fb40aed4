package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/internal/pprofui"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// heapFloor runs f, a command reading total events, and at 16 points of
// the second half of what it reads collects the garbage and reads the heap
// in use. It returns the least of those readings (what stays whatever
// transient buffers come and go: memory kept per event raises it as the
// run goes on) and their number.
func heapFloor(total int, f func()) (uint64, int) {
	floor, readings, k := ^uint64(0), 0, 0
	eventRead = func() {
		if k++; k > total/2 && k%(total/32) == 0 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			floor = min(floor, ms.HeapAlloc)
			readings++
		}
	}
	defer func() { eventRead = nil }()
	f()
	return floor, readings
}

// commandHeap runs the command line args (each %s in them is the trace of
// about events events, %d the directory dir) and returns heapFloor's
// reading of it.
func commandHeap(t *testing.T, dir string, events int, args []string) uint64 {
	t.Helper()
	path := loopFile(t, events/tracetest.LoopEventsPerIteration)
	return commandHeapOn(t, dir, path, 9*(events/9)+4, args)
}

// churnFile writes tracetest.ChurnStream(events) to a file and returns its
// path and its number of events.
func churnFile(t *testing.T, events int) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "churn.cuprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	tables, stream := tracetest.ChurnStream(events)
	n := 0
	counted := func(yield func(*trace.Event) bool) {
		for e := range stream {
			n++
			if !yield(e) {
				return
			}
		}
	}
	if err := tracetest.WriteStream(w, tables, counted); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return path, n
}

// commandHeapOn is commandHeap of the trace at path, of events events,
// which it removes.
func commandHeapOn(t *testing.T, dir, path string, events int, args []string) uint64 {
	t.Helper()
	defer os.Remove(path)
	argv := make([]string, len(args))
	total := 0
	for i, a := range args {
		if a == "%s" {
			total += events
		}
		argv[i] = strings.ReplaceAll(a, "%s", path)
		argv[i] = strings.ReplaceAll(argv[i], "%d", dir)
	}
	var runErr error
	var stderr bytes.Buffer
	floor, n := heapFloor(total, func() {
		runErr = run(argv, strings.NewReader(""), io.Discard, &stderr)
	})
	if runErr != nil {
		t.Fatalf("cuprof %s: %v\n%s", strings.Join(argv, " "), runErr, stderr.String())
	}
	if n < 15 {
		t.Fatalf("cuprof %s: %d heap readings in the second half of the run, want 16: it did not read the %d events through its progress count", strings.Join(argv, " "), n, total)
	}
	for _, p := range []string{"out.txt", "out.cuprof", "out.pb.gz"} {
		os.Remove(filepath.Join(dir, p))
	}
	return floor
}

// TestCommandMemoryDoesNotGrowWithEvents runs dump (text and binary), diff
// and view (of a trace) on traces of n and 4n events: the heap they hold
// while they run grows by less than a quarter of a byte per added event
// (what they keep is per distinct site, stack and live object, never per
// event).
func TestCommandMemoryDoesNotGrowWithEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs commands over about 4M synthetic events")
	}
	const n = 150_000
	cases := []struct {
		name string
		args []string
	}{
		{"dump", []string{"dump", "%s", "-o", "%d/out.txt"}},
		{"dump --binary", []string{"dump", "%s", "--binary", "-o", "%d/out.cuprof"}},
		{"diff", []string{"diff", "%s", "%s", "-o", "%d/out.pb.gz"}},
		{"view", []string{"view", "--no-browser", "%s"}},
	}
	viewStarted = func(s *pprofui.Server) { s.Close() }
	defer func() { viewStarted = nil }()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			commandHeap(t, dir, n, c.args) // warm up
			small := commandHeap(t, dir, n, c.args)
			large := commandHeap(t, dir, 4*n, c.args)
			growth := int64(large) - int64(small)
			t.Logf("least heap in the second half of the run: %d B for %d events, %d B for %d (%+.3f B per added event)",
				small, n, large, 4*n, float64(growth)/float64(3*n))
			if limit := int64(3 * n / 4); growth > limit {
				t.Errorf("heap grew by %d B for %d more events (limit %d): the command keeps something per event", growth, 3*n, limit)
			}
		})
	}
}

// TestCommandMemoryOfAllocationChurn runs dump (text and binary), diff and
// view on allocation churn (tracetest.ChurnStream: an allocation at a new
// address and its free, again and again) of 500,000 and 2M allocations:
// the heap they hold grows by less than a quarter of a byte per added
// event (issue 43): nothing is kept per object made.
func TestCommandMemoryOfAllocationChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs commands over about 25M synthetic events")
	}
	const n = 1_100_000 // about 500,000 allocations; 4n about 2M
	cases := []struct {
		name string
		args []string
	}{
		{"dump", []string{"dump", "%s", "-o", "%d/out.txt"}},
		{"dump --binary", []string{"dump", "%s", "--binary", "-o", "%d/out.cuprof"}},
		{"diff", []string{"diff", "%s", "%s", "-o", "%d/out.pb.gz"}},
		{"view", []string{"view", "--no-browser", "%s"}},
	}
	viewStarted = func(s *pprofui.Server) { s.Close() }
	defer func() { viewStarted = nil }()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, events := churnFile(t, n)
			small := commandHeapOn(t, dir, path, events, c.args)
			path4, events4 := churnFile(t, 4*n)
			large := commandHeapOn(t, dir, path4, events4, c.args)
			growth := int64(large) - int64(small)
			t.Logf("least heap in the second half of the run: %d B for %d events, %d B for %d (%+.3f B per added event)",
				small, events, large, events4, float64(growth)/float64(events4-events))
			if limit := int64((events4 - events) / 4); growth > limit {
				t.Errorf("heap grew by %d B for %d more events (limit %d): the command keeps something per object made", growth, events4-events, limit)
			}
		})
	}
}

// TestViewProfileReadIsBounded: what view allocates to read a gzipped
// profile stays within a few times its decompression cap, however far past
// the cap the input decompresses (4 and 16 times), and a profile within the
// cap is read whole.
func TestViewProfileReadIsBounded(t *testing.T) {
	defer func(old int64) { maxProfileBytes = old }(maxProfileBytes)
	maxProfileBytes = 1 << 20
	gz := func(data []byte) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		return b.Bytes()
	}
	// a real profile under the cap: many samples of a few functions
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "calls", Unit: "count"}}}
	fn := &profile.Function{ID: 1, Name: "f"}
	p.Function = []*profile.Function{fn}
	for i := uint64(1); i <= 2000; i++ {
		l := &profile.Location{ID: i, Address: i, Line: []profile.Line{{Function: fn}}}
		p.Location = append(p.Location, l)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{int64(i)}})
	}
	var enc bytes.Buffer
	if err := p.WriteUncompressed(&enc); err != nil {
		t.Fatal(err)
	}
	if enc.Len() >= int(maxProfileBytes) {
		t.Fatalf("the test profile is %d bytes, not under the cap", enc.Len())
	}
	var got *profile.Profile
	var err error
	under := heapAllocated(func() { got, err = readProfile(bytes.NewReader(gz(enc.Bytes()))) })
	if err != nil || len(got.Sample) != 2000 {
		t.Fatalf("a profile under the cap: %v (%d samples)", err, len(got.Sample))
	}
	t.Logf("a %d-byte profile: %d B allocated", enc.Len(), under)
	var allocs []uint64
	for _, times := range []int64{4, 16} {
		in := gz(bytes.Repeat([]byte{0}, int(times*maxProfileBytes)))
		n := heapAllocated(func() { _, err = readProfile(bytes.NewReader(in)) })
		if err == nil || !strings.Contains(err.Error(), "decompresses to more than") {
			t.Fatalf("%d times the cap: %v, want the cap's refusal", times, err)
		}
		t.Logf("%d times the cap: %d B allocated", times, n)
		if limit := uint64(4 * maxProfileBytes); n > limit {
			t.Errorf("%d times the cap: %d B allocated, want under %d", times, n, limit)
		}
		allocs = append(allocs, n)
	}
	if allocs[1] > allocs[0]+uint64(maxProfileBytes)/4 {
		t.Errorf("reading 16 times the cap allocated %d B, 4 times %d B: it grows with the input", allocs[1], allocs[0])
	}
}
