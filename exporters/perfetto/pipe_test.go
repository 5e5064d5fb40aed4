package perfetto

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// writeTimeline writes tr's timeline in format to w, asking its size after
// the event at, and returns that size and Close's error.
func writeTimeline(w *bytes.Buffer, tr *trace.Trace, format string, at int) (int64, error) {
	tw := NewWriter(w, tr)
	if format == "chrome-json" {
		tw = NewChromeJSONWriter(w, tr)
	}
	var size int64
	tk := analysis.NewTracker(tr, tw.Options()...)
	for i := range tr.Events {
		tk.Step(&tr.Events[i])
		if i == at {
			size = tw.Size()
		}
	}
	tk.Finish()
	return size, tw.Close()
}

// TestPipelineWritesTheSameBytes: the timeline rendered on other
// goroutines (the pipe, the block writer: traces of many batches and
// blocks) is byte for byte the one rendered where the replay runs (one
// goroutine: GOMAXPROCS 1), in both formats, and its size asked midway is
// the same.
func TestPipelineWritesTheSameBytes(t *testing.T) {
	traces := map[string]*trace.Trace{"loop": tracetest.LoopTrace(20_000),
		"random": tracetest.Random(7, 60_000), "python": tracetest.PythonTrace()}
	for name, tr := range traces {
		for _, format := range []string{"perfetto", "chrome-json"} {
			at := len(tr.Events) / 3
			var one, two bytes.Buffer
			prev := runtime.GOMAXPROCS(1)
			size1, err1 := writeTimeline(&one, tr, format, at)
			runtime.GOMAXPROCS(max(prev, 2))
			size2, err2 := writeTimeline(&two, tr, format, at)
			runtime.GOMAXPROCS(prev)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s %s: %v, %v", name, format, err1, err2)
			}
			if !bytes.Equal(one.Bytes(), two.Bytes()) {
				t.Errorf("%s %s: %d bytes on one goroutine, %d on several, not the same", name, format, one.Len(), two.Len())
			}
			if size1 != size2 {
				t.Errorf("%s %s: size after event %d: %d on one goroutine, %d on several", name, format, at, size1, size2)
			}
			t.Logf("%s %s: %d events, %d bytes, %d after event %d", name, format, len(tr.Events), one.Len(), size1, at)
		}
	}
}

// failWriter fails every write from its n-th byte on.
type failWriter struct{ n, wrote int }

var errDiskFull = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.wrote+len(p) > f.n {
		return 0, errDiskFull
	}
	f.wrote += len(p)
	return len(p), nil
}

// TestWriteErrorIsReturned: a write that fails, early or late, on one
// goroutine or several, is Close's error.
func TestWriteErrorIsReturned(t *testing.T) {
	tr := tracetest.LoopTrace(20_000)
	for _, procs := range []int{1, 2} {
		for _, format := range []string{"perfetto", "chrome-json"} {
			for _, n := range []int{0, 3 << 20} {
				t.Run(fmt.Sprintf("%d-%s-%d", procs, format, n), func(t *testing.T) {
					prev := runtime.GOMAXPROCS(procs)
					defer runtime.GOMAXPROCS(prev)
					w := &failWriter{n: n}
					tw := NewWriter(w, tr)
					if format == "chrome-json" {
						tw = NewChromeJSONWriter(w, tr)
					}
					analysis.Of(tr, tw.Options()...)
					if err := tw.Close(); !errors.Is(err, errDiskFull) {
						t.Errorf("Close: %v, want %v", err, errDiskFull)
					}
				})
			}
		}
	}
}

// TestPutLen: a length written after its contents, in the one byte kept
// for it or moving them when it takes more, is protowire's.
func TestPutLen(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 16383, 16384, 70000} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 13)
		}
		o := append([]byte{0xaa, 0}, body...)
		o = putLen(o, 2)
		want := protowire.AppendBytes([]byte{0xaa}, body)
		if !bytes.Equal(o, want) {
			t.Errorf("%d bytes: got %d bytes, want %d", n, len(o), len(want))
		}
	}
}

// TestJSONTimes: times written as microseconds, with the milliseconds'
// digits kept from the last time, are the integer microseconds and the
// nanoseconds without trailing zeros, whatever came before.
func TestJSONTimes(t *testing.T) {
	jw := &jsonWriter{}
	ns := []int64{0, 1, 999, 1000, 1001, 999_999, 1_000_000, 1_000_001, 1_000_999_000, 1_001_000_000,
		1_001_000_001, 1_234_567_891, 1_234_567_891, 1_234_568_000, 999_999_999_999, -5, -1_234_567_891, 1 << 62}
	for i, v := range ns {
		jw.buf = jw.buf[:0]
		jw.ts("", v)
		wantText := strconv.FormatInt(v/1000, 10)
		if v < 0 && v/1000 == 0 {
			wantText = "-0"
		}
		if r := v % 1000; r != 0 {
			wantText += strings.TrimRight(fmt.Sprintf(".%03d", max(r, -r)), "0")
		}
		if string(jw.buf) != wantText {
			t.Errorf("%d (after %v): %q, want %q", v, ns[:i], jw.buf, wantText)
		}
	}
}
