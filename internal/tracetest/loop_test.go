package tracetest

import "testing"

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
