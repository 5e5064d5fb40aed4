package trace_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// benchLengths are the trace lengths of the streaming benchmarks, in events;
// CUPROF_BENCH_LARGE=1 adds 100M (a 650 MB file, a few minutes).
func benchLengths() []int {
	n := []int{1_000_000, 10_000_000}
	if os.Getenv("CUPROF_BENCH_LARGE") != "" {
		n = append(n, 100_000_000)
	}
	return n
}

// loopFile writes a LoopTrace of about events events under dir, once per
// length for all benchmarks of the binary.
var loopFiles = map[int]string{}

func loopFile(b *testing.B, events int) string {
	if p, ok := loopFiles[events]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "cuprof-bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir); delete(loopFiles, events) })
	p := filepath.Join(dir, fmt.Sprintf("loop-%d.cuprof", events))
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := tracetest.WriteLoop(w, events/tracetest.LoopEventsPerIteration); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	loopFiles[events] = p
	return p
}

// apiStats is the simple consumer: calls per API and their percentiles.
type apiStats struct {
	calls [1 << 16]uint64
	durs  map[trace.API]*quantile.Sketch
}

func (s *apiStats) add(e *trace.Event) {
	if e.Kind != trace.KindCall {
		return
	}
	s.calls[e.API]++
	q := s.durs[e.API]
	if q == nil {
		q = &quantile.Sketch{}
		s.durs[e.API] = q
	}
	q.Add(e.Duration())
}

func (s *apiStats) percentiles() (p int64) {
	for _, q := range s.durs {
		p += q.Quantile(50) + q.Quantile(99)
	}
	return p
}

// heapPeak samples the live heap while a benchmark runs.
type heapPeak struct{ max uint64 }

func (h *heapPeak) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.max = max(h.max, m.HeapInuse)
}

// BenchmarkStreamReport is a streaming read of a trace file with a simple
// consumer (calls per API, median and p99 per API through quantile.Sketch),
// against trace length. It reports ns/event and the peak live heap (sampled
// every million events), whose growth with the length is what the streaming
// reader bounds.
func BenchmarkStreamReport(b *testing.B) {
	for _, n := range benchLengths() {
		b.Run(fmt.Sprintf("events=%dM", n/1_000_000), func(b *testing.B) {
			path := loopFile(b, n)
			runtime.GC()
			var peak heapPeak
			peak.sample()
			base := peak.max
			b.ResetTimer()
			var events int64
			for b.Loop() {
				f, err := trace.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				st := &apiStats{durs: map[trace.API]*quantile.Sketch{}}
				events = 0
				for e, err := range f.Events() {
					if err != nil {
						b.Fatal(err)
					}
					st.add(e)
					if events++; events%1_000_000 == 0 {
						peak.sample()
					}
				}
				st.percentiles()
				peak.sample()
				f.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
			b.ReportMetric(float64(peak.max)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(peak.max-min(base, peak.max))/float64(events), "heap-B/event")
		})
	}
}

// BenchmarkStreamRead is the streaming read alone, counting calls per API:
// the reader's own time and memory against trace length.
func BenchmarkStreamRead(b *testing.B) {
	for _, n := range benchLengths() {
		b.Run(fmt.Sprintf("events=%dM", n/1_000_000), func(b *testing.B) {
			path := loopFile(b, n)
			runtime.GC()
			var peak heapPeak
			peak.sample()
			base := peak.max
			b.ResetTimer()
			var events int64
			var calls [1 << 16]uint64
			open := 0
			for b.Loop() {
				f, err := trace.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				events = 0
				r := f.NewEventReader()
				for e := range r.All() {
					calls[e.API]++
					if events++; events%1_000_000 == 0 {
						peak.sample()
					}
				}
				if err := r.Err(); err != nil {
					b.Fatal(err)
				}
				open = r.OpenBatches()
				peak.sample()
				f.Close()
			}
			b.ReportMetric(float64(open), "open-batches")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
			b.ReportMetric(float64(peak.max)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(peak.max-min(base, peak.max))/float64(events), "heap-B/event")
		})
	}
}

// BenchmarkReadFileReport is the same consumer over trace.ReadFile, which
// holds every event: the cost the streaming reader removes.
func BenchmarkReadFileReport(b *testing.B) {
	for _, n := range benchLengths()[:2] {
		b.Run(fmt.Sprintf("events=%dM", n/1_000_000), func(b *testing.B) {
			path := loopFile(b, n)
			runtime.GC()
			var peak heapPeak
			peak.sample()
			base := peak.max
			b.ResetTimer()
			var events int
			for b.Loop() {
				t, err := trace.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				peak.sample()
				st := &apiStats{durs: map[trace.API]*quantile.Sketch{}}
				for i := range t.Events {
					st.add(&t.Events[i])
				}
				st.percentiles()
				peak.sample()
				events = len(t.Events)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
			b.ReportMetric(float64(peak.max)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(peak.max-min(base, peak.max))/float64(events), "heap-B/event")
		})
	}
}
