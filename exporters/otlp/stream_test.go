package otlp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// observeAll feeds a trace to a streamer the way the recorder does: per
// process, in slices of a few events.
func observeAll(s *Streamer, tr *trace.Trace, chunk int) {
	byPID := map[uint32][]trace.Event{}
	var pids []uint32
	for _, e := range tr.Events {
		if _, ok := byPID[e.PID]; !ok {
			pids = append(pids, e.PID)
		}
		byPID[e.PID] = append(byPID[e.PID], e)
	}
	for _, pid := range pids {
		evs := byPID[pid]
		for len(evs) > 0 {
			n := min(chunk, len(evs))
			buf := append([]trace.Event(nil), evs[:n]...)
			s.Observe(pid, buf, tr.Strings)
			for i := range buf { // the recorder reuses its buffer
				buf[i] = trace.Event{}
			}
			evs = evs[n:]
		}
	}
}

func TestStreamerSendsEverySpanOnce(t *testing.T) {
	tr := readFixture(t, "small.txt")
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			r := &receiver{keep: true}
			ep := r.start(t, p)
			s, err := NewStreamer(context.Background(), tr.Meta, WithEndpoint(ep), WithProtocol(p),
				WithBatchBytes(1500), WithQueue(64), WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			observeAll(s, tr, 3)
			st, err := s.Close(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []*tracepb.ResourceSpans
			for _, req := range r.requests {
				got = append(got, req.ResourceSpans...)
			}
			ids := spanIndex(t, got)
			if st.Sent != st.Spans || st.Dropped != 0 || st.Failed != 0 || len(ids) != st.Spans {
				t.Errorf("stats %+v, received %d", st, len(ids))
			}
			// calls, push and start ranges, spans, objects (8) and processes (2)
			ranges := analysis.Of(tr).Ranges
			calls := 0
			for _, e := range tr.Events {
				if e.Kind == trace.KindCall {
					calls++
				}
			}
			if want := calls + len(ranges) + 8 + 2; st.Spans != want {
				t.Errorf("%d spans, want %d", st.Spans, want)
			}
			names := map[string]int{}
			for _, sp := range ids {
				names[sp.Name]++
				if sp.Name == "cuMemAllocAsync" && ids[string(sp.ParentSpanId)].Name != "Allocator.alloc" {
					t.Errorf("streamed cuMemAllocAsync parent %q, want Allocator.alloc (the span arrives in the same Observe)", ids[string(sp.ParentSpanId)].Name)
				}
				if sp.Name == "stream" && len(sp.Links) != 2 {
					t.Errorf("stream lifetime has %d links", len(sp.Links))
				}
			}
			if names["allocation"] != 3 || names["context"] != 2 {
				t.Errorf("lifetimes %v", names)
			}
		})
	}
}

// blockingReceiver never answers until released: the streamer must keep
// accepting events, dropping batches it cannot queue.
func TestStreamerNeverBlocksOnAStuckCollector(t *testing.T) {
	release := make(chan struct{})
	r := &receiver{stall: 0}
	ep := r.start(t, ProtocolHTTP)
	r.stallUntil = release
	s, err := NewStreamer(context.Background(), trace.Meta{Host: "h", Command: []string{"app"}},
		WithEndpoint(ep), WithProtocol(ProtocolHTTP), WithBatchBytes(4096), WithQueue(2),
		WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var evs []trace.Event
	for i := 0; i < 20000; i++ {
		evs = append(evs, trace.Event{Kind: trace.KindCall, API: trace.APIStreamQuery, PID: 1, TID: 1,
			Device: 0, Start: int64(i * 100), End: int64(i*100 + 50), Handle: 0x10, Stream: 0x10})
	}
	for i := 0; i < len(evs); i += 100 {
		s.Observe(1, evs[i:i+100], nil) // would deadlock here if Observe waited for the collector
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	st, err := s.Close(ctx)
	close(release)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrUnreachable) ||
		!strings.Contains(err.Error(), "had not taken the last spans when cuprof stopped waiting") {
		t.Errorf("close: %v; want a line saying the collector stalled, not a bare deadline", err)
	}
	if st.Dropped == 0 || st.Sent != 0 || st.Dropped+st.Failed != st.Spans {
		t.Errorf("stats %+v: want drops, nothing sent, everything counted", st)
	}
}

func TestStreamerCollectorDown(t *testing.T) {
	tr := readFixture(t, "small.txt")
	s, err := NewStreamer(context.Background(), tr.Meta, WithEndpoint(closedPort(t)),
		WithTimeout(time.Second), WithRetryFor(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	observeAll(s, tr, 5)
	st, err := s.Close(context.Background())
	if !errors.Is(err, ErrUnreachable) || st.Failed+st.Dropped != st.Spans || st.Sent != 0 {
		t.Errorf("stats %+v err %v", st, err)
	}
}

// TestStreamerPythonFrames streams a recording with Python frames, in trace
// order and in one batch, with its code table: the spans are the export's.
func TestStreamerPythonFrames(t *testing.T) {
	tr := tracetest.PythonTrace()
	r := &receiver{keep: true}
	ep := r.start(t, ProtocolHTTP)
	s, err := NewStreamer(context.Background(), tr.Meta, WithEndpoint(ep), WithProtocol(ProtocolHTTP),
		WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s.ObserveCode(tr.Code, tr.Strings)
	observeAll(s, tr, len(tr.Events))
	if _, err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []*tracepb.ResourceSpans
	for _, req := range r.requests {
		got = append(got, req.ResourceSpans...)
	}
	checkPythonSpans(t, spanIndex(t, got))
}
