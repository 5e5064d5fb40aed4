package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// streamAll reads every event of f through an EventReader, copying them,
// and returns them with the most batches it held open.
func streamAll(t testing.TB, f *File) ([]Event, int) {
	t.Helper()
	r := f.NewEventReader()
	var out []Event
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out, r.OpenBatches()
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, *e)
	}
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.cuprof")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStreamMatchesReadBinary reads generated traces as a stream from a file
// and from memory: the same tables and the same events in the same order as
// ReadBinary, holding at most one batch per thread open (plus the one being
// opened).
func TestStreamMatchesReadBinary(t *testing.T) {
	for _, c := range []struct{ n, procs, threads int }{{50_000, 1, 1}, {100_000, 2, 4}, {30_000, 3, 7}} {
		tr := genTrace(t, c.n, c.procs, c.threads, uint64(c.n))
		data := encode(t, tr)
		want, err := ReadBinary(data)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Open(writeTemp(t, data))
		if err != nil {
			t.Fatal(err)
		}
		got, open := streamAll(t, f)
		if !slices.Equal(got, want.Events) {
			t.Fatalf("%+v: streamed events differ from ReadBinary's", c)
		}
		if f.NumEvents() != int64(len(want.Events)) {
			t.Errorf("NumEvents %d, want %d", f.NumEvents(), len(want.Events))
		}
		t.Logf("%+v: %d batches open at most", c, open)
		if threads := c.procs * c.threads; open > threads+1 {
			t.Errorf("%+v: %d batches open at once, want at most %d", c, open, threads+1)
		}
		tables := *want
		tables.Events = nil
		sameTrace(t, f.Tables(), &tables)
		all, err := f.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(all.Events, want.Events) {
			t.Errorf("ReadAll differs from ReadBinary")
		}
		// ReadAll's tables are the caller's.
		all.Strings[1] = "changed"
		all.Processes[0].PID = 999_999
		if f.Tables().Strings[1] == "changed" || f.Tables().Processes[0].PID == 999_999 {
			t.Errorf("a change to ReadAll's tables reached the File's")
		}
		// Events can be iterated again, and the range form stops early.
		n := 0
		for e, err := range f.Events() {
			if err != nil {
				t.Fatal(err)
			}
			if *e != want.Events[n] {
				t.Fatalf("second pass: event %d differs", n)
			}
			if n++; n == 1000 {
				break
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		// Input without positioned reads (standard input) reads the same.
		fr, err := OpenReader(io.MultiReader(bytes.NewReader(data)))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := streamAll(t, fr); !slices.Equal(got, want.Events) {
			t.Errorf("OpenReader events differ")
		}
	}
}

// TestStreamLateSpans writes, per thread, spans and frames long after they
// started (as the capture does: a span is recorded at its end): their
// batches go back in time. The stream still yields SortEvents order, and
// holds open only the batches whose time span covers the merge's time.
func TestStreamLateSpans(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{})
	name := w.String("outer")
	var all []Event
	const threads, perBatch, batches = 3, 1000, 20
	for b := 0; b < batches; b++ {
		for th := uint32(1); th <= threads; th++ {
			var ev []Event
			for i := 0; i < perBatch; i++ {
				s := int64(b*perBatch+i)*10 + int64(th)
				ev = append(ev, Event{Kind: KindCall, API: 5, PID: 1, TID: th, Start: s, End: s + 5, Device: NoDevice})
			}
			if b%5 == 4 {
				// a span enclosing the last five batches, written with
				// the last of them
				s := int64((b-4)*perBatch) * 10
				ev = append(ev, Event{Kind: KindSpan, Name: name, PID: 1, TID: th,
					Start: s, End: int64((b+1)*perBatch) * 10, Device: NoDevice})
			}
			if err := w.WriteBatch(1, th, ev); err != nil {
				t.Fatal(err)
			}
			all = append(all, ev...)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := OpenReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got, open := streamAll(t, f)
	SortEvents(all)
	if len(got) != len(all) || !eventsSorted(got) {
		t.Fatalf("%d events, sorted %v; want %d sorted", len(got), eventsSorted(got), len(all))
	}
	if got[0].Kind != KindSpan {
		t.Errorf("first event is a %s, want the span enclosing it", got[0].Kind)
	}
	// Per thread: the batch being merged and the one whose span covers it.
	t.Logf("%d batches open at most", open)
	if open > 2*threads+1 {
		t.Errorf("%d batches open at once, want at most %d", open, 2*threads+1)
	}
	bin, err := ReadBinary(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bin.Events, got) {
		t.Errorf("ReadBinary differs from the stream")
	}
}

// TestStreamTruncated opens cut files: the tables of the whole sections
// before the cut, a Loss, and a prefix of each thread's events.
func TestStreamTruncated(t *testing.T) {
	tr := genTrace(t, 40_000, 2, 2, 7)
	data := encode(t, tr)
	for _, cut := range []int{len(data) / 3, len(data) / 2, len(data) - 1} {
		f, err := NewFile(bytes.NewReader(data[:cut]), int64(cut))
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		loss := f.Tables().Loss
		if loss == nil || loss.Offset+loss.Bytes != int64(cut) {
			t.Fatalf("cut at %d: Loss %+v", cut, loss)
		}
		got, _ := streamAll(t, f)
		want, err := ReadBinary(data[:cut])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want.Events) || len(got) == 0 {
			t.Errorf("cut at %d: %d streamed events, ReadBinary %d", cut, len(got), len(want.Events))
		}
	}
}

// TestStreamDamage: a batch damaged after the scan (the file changed) or an
// unsorted batch is an error of the iteration, naming the batch.
func TestStreamDamage(t *testing.T) {
	tr := genTrace(t, 20_000, 1, 2, 3)
	data := encode(t, tr)
	f, err := NewFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	mid := f.bin.batches[len(f.bin.batches)/2]
	data[mid.off+int64(mid.len)/2] ^= 0x40
	var n int
	var iterErr error
	for _, err := range f.Events() {
		if err != nil {
			iterErr = err
			break
		}
		n++
	}
	var ce *CorruptError
	if !errors.As(iterErr, &ce) || ce.Offset != mid.off {
		t.Fatalf("after %d events: err %v, want a checksum error at %d", n, iterErr, mid.off)
	}
	// The iter.Seq form ends at the same event and keeps the error.
	r := f.NewEventReader()
	m := 0
	for range r.All() {
		m++
	}
	if m != n || !errors.Is(r.Err(), ErrCorrupt) {
		t.Errorf("All: %d events, Err %v; want %d and the checksum error", m, r.Err(), n)
	}
	if r := f.NewEventReader(); r.Err() != nil {
		t.Errorf("a new reader has an error")
	}

	// A batch whose events break SortEvents order at an equal Start.
	evs := []Event{
		{Kind: KindCall, Start: 10, End: 11, Device: NoDevice},
		{Kind: KindCall, Start: 10, End: 20, Device: NoDevice},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{})
	w.flushTables()
	w.writeSection(secEvents, newBatchEncoder().encode(1, 1, evs))
	w.events, w.batches = 2, 1
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBinary(buf.Bytes()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("unsorted batch: err = %v, want ErrCorrupt", err)
	}
}

// TestStreamText opens the text twin through the same API.
func TestStreamText(t *testing.T) {
	text, err := os.ReadFile("testdata/small.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadText(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "small.txt")
	if err := os.WriteFile(path, text, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := f.NewEventReader()
	var got []Event
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, *e)
		e.Start = -1 // the caller's copy: the file's events do not change
	}
	if !slices.Equal(got, want.Events) || len(got) == 0 {
		t.Fatalf("text stream: %d events, want %d", len(got), len(want.Events))
	}
	if again, _ := streamAll(t, f); !slices.Equal(again, want.Events) {
		t.Errorf("a caller's change to a text event stayed in the file")
	}
	if f.Tables().Events != nil || f.Tables().Meta.Host != want.Meta.Host {
		t.Errorf("tables: %+v", f.Tables())
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := OpenReader(bytes.NewReader([]byte("hello\n"))); !errors.Is(err, ErrNotTrace) {
		t.Errorf("not a trace: %v", err)
	}
}

// TestStreamCopy copies a trace as a stream, File to NewTraceWriter and
// WriteEvent: the copy reads back the same, and its batches interleave in
// time (one per thread open at a time).
func TestStreamCopy(t *testing.T) {
	tr := genTrace(t, 60_000, 2, 3, 17)
	data := encode(t, tr)
	want, err := ReadBinary(data)
	if err != nil {
		t.Fatal(err)
	}
	copied := streamCopy(t, data)
	got, err := ReadBinary(copied)
	if err != nil {
		t.Fatal(err)
	}
	sameTrace(t, got, want)
	if !slices.Equal(got.Events, want.Events) {
		t.Errorf("copied events differ")
	}
	cf, err := OpenReader(bytes.NewReader(copied))
	if err != nil {
		t.Fatal(err)
	}
	if _, open := streamAll(t, cf); open > 6+1 {
		t.Errorf("the copy holds %d batches open at once, want at most one per thread", open)
	}
}

// streamCopy copies the trace data event by event through OpenReader and
// NewTraceWriter (as cuprof dump does), and returns the copy.
func streamCopy(t *testing.T, data []byte) []byte {
	t.Helper()
	f, err := OpenReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := NewTraceWriter(&buf, f.Tables())
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range f.Events() {
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestStreamCopyCode: a stream copy keeps the code table its frames name.
func TestStreamCopyCode(t *testing.T) {
	tr := &Trace{Strings: []string{"", "f", "m"}, Code: []Code{{}, {Kind: CodePython, Name: 1, Module: 2}}}
	tr.Events = []Event{{Kind: KindFrame, PID: 1, TID: 1, Start: 1, End: 2, Code: 1}}
	got, err := ReadBinary(streamCopy(t, encode(t, tr)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Code, tr.Code) || len(got.Events) != 1 || got.Events[0].Code != 1 {
		t.Errorf("copy has code %v, events %v; want code %v and the frame", got.Code, got.Events, tr.Code)
	}
}

// TestWriteEventBadAtClose: an event WriteEvent buffered that WriteBatch
// refuses makes Close fail instead of being dropped.
func TestWriteEventBadAtClose(t *testing.T) {
	w := NewWriter(io.Discard, Meta{})
	if err := w.WriteEvent(&Event{Kind: KindFrame, PID: 1, TID: 1, Start: 1, End: 2, Code: 7}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close succeeded with an event naming a code entry never added")
	}
}

// TestStreamAllAfterNext: All hands out the events Next has not, in order,
// after some taken with Next and after an early stop of All, and Next goes
// on where All stopped.
func TestStreamAllAfterNext(t *testing.T) {
	tr := genTrace(t, 20_000, 2, 3, 7)
	data := encode(t, tr)
	want, err := ReadBinary(data)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(writeTemp(t, data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := f.NewEventReader()
	var got []Event
	for range 5 {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, *e)
	}
	for e := range r.All() {
		if got = append(got, *e); len(got) == 7777 {
			break
		}
	}
	for e, err := r.Next(); err != io.EOF; e, err = r.Next() {
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, *e); len(got) == 12345 {
			break
		}
	}
	for e := range r.All() {
		got = append(got, *e)
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if !slices.Equal(got, want.Events) {
		t.Fatalf("%d events through Next and All, want ReadBinary's %d in the same order", len(got), len(want.Events))
	}
}

// textStream is a text trace of n calls on two threads made as it is read
// (nothing holds it): standard input fed by a program that never stops.
type textStream struct {
	n, i int
	buf  bytes.Buffer
}

func (s *textStream) Read(p []byte) (int, error) {
	for s.buf.Len() < len(p) && s.i <= s.n {
		if s.i == 0 {
			s.buf.WriteString(TextHeader + "\nmeta host=pipe\nprocess pid=1\nthread pid=1 tid=1\nthread pid=1 tid=2\n")
		} else {
			fmt.Fprintf(&s.buf, "call 1/%d t=%d end=%d api=cuMemAllocAsync handle=0x%x size=64\n", 1+s.i%2, 100*s.i, 100*s.i+50, 0x7f0000000000+64*s.i)
		}
		s.i++
	}
	if s.buf.Len() == 0 {
		return 0, io.EOF
	}
	return s.buf.Read(p)
}

// TestStreamTextHoldsNoEvents: a text trace from a pipe is parsed as it
// comes (issue 47, item 8): what OpenReader holds once it has read 200,000
// events is within 1 MiB of what it holds for 50,000 (the events read whole
// took about 100 bytes each), and every event is read back, in order.
func TestStreamTextHoldsNoEvents(t *testing.T) {
	heldAfterOpen := func(n int) (uint64, *File) {
		runtime.GC()
		f, err := OpenReader(&textStream{n: n})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc, f
	}
	const n = 50_000
	small, fs := heldAfterOpen(n)
	fs.Close()
	large, f := heldAfterOpen(4 * n)
	defer f.Close()
	t.Logf("heap after opening %d text events: %d B; %d events: %d B", n, small, 4*n, large)
	if int64(large)-int64(small) > 1<<20 {
		t.Errorf("opening %d more text events held %d B more: the events are kept", 3*n, int64(large)-int64(small))
	}
	if f.Tables().Meta.Host != "pipe" || len(f.Tables().Threads) != 2 {
		t.Errorf("tables: %+v", f.Tables())
	}
	got := 0
	for e, err := range f.Events() {
		if err != nil {
			t.Fatal(err)
		}
		got++
		if e.Start != int64(100*got) || e.TID != uint32(1+got%2) || e.Handle != uint64(0x7f0000000000+64*got) {
			t.Fatalf("event %d: %+v", got, e)
		}
	}
	if got != 4*n {
		t.Errorf("%d events read back, want %d", got, 4*n)
	}
}
