package trace

import (
	"bytes"
	"testing"
)

// benchTrace is the realistic mix of genTrace: 1M events, 2 processes of 4
// threads.
var benchTraceCache *Trace

func benchTrace(b *testing.B) *Trace {
	if benchTraceCache == nil {
		benchTraceCache = genTrace(b, 1_000_000, 2, 4, 99)
	}
	return benchTraceCache
}

// BenchmarkEncode reports ns/record and bytes/record of WriteBinary.
func BenchmarkEncode(b *testing.B) {
	tr := benchTrace(b)
	var buf bytes.Buffer
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		if err := WriteBinary(&buf, tr); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(tr.Events))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
	b.ReportMetric(float64(buf.Len())/n, "bytes/record")
}

// BenchmarkDecode reports ns/record and records/s of ReadBinary, sorting
// included.
func BenchmarkDecode(b *testing.B) {
	tr := benchTrace(b)
	var buf bytes.Buffer
	if err := WriteBinary(&buf, tr); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	cpu0 := cpuNanos()
	for b.Loop() {
		if _, err := ReadBinary(data); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(tr.Events))
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N)/n, "cpu-ns/record")
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
	b.ReportMetric(ns, "ns/record")
	b.ReportMetric(1e9/ns, "records/s")
	b.ReportMetric(float64(len(data))/n, "bytes/record")
}

// BenchmarkDecodeOneThread is decoding without the merge of threads.
func BenchmarkDecodeOneThread(b *testing.B) {
	tr := genTrace(b, 1_000_000, 1, 1, 5)
	var buf bytes.Buffer
	if err := WriteBinary(&buf, tr); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ReadBinary(data); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(tr.Events))
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
	b.ReportMetric(ns, "ns/record")
	b.ReportMetric(1e9/ns, "records/s")
}

// BenchmarkReadText is the text twin's parser, for comparison.
func BenchmarkReadText(b *testing.B) {
	tr := genTrace(b, 100_000, 1, 2, 5)
	var buf bytes.Buffer
	if err := WriteText(&buf, tr); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ReadText(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(tr.Events))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
	b.ReportMetric(float64(len(data))/n, "bytes/record")
}

// BenchmarkWriteBatch is the capture path: one thread's events handed to a
// streaming Writer 4096 at a time, already in order.
func BenchmarkWriteBatch(b *testing.B) {
	tr := genTrace(b, 1_000_000, 1, 1, 5)
	var buf bytes.Buffer
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		w := NewWriter(&buf, tr.Meta)
		for _, s := range tr.Strings[1:] {
			w.String(s)
		}
		ev := tr.Events
		for len(ev) > 0 {
			n := min(len(ev), 4096)
			if err := w.WriteBatch(1000, 1000, ev[:n]); err != nil {
				b.Fatal(err)
			}
			ev = ev[n:]
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(tr.Events))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
	b.ReportMetric(float64(buf.Len())/n, "bytes/record")
}

// BenchmarkDecodeReuse is BenchmarkDecode decoding into a reused []Event:
// the decoder's own cost, without the page faults of a fresh 100 MB slice.
func BenchmarkDecodeReuse(b *testing.B) {
	tr := benchTrace(b)
	var buf bytes.Buffer
	if err := WriteBinary(&buf, tr); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	events := make([]Event, len(tr.Events))
	b.ResetTimer()
	for b.Loop() {
		if _, err := readBinaryInto(data, true, events); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(len(tr.Events))
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / n
	b.ReportMetric(ns, "ns/record")
	b.ReportMetric(1e9/ns, "records/s")
}
