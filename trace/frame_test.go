package trace

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// framesText is a two-process trace with Python frames; the processes name
// the same code, which a merge must intern once.
const framesText = `cuprof-text 1
meta capture=sim py_event_ns=38
process pid=1 python="CPython 3.12.1, sys.monitoring, full"
process pid=2 python="CPython 3.12.1: frames off (the bootstrap did not run)"
code id=1 kind=python name=outer module=m file=/m.py line=3
code id=2 kind=native name=len module=builtins
call 1/1 t=150 end=160 api=cuCtxGetCurrent
frame 1/1 t=100 end=200 code=1
frame 1/1 t=120 end=130 code=2
frame 2/2 t=300 end=400 code=1 flags=0x1
`

func TestFramesBinaryRoundTrip(t *testing.T) {
	tr, err := ReadText(strings.NewReader(framesText))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBinary(&buf, tr); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[len(binaryMagic)]; v != BinaryVersion {
		t.Errorf("written version %d, want %d", v, BinaryVersion)
	}
	back, err := ReadBinary(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := canonicalText(t, back), canonicalText(t, tr); got != want {
		t.Errorf("binary round trip differs:\n got %s\nwant %s", got, want)
	}
	if back.Meta.Overhead.PyEventNs != 38 || back.Processes[1].Python != tr.Processes[1].Python || len(back.Code) != 3 {
		t.Errorf("read back meta %+v, processes %+v, code %+v", back.Meta.Overhead, back.Processes, back.Code)
	}
	// Cut the file inside its last batch: the code table and the earlier
	// batches still read.
	cut, err := ReadBinary(buf.Bytes()[:buf.Len()-20])
	if err != nil || cut.Loss == nil || len(cut.Code) != 3 {
		t.Errorf("cut file: %v, loss %+v, code %+v", err, cut.Loss, cut.Code)
	}
}

// TestFramesStreamingWriter checks AddCode's IDs and that WriteBatch refuses
// a frame naming code not added yet.
func TestFramesStreamingWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{})
	name := w.String("f")
	if id := w.AddCode(Code{Kind: CodePython, Name: name}); id != 1 {
		t.Errorf("first code ID %d, want 1", id)
	}
	if id := w.AddCode(Code{Kind: CodeNative, Name: name}); id != 2 {
		t.Errorf("second code ID %d, want 2", id)
	}
	if err := w.WriteBatch(1, 1, []Event{{Kind: KindFrame, Start: 1, End: 2, Code: 3}}); err == nil {
		t.Errorf("WriteBatch accepted code 3 of 2")
	}
	if err := w.WriteBatch(1, 1, []Event{{Kind: KindFrame, Start: 1, End: 2, Code: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadBinary(buf.Bytes())
	if err != nil || len(tr.Events) != 1 || tr.Events[0].Code != 2 || tr.Code[2].Kind != CodeNative {
		t.Errorf("read %+v, %v", tr, err)
	}
	var bad bytes.Buffer
	w = NewWriter(&bad, Meta{})
	w.AddCode(Code{Kind: CodePython, Name: 7})
	if err := w.Close(); err == nil {
		t.Errorf("AddCode accepted an undefined string")
	}
}

// TestFramesCorrupt: a frame naming code that no section before its batch
// defines, and a code entry naming an undefined string, are corruption.
func TestFramesCorrupt(t *testing.T) {
	enc := newBatchEncoder()
	batch := enc.encode(1, 1, []Event{{Kind: KindFrame, Start: 1, End: 2, Code: 1, Device: NoDevice}})
	var buf bytes.Buffer
	w := NewWriter(&buf, Meta{})
	w.writeSection(secEvents, batch)
	w.batches++
	w.events++
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBinary(buf.Bytes()); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "code ID 1 not defined") {
		t.Errorf("undefined code: err = %v", err)
	}
	buf.Reset()
	w = NewWriter(&buf, Meta{})
	w.writeSection(secCode, appendRecord(nil, &Code{Kind: CodePython, Name: 5}, codeTable))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBinary(buf.Bytes()); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "names string 5") {
		t.Errorf("code naming an undefined string: err = %v", err)
	}
}

func TestFramesTextErrors(t *testing.T) {
	for _, tc := range []struct {
		in       string
		line     int
		contains string
	}{
		{"cuprof-text 1\ncode id=2 kind=python name=f\n", 2, "want id=1"},
		{"cuprof-text 1\ncode id=1 kind=snake name=f\n", 2, "want python, native"},
		{"cuprof-text 1\nframe 1/1 t=1 end=2 code=1\n", 2, "no code line with id=1"},
		{"cuprof-text 1\ncode id=1 kind=python name=f\nframe 1/1 t=1 end=2 code=x\n", 3, "id of a code line"},
	} {
		_, err := ReadText(strings.NewReader(tc.in))
		var te *TextError
		if !errors.As(err, &te) || te.Line != tc.line || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%q: err = %v, want line %d containing %q", tc.in, err, tc.line, tc.contains)
		}
	}
}

func TestFramesValidate(t *testing.T) {
	bad := &Trace{Strings: []string{"", "f"}, Code: []Code{{}, {Kind: 7, Name: 1}, {Kind: CodePython}}, Events: []Event{
		{Kind: KindFrame, Start: 1, End: 2, Device: NoDevice},
		{Kind: KindFrame, Start: 2, End: 3, Code: 9, Device: NoDevice},
		{Kind: KindFrame, Start: 3, End: 4, Code: 1, Flags: 0x10, Device: NoDevice},
		{Kind: KindMark, Start: 5, End: 5, Code: 1, Device: NoDevice},
	}}
	err := bad.Validate()
	for _, want := range []string{"code 1: unknown kind 7", "code 2: no name", "frame at t=1): no code",
		"code ID 9 out of range", "unknown flags 0x10", "field code is not used by mark"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
}

func TestMergeFrames(t *testing.T) {
	tr, err := ReadText(strings.NewReader(framesText))
	if err != nil {
		t.Fatal(err)
	}
	parts := splitByProcess(tr)
	m := Merge(parts...)
	if len(m.Code) != 3 {
		t.Fatalf("merged code table %+v, want the 2 entries once", m.Code)
	}
	// The same frames, naming the same code (IDs may differ).
	named := func(x *Trace) []string {
		var out []string
		for _, e := range x.Events {
			if e.Kind == KindFrame {
				c := x.Code[e.Code]
				out = append(out, fmt.Sprintf("%d/%d %d-%d %s %s %s %s:%d %#x", e.PID, e.TID, e.Start, e.End,
					c.Kind, x.String(c.Name), x.String(c.Module), x.String(c.File), c.Line, e.Flags))
			}
		}
		return out
	}
	if got, want := named(m), named(tr); !slices.Equal(got, want) {
		t.Errorf("merged frames %q, want %q", got, want)
	}
	if m.Meta.Overhead.PyEventNs != 38 {
		t.Errorf("merged PyEventNs %v", m.Meta.Overhead.PyEventNs)
	}
}

func TestFramesTextContent(t *testing.T) {
	tr, err := ReadText(strings.NewReader(framesText))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta.Overhead.PyEventNs != 38 || tr.Processes[0].Python != "CPython 3.12.1, sys.monitoring, full" {
		t.Errorf("py_event_ns = %v, python = %q", tr.Meta.Overhead.PyEventNs, tr.Processes[0].Python)
	}
	if len(tr.Code) != 3 || tr.Code[1].Kind != CodePython || tr.String(tr.Code[1].Name) != "outer" ||
		tr.String(tr.Code[1].Module) != "m" || tr.String(tr.Code[1].File) != "/m.py" || tr.Code[1].Line != 3 ||
		tr.Code[2].Kind != CodeNative || tr.String(tr.Code[2].Name) != "len" || tr.Code[2].File != 0 {
		t.Errorf("code = %+v", tr.Code)
	}
	var frames []Event
	for _, e := range tr.Events {
		if e.Kind == KindFrame {
			frames = append(frames, e)
		}
	}
	if len(frames) != 3 || frames[0] != (Event{Kind: KindFrame, PID: 1, TID: 1, Device: NoDevice, Start: 100, End: 200, Code: 1}) ||
		frames[1].Code != 2 || frames[2].Flags != FrameUnwound {
		t.Errorf("frames = %+v", frames)
	}
	if err := tr.Validate(); err != nil {
		t.Errorf("framesText does not validate: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, tr); err != nil {
		t.Fatal(err)
	}
	again, err := ReadText(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := canonicalText(t, again), canonicalText(t, tr); got != want {
		t.Errorf("text round trip differs:\n%s\nwant\n%s", got, want)
	}
}

// TestFrameHiddenCountsRoundTrip: a frame's hidden counts (Size, Aux, ID)
// and the Python calibration's meta fields (tags 27-32) survive the text
// and binary forms, and Validate takes them as a frame's fields.
func TestFrameHiddenCountsRoundTrip(t *testing.T) {
	const text = `cuprof-text 1
meta py_event_ns=38 py_c_event_ns=41 py_inside_ns=20 py_c_inside_ns=22 py_hidden_ns=45 py_c_hidden_ns=48 py_lone_ns=17
process pid=1
code id=1 kind=python name=work
frame 1/1 t=100 end=900 code=1 size=300 aux=2 id=200
`
	tr, err := ReadText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBinary(&buf, tr); err != nil {
		t.Fatal(err)
	}
	back, err := ReadBinary(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := Overhead{PyEventNs: 38, PyCEventNs: 41, PyInsideNs: 20, PyCInsideNs: 22, PyHiddenNs: 45, PyCHiddenNs: 48, PyLoneNs: 17}
	if back.Meta.Overhead != want {
		t.Errorf("overhead %+v, want %+v", back.Meta.Overhead, want)
	}
	if e := back.Events[0]; e.Size != 300 || e.Aux != 2 || e.ID != 200 {
		t.Errorf("frame %+v: counts lost", e)
	}
	if got, want := canonicalText(t, back), canonicalText(t, tr); got != want {
		t.Errorf("round trip differs:\n got %s\nwant %s", got, want)
	}
	if err := back.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
}
