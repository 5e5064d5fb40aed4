package diff

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/internal/tracetest"
)

var update = golden.NewFlag("update", "rewrite the golden files in testdata")

// wrapperDiff compares the seed-style wrapper trace with the same trace
// after the heavy wrapper's fix.
func wrapperDiff(t *testing.T) *Diff {
	t.Helper()
	base, newp := tracetest.PythonWrapper(5), tracetest.PythonWrapperTrimmed(5)
	bp, _, err := flame.Build(base)
	if err != nil {
		t.Fatal(err)
	}
	np, _, err := flame.Build(newp)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := flame.CompareAPIs(bp, np)
	if err != nil {
		t.Fatal(err)
	}
	return New(changes, report.Build(base, report.Options{}).Frames, report.Build(newp, report.Options{}).Frames)
}

func frame(t *testing.T, d *Diff, name string) FrameRow {
	t.Helper()
	for _, f := range d.Frames {
		if f.Frame == name {
			return f
		}
	}
	t.Fatalf("no frame %q in %+v", name, d.Frames)
	return FrameRow{}
}

// TestWrapperFix: the fixed wrapper's own self time per call drops, its
// finalizer is gone, and frames the fix did not touch are unchanged.
func TestWrapperFix(t *testing.T) {
	d := wrapperDiff(t)
	heavy := frame(t, d, "Stream.__init__")
	if heavy.In != InBoth || heavy.CallsBase != 5 || heavy.CallsNew != 5 {
		t.Errorf("Stream.__init__: %+v, want 5 calls in both", heavy)
	}
	if heavy.DeltaPerCallNs >= 0 || heavy.Ratio == nil || *heavy.Ratio >= 1 {
		t.Errorf("Stream.__init__ self per call %.0f -> %.0f ns, want a drop", heavy.SelfPerCallBaseNs, heavy.SelfPerCallNewNs)
	}
	if fin := frame(t, d, "finalize.__init__"); fin.In != InBase || fin.CallsNew != 0 || fin.Ratio == nil || *fin.Ratio != 0 {
		t.Errorf("finalize.__init__: %+v, want gone", fin)
	}
	if lean := frame(t, d, "LeanStream.__init__"); lean.DeltaPerCallNs != 0 || lean.Ratio == nil || *lean.Ratio != 1 {
		t.Errorf("LeanStream.__init__: %+v, want unchanged", lean)
	}
	for i := 1; i < len(d.Frames); i++ {
		a, b := d.Frames[i-1], d.Frames[i]
		if abs(a.SelfNewNs-a.SelfBaseNs) < abs(b.SelfNewNs-b.SelfBaseNs) {
			t.Errorf("frames out of order: %s (%d -> %d) before %s (%d -> %d)", a.Frame, a.SelfBaseNs, a.SelfNewNs,
				b.Frame, b.SelfBaseNs, b.SelfNewNs)
		}
	}

	var txt, js, cs bytes.Buffer
	if err := WriteText(&txt, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(&cs, d); err != nil {
		t.Fatal(err)
	}
	update.Check(t, filepath.Join("testdata", "wrapper.golden.txt"), txt.Bytes())
	update.Check(t, filepath.Join("testdata", "wrapper.golden.json"), js.Bytes())
	update.Check(t, filepath.Join("testdata", "wrapper.golden.csv"), cs.Bytes())

	var back Diff
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Frames) != len(d.Frames) || len(back.APIs) != len(d.APIs) {
		t.Errorf("JSON does not read back: %v, %d frames, %d apis", err, len(back.Frames), len(back.APIs))
	}
	r := csv.NewReader(&cs)
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var frames int
	for _, rec := range recs {
		if rec[0] == "frames" {
			frames++
		}
	}
	if frames != len(d.Frames) {
		t.Errorf("CSV has %d frame rows, want %d", frames, len(d.Frames))
	}
}

// TestNoFrames: traces without Python frames print only the API table.
func TestNoFrames(t *testing.T) {
	tr := tracetest.LoopTrace(20)
	p, _, err := flame.Build(tr)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := flame.CompareAPIs(p, p)
	if err != nil {
		t.Fatal(err)
	}
	rf := report.Build(tr, report.Options{}).Frames
	d := New(changes, rf, rf)
	var txt, want bytes.Buffer
	if err := WriteText(&txt, d); err != nil {
		t.Fatal(err)
	}
	if err := flame.WriteAPIChanges(&want, changes); err != nil {
		t.Fatal(err)
	}
	if txt.String() != want.String() || strings.Contains(txt.String(), "Python") {
		t.Errorf("text without frames:\n%s\nwant the API table only:\n%s", txt.String(), want.String())
	}
	if len(d.Frames) != 0 || len(d.APIs) == 0 {
		t.Errorf("%d frames, %d apis", len(d.Frames), len(d.APIs))
	}
}
