package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

var update = golden.NewFlag("update", "rewrite the golden files in testdata")

func readFixture(t *testing.T, name string) *trace.Trace {
	t.Helper()
	tr := tracetest.ReadText(t, filepath.Join("testdata", name+".txt"))
	if name == "truncated" {
		tr.Loss = &trace.Loss{Offset: 2048, Bytes: 1536, Reason: "unexpected end of file inside a batch"}
	}
	return tr
}

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	update.Check(t, filepath.Join("testdata", name), got)
}

var fixtures = []string{"basic", "multidev", "empty", "errors", "truncated", "sim_multidev", "invalid_device", "capture", "untabled", "passthrough"}

func TestGolden(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			r := Build(readFixture(t, name), Options{})
			var txt, js, cs bytes.Buffer
			if err := WriteText(&txt, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteCSV(&cs, r); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name+".golden.txt", txt.Bytes())
			checkGolden(t, name+".golden.json", js.Bytes())
			checkGolden(t, name+".golden.csv", cs.Bytes())
		})
	}
}

func TestBasicNumbers(t *testing.T) {
	r := Build(readFixture(t, "basic"), Options{})
	row := func(api string) APIRow {
		for _, a := range r.APIs {
			if a.API == api {
				return a
			}
		}
		t.Fatalf("no row for %s", api)
		return APIRow{}
	}
	// two stream creates of 5000 and 4200 ns, each minus 12 ns inside cost
	sc := row("cuStreamCreate")
	if sc.Count != 2 || sc.TotalNs != 4988+4188 || sc.MinNs != 4188 || sc.MaxNs != 4988 ||
		sc.MedianNs != 4188 || sc.P99Ns != 4988 {
		t.Errorf("cuStreamCreate: %+v", sc)
	}
	if row("cuMemFree").Errors != 1 || row("cuEventQuery").Errors != 0 {
		t.Errorf("errors: cuMemFree %d, cuEventQuery %d", row("cuMemFree").Errors, row("cuEventQuery").Errors)
	}
	var sum float64
	for _, a := range r.APIs {
		sum += a.Percent
	}
	if sum < 99.99 || sum > 100.01 {
		t.Errorf("percentages sum to %f", sum)
	}
	if r.Drops.Total != 3 || !r.Overhead.Subtracted || r.Overhead.TotalAddedNs != 28*int64(r.Meta.Calls) {
		t.Errorf("drops %d, overhead %+v", r.Drops.Total, r.Overhead)
	}
	var stream ObjectRow
	for _, o := range r.Objects {
		if o.Kind == "stream" {
			stream = o
		}
	}
	if stream.Created != 2 || stream.Destroyed != 2 || stream.Churn != 2 || stream.LifetimeMedianNs != 114900 {
		t.Errorf("streams: %+v", stream)
	}
	if len(r.Devices) != 0 {
		t.Errorf("one device should give no per-device tables: %+v", r.Devices)
	}

	raw := Build(readFixture(t, "basic"), Options{Raw: true})
	for _, a := range raw.APIs {
		if a.API == "cuStreamCreate" && a.TotalNs != 5000+4200 {
			t.Errorf("raw total %d", a.TotalNs)
		}
	}
	if raw.Overhead.Subtracted {
		t.Errorf("raw report says subtracted")
	}
}

func TestMultiDevice(t *testing.T) {
	r := Build(readFixture(t, "multidev"), Options{})
	if len(r.Devices) != 2 {
		t.Fatalf("devices: %+v", r.Devices)
	}
	calls := map[int32]map[string]int{}
	for _, d := range r.Devices {
		calls[d.Device] = map[string]int{}
		for _, a := range d.APIs {
			calls[d.Device][a.API] = a.Count
		}
	}
	// device 0: retain, set-current x2, stream create, alloc, free, stream sync, get-current
	if c := calls[0]; c["cuStreamCreate"] != 1 || c["cuMemAllocAsync"] != 1 || c["cuMemFreeAsync"] != 1 ||
		c["cuStreamSynchronize"] != 1 || c["cuCtxSetCurrent"] != 2 || c["cuCtxGetCurrent"] != 1 {
		t.Errorf("device 0: %v", c)
	}
	if c := calls[1]; c["cuStreamCreate"] != 1 || c["cuMemAllocAsync"] != 1 || c["cuCtxSynchronize"] != 1 ||
		c["cuCtxSetCurrent"] != 1 || c["cuMemFreeAsync"] != 0 {
		t.Errorf("device 1: %v", c)
	}
}

// TestInvalidDeviceMakesNoTable: a failed cuDeviceGet(9999) is on the
// unknown device; devices 0 and 1 have their tables and no "Device 9999"
// appears.
func TestInvalidDeviceMakesNoTable(t *testing.T) {
	r := Build(readFixture(t, "invalid_device"), Options{})
	var devs []int32
	for _, d := range r.Devices {
		devs = append(devs, d.Device)
		if d.Device == trace.NoDevice && (len(d.APIs) != 1 || d.APIs[0].API != "cuDeviceGet" || d.APIs[0].Errors != 1) {
			t.Errorf("unknown device: %+v, want the failed cuDeviceGet only", d.APIs)
		}
	}
	if !slices.Equal(devs, []int32{0, 1, trace.NoDevice}) {
		t.Errorf("device tables %v, want 0, 1 and the unknown device", devs)
	}
	var txt bytes.Buffer
	if err := WriteText(&txt, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(txt.String(), "9999") {
		t.Errorf("the report names device 9999:\n%s", txt.String())
	}
}

func TestEmptyJSONHasNoNulls(t *testing.T) {
	r := Build(readFixture(t, "empty"), Options{})
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("null")) {
		t.Errorf("empty report JSON has nulls:\n%s", buf.String())
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
}

// A binary trace cut short reports what was read and says so loudly.
func TestTruncatedBinary(t *testing.T) {
	var bin bytes.Buffer
	if err := trace.WriteBinary(&bin, readFixture(t, "basic")); err != nil {
		t.Fatal(err)
	}
	cut := bin.Bytes()[:bin.Len()-40] // into the last batch, before the footer
	tr, err := trace.ReadBinary(cut)
	if err != nil {
		t.Skipf("the reader rejects this cut (%v); the loss path is covered by the truncated fixture", err)
	}
	if tr.Loss == nil {
		t.Fatal("no loss reported for a cut file")
	}
	r := Build(tr, Options{})
	var txt bytes.Buffer
	if err := WriteText(&txt, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "!! TRUNCATED TRACE: reading stopped at byte") || r.Loss == nil {
		t.Errorf("no loss line:\n%s", txt.String())
	}
	if r.Meta.Calls == 0 || r.Meta.Calls >= 21 {
		t.Errorf("%d calls read from the cut file, want some but not all 21", r.Meta.Calls)
	}
}

// A trace the simulated driver recorded with two devices: only the retains
// carry a device; every other call is attributed from the thread's current
// context or the object it names.
func TestSimMultiDevice(t *testing.T) {
	r := Build(readFixture(t, "sim_multidev"), Options{})
	if len(r.Devices) != 3 || r.Devices[0].Device != 0 || r.Devices[1].Device != 1 || r.Devices[2].Device != trace.NoDevice {
		t.Fatalf("device tables: %+v", r.Devices)
	}
	for d, wantBytes := range map[int]uint64{0: 5 * 1000, 1: 5 * 2000} {
		dt := r.Devices[d]
		calls := map[string]int{}
		for _, a := range dt.APIs {
			calls[a.API] = a.Count
		}
		if calls["cuCtxSetCurrent"] != 7 || calls["cuMemAllocAsync"] != 5 || calls["cuMemFreeAsync"] != 5 ||
			calls["cuCtxSynchronize"] != 5 || calls["cuStreamCreate"] != 1 || calls["cuStreamSynchronize"] != 1 {
			t.Errorf("device %d calls %v", d, calls)
		}
		var bytes uint64
		for _, o := range dt.Objects {
			if o.Kind == "allocation" {
				bytes = o.Bytes
			}
		}
		if bytes != wantBytes {
			t.Errorf("device %d allocated %d bytes, want %d", d, bytes, wantBytes)
		}
	}
	// only cuInit and cuDeviceGetCount have no device
	if r.Devices[2].Calls != 2 {
		t.Errorf("unknown-device calls: %+v", r.Devices[2].APIs)
	}
}

// TestPythonFrames: the wrapper frames table of the seed-style trace, with
// the numbers worked out by hand (InsideNs 10, AddedNs 25, PyEventNs 30).
func TestPythonFrames(t *testing.T) {
	r := Build(tracetest.PythonWrapper(5), Options{})
	var txt, js, cs bytes.Buffer
	if err := WriteText(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(&cs, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "python.golden.txt", txt.Bytes())
	checkGolden(t, "python.golden.json", js.Bytes())
	checkGolden(t, "python.golden.csv", cs.Bytes())
	rows := map[string]FrameRow{}
	for _, f := range r.Frames {
		rows[f.Frame] = f
	}
	// Stream.__init__: 4000 ns less one call (25) and four frames' entries
	// and exits (240) = 3735; self less options 600, finalize 800, the
	// ctypes frame 1400-25 and handle_return 500 = 460
	if f := rows["Stream.__init__"]; f.Calls != 5 || f.InclusiveNs != 5*3735 || f.SelfNs != 5*460 ||
		f.DriverNs != 5*1190 || f.DriverCalls != 5 || f.SelfPerCall != 460 || f.OffPathNs != 5*1900 || f.Kind != "python" {
		t.Errorf("Stream.__init__: %+v", f)
	}
	if f := rows["CFuncPtr cuStreamCreate"]; f.Calls != 10 || f.Kind != "native" || f.SelfNs != 10*(1400-25-1190) {
		t.Errorf("ctypes frame: %+v", f)
	}
	if f := rows["LeanStream.__init__"]; f.SelfNs != 5*(1600-25-60-1375) || f.OffPathNs != 0 {
		t.Errorf("LeanStream.__init__: %+v", f)
	}
	if r.Frames[0].SelfNs < r.Frames[len(r.Frames)-1].SelfNs {
		t.Errorf("frames not by self time: %+v", r.Frames)
	}
	if !strings.Contains(txt.String(), "Python wrapper frames") {
		t.Error("no frames table in the text report")
	}
	// a trace without frames has no table, in any form
	plain := Build(readFixture(t, "basic"), Options{})
	var js2 bytes.Buffer
	WriteJSON(&js2, plain)
	if plain.Frames != nil || strings.Contains(js2.String(), "frames") {
		t.Error("frames table in a trace without frames")
	}
}

// TestDoesNotModifyTrace: Build reads the trace only (devices are
// attributed by the analysis, not written into the events).
func TestDoesNotModifyTrace(t *testing.T) {
	tr := readFixture(t, "multidev")
	before := append([]trace.Event(nil), tr.Events...)
	Build(tr, Options{})
	for i := range before {
		if tr.Events[i] != before[i] {
			t.Fatalf("event %d changed: %+v, was %+v", i, tr.Events[i], before[i])
		}
	}
}

// TestWhenFullSaid: the capture's full-ring policy and its waits reach the
// text and JSON reports; traces that do not say print nothing about it.
func TestWhenFullSaid(t *testing.T) {
	tr := readFixture(t, "basic")
	tr.Meta.WhenFull, tr.Meta.FullWaits, tr.Meta.FullWaitNs = "wait", 3, 2_500_000
	r := Build(tr, Options{})
	var text, js bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "When a ring was full: the writer waited for room (--when-full wait); 3 waits, 2.5 ms in all.") {
		t.Errorf("text report lacks the wait line:\n%s", text.String())
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Drops.WhenFull != "wait" || back.Drops.FullWaits != 3 || back.Drops.FullWaitNs != 2_500_000 {
		t.Errorf("JSON drops %+v", back.Drops)
	}
	tr.Meta.WhenFull = ""
	text.Reset()
	if err := WriteText(&text, Build(tr, Options{})); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "ring was full") {
		t.Errorf("a trace that does not say its policy got a line about it")
	}
}

// TestCaptureRangeLifecycle: in a trace recorded in capture ranges, a
// stream created before a range and destroyed inside it is one whole
// lifecycle, the calls outside the ranges are counted apart from the call
// tables, and the ranges are listed.
func TestCaptureRangeLifecycle(t *testing.T) {
	tr := readFixture(t, "capture")
	a := analysis.Of(tr)
	var found bool
	for _, o := range a.Objects {
		if o.Kind == trace.ObjectStream && o.Handle == 0x51 {
			found = true
			if o.Destroy < 0 || tr.Events[o.Create].Start != 3000 || tr.Events[o.Destroy].Start != 12000 {
				t.Errorf("stream 0x51: create %d, destroy %d; want the call at 3000 (outside) and at 12000 (inside)", o.Create, o.Destroy)
			}
		}
	}
	if !found || len(a.Problems) != 0 {
		t.Errorf("stream 0x51 found %v, problems %v", found, a.Problems)
	}
	if len(a.Captures) != 2 || a.OutsideCalls != 5 {
		t.Errorf("%d captures, %d calls outside; want 2 and 5", len(a.Captures), a.OutsideCalls)
	}
	r := Build(tr, Options{})
	if r.Meta.Calls != 4 || r.Meta.OutsideCalls != 5 || len(r.Meta.Captures) != 2 || r.Meta.CaptureRange != "profiler-api" {
		t.Errorf("report meta %+v", r.Meta)
	}
	for _, row := range r.APIs {
		if row.API == "cuStreamCreate" || row.API == "cuCtxSetCurrent" {
			t.Errorf("call table holds %s, which was only called outside the ranges", row.API)
		}
	}
	for _, row := range r.Objects {
		if row.Kind == "stream" && (row.Created != 2 || row.Destroyed != 2) {
			t.Errorf("streams created %d destroyed %d, want 2 and 2", row.Created, row.Destroyed)
		}
	}
}
