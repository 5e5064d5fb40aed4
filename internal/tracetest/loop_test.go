package tracetest

import (
	"bytes"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

func TestLoopTrace(t *testing.T) {
	tr := LoopTrace(10)
	// two threads' retain and set-current, then nine events per iteration
	if len(tr.Events) != 4+10*9 {
		t.Fatalf("%d events, want %d", len(tr.Events), 4+10*9)
	}
	for i := 1; i < len(tr.Events); i++ {
		if tr.Events[i].Start < tr.Events[i-1].Start {
			t.Fatalf("event %d starts before event %d", i, i-1)
		}
	}
}

func TestAllocFreePairs(t *testing.T) {
	tr := AllocFreePairs(10)
	if len(tr.Events) != 4*10 || len(tr.Processes) != 1 {
		t.Fatalf("%d events, %d processes; want 40 and 1", len(tr.Events), len(tr.Processes))
	}
	for i := 1; i < len(tr.Events); i++ {
		if tr.Events[i].Start < tr.Events[i-1].Start {
			t.Fatalf("event %d starts before event %d", i, i-1)
		}
	}
}

// TestWriteLoop: the streamed file holds LoopTrace's events.
func TestWriteLoop(t *testing.T) {
	var buf bytes.Buffer
	const n = 3000 // several batches per thread
	if err := WriteLoop(&buf, n); err != nil {
		t.Fatal(err)
	}
	got, err := trace.ReadBinary(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := LoopTrace(n)
	if len(got.Events) != len(want.Events) || got.Loss != nil {
		t.Fatalf("%d events (loss %v), want %d", len(got.Events), got.Loss, len(want.Events))
	}
	for i := range want.Events {
		g, w := got.Events[i], want.Events[i]
		if got.String(g.Name) != want.String(w.Name) {
			t.Fatalf("event %d: name %q, want %q", i, got.String(g.Name), want.String(w.Name))
		}
		g.Name, w.Name = 0, 0
		if g != w {
			t.Fatalf("event %d: %+v, want %+v", i, g, w)
		}
	}
}
