package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sectionSpans returns the [start, end) byte range of each section of a
// whole version-2 file, header and CRC included.
func sectionSpans(t *testing.T, data []byte) [][2]int {
	t.Helper()
	fr, err := frameV2(memSource(data), true)
	if err != nil || len(fr.damaged) > 0 {
		t.Fatalf("framing a whole file: %v %+v", err, fr.damaged)
	}
	var spans [][2]int
	for _, s := range fr.secs {
		spans = append(spans, [2]int{s.offset, s.end + 4})
	}
	return spans
}

func spanOf(spans [][2]int, off int) (int, [2]int) {
	for k, sp := range spans {
		if off >= sp[0] && off < sp[1] {
			return k, sp
		}
	}
	return -1, [2]int{}
}

// TestDamageCostsOneSection flips each byte after the header of a small
// trace, and every 61st byte of a larger one: every flip is noticed, and it
// costs exactly the section holding the byte (the reader finds the next one),
// whatever part of the section (marker, kind, length, header check, payload,
// payload check) it hit. When the footer is intact, Loss.Events says how
// many events were lost, and the events read plus those lost are all of them.
func TestDamageCostsOneSection(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   *Trace
		step int
	}{
		{"small", readTextFile(t, "testdata/small.txt"), 1},
		{"python", pythonTrace(t), 1},
		{"gen", genTrace(t, 30_000, 2, 3, 11), 61},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := encode(t, tc.tr)
			whole, err := ReadBinary(data)
			if err != nil {
				t.Fatal(err)
			}
			spans := sectionSpans(t, data)
			footer := spans[len(spans)-1]
			for off := headerLen; off < len(data); off += tc.step {
				bad := slices.Clone(data)
				bad[off] ^= 0x10
				got, err := ReadBinary(bad)
				if err != nil {
					t.Fatalf("flip at %d: %v; want the other sections read", off, err)
				}
				if got.Loss == nil {
					t.Fatalf("flip at %d went unnoticed", off)
				}
				_, sp := spanOf(spans, off)
				if got.Loss.Offset != int64(sp[0]) || got.Loss.Bytes != int64(sp[1]-sp[0]) {
					t.Fatalf("flip at %d in section [%d,%d): Loss %+v; want that section only", off, sp[0], sp[1], got.Loss)
				}
				if off >= footer[0] {
					continue // footer lost: the loss of events is not known
				}
				if int64(len(got.Events))+got.Loss.Events != int64(len(whole.Events)) {
					t.Fatalf("flip at %d: %d events read + %d lost, want %d", off, len(got.Events), got.Loss.Events, len(whole.Events))
				}
				if len(got.Strings) < len(whole.Strings) {
					t.Fatalf("flip at %d: %d strings, want at least %d (lost ones as placeholders)", off, len(got.Strings), len(whole.Strings))
				}
			}
		})
	}
}

// TestFlippedLengthMidFile: one flipped byte of a
// mid-file batch's length loses that batch only (version 1 lost every
// event), and says how many events it held.
func TestFlippedLengthMidFile(t *testing.T) {
	tr := genTrace(t, 20_000, 1, 1, 5)
	data := encode(t, tr)
	fr, _ := frameV2(memSource(data), true)
	var batches []section
	for _, s := range fr.secs {
		if s.kind == secEvents {
			batches = append(batches, s)
		}
	}
	if len(batches) < 3 {
		t.Fatalf("%d batches, want several", len(batches))
	}
	mid := batches[len(batches)/2]
	for _, k := range []int{0, 1, 2} { // each byte of the length that matters
		bad := slices.Clone(data)
		bad[mid.offset+len(sectionMarker)+1+k] ^= 0x01
		got, err := ReadBinary(bad)
		if err != nil {
			t.Fatalf("length byte %d: %v", k, err)
		}
		if want := len(tr.Events) - mid.count; len(got.Events) != want || got.Loss == nil || got.Loss.Events != int64(mid.count) {
			t.Errorf("length byte %d: %d events, loss %+v; want %d events and %d lost", k, len(got.Events), got.Loss, want, mid.count)
		}
	}
}

// TestDamageStretches checks several damaged places: each is reported, the
// rest read.
func TestDamageStretches(t *testing.T) {
	tr := genTrace(t, 30_000, 1, 2, 9)
	data := encode(t, tr)
	spans := sectionSpans(t, data)
	bad := slices.Clone(data)
	hit := []int{1, 4, len(spans) / 2, len(spans) - 2}
	for _, k := range hit {
		bad[(spans[k][0]+spans[k][1])/2] ^= 0xff
	}
	got, err := ReadBinary(bad)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, k := range hit {
		want += int64(spans[k][1] - spans[k][0])
	}
	if got.Loss == nil || got.Loss.Bytes != want || got.Loss.Offset != int64(spans[1][0]) ||
		!strings.HasPrefix(got.Loss.Reason, "4 damaged stretches skipped") {
		t.Fatalf("loss %+v, want 4 stretches of %d bytes from %d", got.Loss, want, spans[1][0])
	}
	if got.Loss.Events == 0 || int64(len(got.Events))+got.Loss.Events != int64(len(tr.Events)) {
		t.Errorf("%d events read, %d lost, of %d", len(got.Events), got.Loss.Events, len(tr.Events))
	}
}

// TestInsertedBytes checks that bytes inserted or removed mid-file (not
// flips) cost the section they hit and the reader finds the next.
func TestInsertedBytes(t *testing.T) {
	tr := genTrace(t, 20_000, 1, 1, 4)
	data := encode(t, tr)
	fr, _ := frameV2(memSource(data), true)
	var batches []section
	for _, s := range fr.secs {
		if s.kind == secEvents {
			batches = append(batches, s)
		}
	}
	mid := batches[len(batches)/2]
	at := (mid.start + mid.end) / 2
	for _, edit := range [][]byte{
		slices.Concat(data[:at], []byte("junk"), data[at:]),
		slices.Concat(data[:at], data[at+3:]),
	} {
		got, err := ReadBinary(edit)
		if err != nil {
			t.Fatal(err)
		}
		if got.Loss == nil || got.Loss.Offset != int64(mid.offset) || got.Loss.Events != int64(mid.count) ||
			int64(len(got.Events))+got.Loss.Events != int64(len(tr.Events)) {
			t.Errorf("edit of %d bytes: %d events, loss %+v", len(edit)-len(data), len(got.Events), got.Loss)
		}
	}
}

// TestCorruptWholeSections checks what is still an error: sections whose
// checks hold but whose content is impossible, bytes after the footer, an
// unknown version; and that a version-1 file's damage is an error naming
// the offset (version 1 cannot resynchronise).
func TestCorruptWholeSections(t *testing.T) {
	data := encode(t, genTrace(t, 5000, 1, 1, 3))
	if _, err := ReadBinary(append(slices.Clone(data), 0, 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing bytes: err = %v", err)
	}
	v := slices.Clone(data)
	v[len(binaryMagic)] = BinaryVersion + 1
	if _, err := ReadBinary(v); err == nil || !strings.Contains(err.Error(), "unsupported .cuprof format version") {
		t.Errorf("version %d: err = %v", BinaryVersion+1, err)
	}
	// A well-framed section of an unknown required kind.
	var buf bytes.Buffer
	buf.Write(data[:headerLen])
	buf.Write(appendSectionHeader(nil, 0x20, 0))
	buf.Write([]byte{0, 0, 0, 0})
	if _, err := ReadBinary(buf.Bytes()); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "unknown section kind 0x20") {
		t.Errorf("unknown kind: err = %v", err)
	}

	v1, err := os.ReadFile("testdata/v1.cuprof")
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{headerLen, headerLen + 3, len(v1) / 2} {
		bad := slices.Clone(v1)
		bad[off] ^= 0x55
		_, err := ReadBinary(bad)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset > int64(off) {
			t.Errorf("version 1, flip at %d: err = %v, want a *CorruptError at or before it", off, err)
		}
	}
}

// TestEndBeforeStart: no event of a trace ends before it starts
// (FuzzTimeline once wrote a negative duration to Chrome JSON). The text reader
// names the line, the writer refuses the event, the binary reader refuses
// a batch holding one, and Validate reports one built in memory.
func TestEndBeforeStart(t *testing.T) {
	_, err := ReadText(strings.NewReader("cuprof-text 1\ncall 0/0 t=10 end=0\n"))
	var te *TextError
	if !errors.As(err, &te) || te.Line != 2 || !strings.Contains(err.Error(), "ends before it starts") {
		t.Errorf("text: err = %v, want line 2 saying the event ends before it starts", err)
	}
	bad := []Event{{Kind: KindCall, Start: 10, End: 0, Device: NoDevice}}
	w := NewWriter(&bytes.Buffer{}, Meta{})
	if err := w.WriteBatch(1, 1, bad); err == nil || !strings.Contains(err.Error(), "ends before it starts") {
		t.Errorf("WriteBatch: err = %v", err)
	}
	// A batch the Writer would not write, framed by hand.
	var buf bytes.Buffer
	ok := NewWriter(&buf, Meta{})
	ok.Close()
	file := buf.Bytes()[:buf.Len()-sectionHeaderLen-4-3] // without the footer
	payload := newBatchEncoder().encode(1, 1, bad)
	file = appendSectionHeader(slices.Clone(file), secEvents, len(payload))
	file = append(file, payload...)
	file = binary.LittleEndian.AppendUint32(file, crc32.Checksum(payload, castagnoli))
	if _, err := ReadBinary(file); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "ends before it starts") {
		t.Errorf("binary: err = %v", err)
	}
	if err := (&Trace{Strings: []string{""}, Events: []Event{{Kind: KindRangePush, Start: 5, End: 4}}}).Validate(); err == nil {
		t.Errorf("Validate accepted a push ending before it starts")
	}
}

// TestDamageSameThroughOpen: the streaming reader (Open, ReadFile) loses
// exactly what ReadBinary loses on a damaged file, and says so the same way.
func TestDamageSameThroughOpen(t *testing.T) {
	tr := genTrace(t, 20_000, 2, 2, 13)
	data := encode(t, tr)
	spans := sectionSpans(t, data)
	for _, k := range []int{0, 1, len(spans) / 2, len(spans) - 2} {
		bad := slices.Clone(data)
		bad[(spans[k][0]+spans[k][1])/2] ^= 0x20
		want, err := ReadBinary(bad)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "bad.cuprof")
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadFile(path)
		if err != nil {
			t.Fatalf("section %d: ReadFile: %v", k, err)
		}
		if got.Loss == nil || *got.Loss != *want.Loss || len(got.Events) != len(want.Events) || len(got.Strings) != len(want.Strings) {
			t.Errorf("section %d: ReadFile read %d events, %d strings, loss %+v; ReadBinary %d, %d, %+v",
				k, len(got.Events), len(got.Strings), got.Loss, len(want.Events), len(want.Strings), want.Loss)
		}
	}
}

// pythonTrace is a small Python trace: code entries naming strings, frames
// and calls naming code and strings, written as its own strings, code,
// event and footer sections.
func pythonTrace(t *testing.T) *Trace {
	t.Helper()
	tr, err := ReadText(strings.NewReader(framesText))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestPythonDamageCostsWhatRefersToIt flips every byte of a Python trace's
// strings and code sections: the rest reads, with a Loss; frames whose code
// entry or names were lost read as LostString, and every event is kept,
// streamed as well as read whole.
func TestPythonDamageCostsWhatRefersToIt(t *testing.T) {
	tr := pythonTrace(t)
	data := encode(t, tr)
	fr, err := frameV2(memSource(data), true)
	if err != nil {
		t.Fatal(err)
	}
	hit := 0
	for _, s := range fr.secs {
		if s.kind != secStrings && s.kind != secCode {
			continue
		}
		for off := s.offset; off < s.end+4; off++ {
			hit++
			bad := slices.Clone(data)
			bad[off] ^= 0x04
			got, err := ReadBinary(bad)
			if err != nil {
				t.Fatalf("flip at %d of the %s section: %v; want the rest read", off, s.kind, err)
			}
			if got.Loss == nil || got.Loss.Offset != int64(s.offset) {
				t.Fatalf("flip at %d of the %s section at %d: Loss %+v; want that section", off, s.kind, s.offset, got.Loss)
			}
			if len(got.Events) != len(tr.Events) {
				t.Fatalf("flip at %d: %d events, want all %d", off, len(got.Events), len(tr.Events))
			}
			for i, e := range got.Events {
				if e.Code != tr.Events[i].Code || e.Start != tr.Events[i].Start {
					t.Fatalf("flip at %d: event %d is %+v, want %+v", off, i, e, tr.Events[i])
				}
				if e.Code != 0 {
					c := got.Code[e.Code]
					if name := got.Strings[c.Name]; name != tr.Strings[tr.Code[e.Code].Name] && name != LostString {
						t.Fatalf("flip at %d: event %d's code is named %q; want %q or %q", off, i, name, tr.Strings[tr.Code[e.Code].Name], LostString)
					}
				}
			}
			f, err := NewFile(bytes.NewReader(bad), int64(len(bad)))
			if err != nil {
				t.Fatalf("flip at %d: streaming: %v", off, err)
			}
			n := 0
			for _, err := range f.Events() {
				if err != nil {
					t.Fatalf("flip at %d: streaming: %v", off, err)
				}
				n++
			}
			if n != len(tr.Events) {
				t.Fatalf("flip at %d: streamed %d events, want %d", off, n, len(tr.Events))
			}
		}
	}
	if hit == 0 {
		t.Fatal("the trace has no strings or code section")
	}
}

// TestLostCodeSectionKeepsLaterIDs loses the first of two code sections:
// frames naming entries of the second keep their names (its first record
// says its ID), those naming the lost ones read as LostString.
func TestLostCodeSectionKeepsLaterIDs(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{Capture: "sim"})
	var ids []CodeID
	for i := range 60_000 {
		name := w.String(fmt.Sprintf("module.function_%d", i))
		ids = append(ids, w.AddCode(Code{Kind: CodePython, Name: name, Line: uint32(i)}))
	}
	early, late := ids[10], ids[len(ids)-10]
	if err := w.WriteBatch(1, 1, []Event{
		{Kind: KindFrame, Start: 100, End: 200, Code: early},
		{Kind: KindFrame, Start: 300, End: 400, Code: late},
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	whole, err := ReadBinary(data)
	if err != nil {
		t.Fatal(err)
	}
	fr, _ := frameV2(memSource(data), true)
	var codes []section
	for _, s := range fr.secs {
		if s.kind == secCode {
			codes = append(codes, s)
		}
	}
	if len(codes) < 2 {
		t.Fatalf("%d code sections; want several", len(codes))
	}
	bad := slices.Clone(data)
	bad[codes[0].start+5] ^= 0x20
	got, err := ReadBinary(bad)
	if err != nil {
		t.Fatal(err)
	}
	if got.Loss == nil || got.Loss.Offset != int64(codes[0].offset) {
		t.Fatalf("Loss %+v; want the first code section", got.Loss)
	}
	name := func(tr *Trace, e Event) string { return tr.Strings[tr.Code[e.Code].Name] }
	if n := name(got, got.Events[0]); n != LostString {
		t.Errorf("frame of the lost section named %q, want %q", n, LostString)
	}
	if n, want := name(got, got.Events[1]), name(whole, whole.Events[1]); n != want || got.Code[late].Line != whole.Code[late].Line {
		t.Errorf("frame of the second section named %q line %d, want %q line %d", n, got.Code[late].Line, want, whole.Code[late].Line)
	}
}
