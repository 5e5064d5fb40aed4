package trace

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// canonical orders events totally (SortEvents leaves ties between threads
// in input order, which differs between a trace and its file).
func canonical(ev []Event) []Event {
	out := slices.Clone(ev)
	slices.SortStableFunc(out, func(a, b Event) int {
		if eventLess(&a, &b) {
			return -1
		}
		if eventLess(&b, &a) {
			return 1
		}
		if a.PID != b.PID {
			return int(a.PID) - int(b.PID)
		}
		return int(a.TID) - int(b.TID)
	})
	return out
}

func sameTrace(t *testing.T, got, want *Trace) {
	t.Helper()
	if !eventsSorted(got.Events) {
		t.Errorf("events not in SortEvents order")
	}
	g, w := *got, *want
	g.Events, w.Events = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Errorf("tables differ:\ngot  %+v\nwant %+v", g, w)
	}
	ge, we := canonical(got.Events), canonical(want.Events)
	if len(ge) != len(we) {
		t.Fatalf("%d events, want %d", len(ge), len(we))
	}
	for i := range ge {
		if ge[i] != we[i] {
			t.Fatalf("event %d:\ngot  %+v\nwant %+v", i, ge[i], we[i])
		}
	}
}

func encode(t testing.TB, tr *Trace) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteBinary(&buf, tr); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestBinaryRoundTripSmall(t *testing.T) {
	tr := readTextFile(t, "testdata/small.txt")
	data := encode(t, tr)
	got, err := ReadBinary(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Loss != nil {
		t.Errorf("loss on a whole file: %+v", got.Loss)
	}
	sameTrace(t, got, tr)
}

func TestBinaryRoundTrip1M(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	tr := genTrace(t, n, 3, 4, 1)
	data := encode(t, tr)
	t.Logf("%d events, %d bytes, %.2f bytes/event", len(tr.Events), len(data), float64(len(data))/float64(len(tr.Events)))
	got, err := ReadBinary(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Loss != nil {
		t.Errorf("loss on a whole file: %+v", got.Loss)
	}
	sameTrace(t, got, tr)
}

func TestEmptyTrace(t *testing.T) {
	got, err := ReadBinary(encode(t, &Trace{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 0 || len(got.Strings) != 1 || got.Loss != nil {
		t.Errorf("empty trace read back as %+v", got)
	}
}

func TestStreamingWriterUnsorted(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{Host: "h"})
	name := w.String("step")
	if w.String("step") != name || w.String("") != 0 {
		t.Fatal("String does not intern")
	}
	w.AddProcess(Process{PID: 1, Cmdline: []string{"a"}})
	w.AddThread(Thread{PID: 1, TID: 2, Name: "main"})
	w.AddDrop(Drop{PID: 1, TID: 2, Events: 3})
	evs := []Event{
		{Kind: KindCall, Start: 300, End: 310, API: 5, Device: NoDevice},
		{Kind: KindRangePush, Start: 100, End: 100, Name: name, Device: NoDevice},
		{Kind: KindCall, Start: 200, End: 250, Handle: 7, Device: 0},
	}
	if err := w.WriteBatch(1, 2, evs); err != nil {
		t.Fatal(err)
	}
	if evs[0].Start != 300 {
		t.Error("WriteBatch modified its argument")
	}
	// more than one batch's worth, out of order
	var many []Event
	for i := 10000; i > 0; i-- {
		many = append(many, Event{Kind: KindMark, Start: int64(1000 + i), End: int64(1000 + i), Device: NoDevice})
	}
	if err := w.WriteBatch(1, 3, many); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteBatch(1, 2, []Event{{Kind: KindCall, Name: 99}}); err == nil {
		t.Error("undefined string ID accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBinary(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 10003 || !eventsSorted(got.Events) || got.Loss != nil {
		t.Fatalf("read %d events (sorted %v, loss %v)", len(got.Events), eventsSorted(got.Events), got.Loss)
	}
	if e := got.Events[0]; e.Kind != KindRangePush || got.String(e.Name) != "step" || e.PID != 1 || e.TID != 2 {
		t.Errorf("first event %+v", e)
	}
	if len(got.Processes) != 1 || len(got.Threads) != 1 || got.TotalDrops() != 3 || got.Meta.Host != "h" {
		t.Errorf("tables: %+v", got)
	}
}

// TestTruncation cuts a small trace's file at every byte of its first 512
// bytes and every 1 KiB after: each cut reads cleanly up to the cut with a
// Loss, or fails with an error; nothing panics.
func TestTruncation(t *testing.T) {
	tr := genTrace(t, 40_000, 2, 2, 7)
	data := encode(t, tr)
	whole, err := ReadBinary(data)
	if err != nil {
		t.Fatal(err)
	}
	var cuts []int
	for i := 0; i < 512 && i < len(data); i++ {
		cuts = append(cuts, i)
	}
	for i := 1024; i < len(data); i += 1024 {
		cuts = append(cuts, i)
	}
	var losses, errs int
	prev := -1
	for _, cut := range cuts {
		got, err := ReadBinary(data[:cut])
		if err != nil {
			if cut >= headerLen {
				t.Errorf("cut at %d: %v; want a Loss", cut, err)
			}
			errs++
			continue
		}
		if got.Loss == nil {
			t.Fatalf("cut at %d: no Loss", cut)
		}
		losses++
		if got.Loss.Offset+got.Loss.Bytes != int64(cut) || got.Loss.Reason == "" {
			t.Errorf("cut at %d: Loss %+v does not account for the bytes", cut, got.Loss)
		}
		if len(got.Events) < prev {
			t.Errorf("cut at %d: %d events, fewer than a shorter cut's %d", cut, len(got.Events), prev)
		}
		prev = len(got.Events)
		// What was read is a prefix of each thread's events.
		if len(got.Events) > len(whole.Events) || !eventsSorted(got.Events) {
			t.Fatalf("cut at %d: %d events", cut, len(got.Events))
		}
	}
	if prev == 0 {
		t.Errorf("no cut read any events")
	}
	t.Logf("%d-byte file: %d cuts with a loss, %d errors", len(data), losses, errs)
}

// TestPresenceMatchesTable keeps the encoder's inline presence bitmap in
// step with the declarative field table.
func TestPresenceMatchesTable(t *testing.T) {
	tr := genTrace(t, 5000, 1, 1, 2)
	extra := []Event{
		{Kind: KindObjectName, Object: ObjectPool, Aux: 3, ID: 4, Size: 5, Flags: 6, Domain: 1, Device: 7},
		{Kind: KindCall, Device: math.MaxInt32, Result: math.MinInt32, API: math.MaxUint16},
		{Kind: KindCall, Device: math.MinInt32, Start: -10, End: -5},
	}
	for _, e := range append(tr.Events, extra...) {
		var want uint16
		for f := field(0); f < fieldCount; f++ {
			if e.present(f) {
				want |= 1 << f
			}
		}
		if got := presence(&e); got != want {
			t.Fatalf("presence(%+v) = %b, want %b", e, got, want)
		}
	}
	// Devices too wide for a packed shape key still round-trip.
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{})
	w.String("n")
	if err := w.WriteBatch(1, 1, extra); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBinary(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(extra)
	for i := range want {
		want[i].PID, want[i].TID = 1, 1
	}
	SortEvents(want)
	if !slices.Equal(got.Events, want) {
		t.Errorf("got  %+v\nwant %+v", got.Events, want)
	}
}

func TestValidate(t *testing.T) {
	if err := genTrace(t, 20_000, 2, 2, 1).Validate(); err != nil {
		t.Errorf("generated trace: %v", err)
	}
	if err := readTextFile(t, "testdata/small.txt").Validate(); err != nil {
		t.Errorf("small.txt: %v", err)
	}
	bad := &Trace{Strings: []string{""}, Events: []Event{
		{Kind: KindRangePop, Start: 5, End: 5, Size: 3},
		{Kind: KindMark, Start: 4, End: 4, Name: 9},
		{Kind: 0, Start: 6},
		{Kind: KindCall, Start: 7, End: 6},
	}}
	err := bad.Validate()
	for _, want := range []string{"field size is not used by pop", "string ID out of range", "out of SortEvents order", "unknown kind 0", "ends before it starts"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}

// TestCoderMatchesTable checks the hand-unrolled encoder and decoder against
// the codings eventFields declares: each field alone round-trips, and takes
// the bytes its coding says.
func TestCoderMatchesTable(t *testing.T) {
	for f := field(0); f < fieldCount; f++ {
		v := uint64(300) // two bytes as a uvarint, three as a cache literal
		if f == fieldObject {
			v = 200 // an Object is a byte
		}
		if f == fieldAPI || f == fieldDevice {
			continue // carried by the shape
		}
		base := Event{Kind: KindCall, Start: 1000, End: 1000, Device: NoDevice}
		e := base
		e.setFieldBits(f, v)
		if f == fieldEnd {
			e.End = 1000 + int64(v)
		}
		enc := newBatchEncoder()
		withField := len(enc.encode(1, 1, []Event{e}))
		without := len(enc.encode(1, 1, []Event{base}))
		// The shape literal's presence bitmap grows from 1 byte to 2 for
		// bits 7 and up, to 3 for bit 14.
		extra := withField - without - (len(binary.AppendUvarint(nil, 1<<f)) - 1)
		var want int
		switch eventFields[f].coding {
		case codeUvarint, codeString, codeCode:
			want = len(binary.AppendUvarint(nil, v))
		case codeZigzag, codeDuration:
			want = len(binary.AppendUvarint(nil, zigzag(int64(v))))
		case codeCached:
			want = len(binary.AppendUvarint(nil, cacheSize+zigzag(int64(v))))
		}
		if extra != want {
			t.Errorf("field %s takes %d bytes, its coding says %d", eventFields[f].key, extra, want)
		}
		tr := &Trace{Strings: make([]string, v+1), Code: make([]Code, v+1), Events: []Event{e}}
		var buf bytes.Buffer
		if err := WriteBinary(&buf, tr); err != nil {
			t.Fatal(err)
		}
		got, err := ReadBinary(buf.Bytes())
		if err != nil || len(got.Events) != 1 || got.Events[0] != (func() Event { x := e; x.PID, x.TID = 0, 0; return x })() {
			t.Errorf("field %s: read back %+v, %v; want %+v", eventFields[f].key, got.Events, err, e)
		}
	}
}
