package trace

import (
	"bytes"
	"io"
	"testing"
)

// TestMergeManyOpenBatches reads a trace of 200,000 threads with two calls
// each, far apart (issue 47, item 7): every thread's batch is open at once
// between its two calls. Opening and closing a batch replays one leaf's path
// of the merge's tree, so the matches played by whole rebuilds (doubling the
// leaves) stay within twice the leaves however many batches open, where
// rebuilding on each open played 200,000 x 262,144 of them.
func TestMergeManyOpenBatches(t *testing.T) {
	threads := 200_000
	if testing.Short() {
		threads = 20_000
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{})
	if err := w.AddProcess(Process{PID: 1}); err != nil {
		t.Fatal(err)
	}
	const far = int64(1) << 40
	for i := range threads {
		tid := uint32(i + 1)
		start := int64(i) * 10
		calls := []Event{
			{Kind: KindCall, API: APICtxGetCurrent, PID: 1, TID: tid, Device: NoDevice, Start: start, End: start + 5},
			{Kind: KindCall, API: APICtxGetCurrent, PID: 1, TID: tid, Device: NoDevice, Start: far + start, End: far + start + 5},
		}
		if err := w.WriteBatch(1, tid, calls); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	r := f.NewEventReader(Sequential())
	var n int
	prev := int64(-1)
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d events: %v", n, err)
		}
		// Thread i's calls come at i*10 and far + i*10: the first calls of
		// every thread, then the second ones, in thread order.
		want := int64(n%threads)*10 + int64(n/threads)*far
		if e.Start != want || e.Start <= prev {
			t.Fatalf("event %d starts at %d, want %d", n, e.Start, want)
		}
		prev = e.Start
		n++
	}
	if n != 2*threads {
		t.Fatalf("%d events, want %d", n, 2*threads)
	}
	if got := r.OpenBatches(); got != threads {
		t.Errorf("%d batches open at most, want %d (one per thread)", got, threads)
	}
	leaves := int64(len(r.m.keys))
	if leaves < int64(threads) || leaves > 2*int64(threads)+2 {
		t.Errorf("%d leaves for %d open batches", leaves, threads)
	}
	if played := r.m.tree.played; played > 2*leaves {
		t.Errorf("whole rebuilds played %d matches, want at most %d (twice the %d leaves)", played, 2*leaves, leaves)
	}
}
