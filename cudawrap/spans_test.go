package cudawrap

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type recordedSpan struct {
	tid          string
	domain, name string
	start, end   uint64
}

// The child half of TestSpansIntoRecording: runs under the fake span ABI.
func spansChild(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	end := d.Span("iteration")
	ok(t, dev.SetCurrent())
	s := must[*Stream](t)(dev.NewStream())
	b := must[*Buffer](t)(s.Alloc(10))
	ok(t, b.Close())
	ok(t, s.Close())
	_, err := s.Alloc(1) // fails before any driver call
	wantErr(t, err, ErrClosed)
	_, err = d.Device(9) // fails in the driver
	wantErr(t, err, ErrInvalidDevice)
	end()
	if !d.Recording() {
		t.Error("Recording() is false under the span ABI")
	}
}

func TestSpansIntoRecording(t *testing.T) {
	if os.Getenv("CUDAWRAP_SPANS_CHILD") == "1" {
		spansChild(t)
		return
	}
	if simLib == "" {
		t.Skip(simSkip)
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the fake span ABI")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakespans.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", fake, filepath.Join("testdata", "fakespans.c"), "-pthread").CombinedOutput(); err != nil {
		t.Fatalf("build fake span ABI: %v\n%s", err, out)
	}
	spans := filepath.Join(dir, "spans.txt")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpansIntoRecording$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CUDAWRAP_SPANS_CHILD=1", "LD_PRELOAD="+fake,
		"CUDAWRAP_FAKE_SPANS="+spans, "CUDAWRAP_TEST_LIB="+simLib)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := readSpans(t, spans)

	var ops []recordedSpan
	var iteration *recordedSpan
	checks := map[uint64]recordedSpan{} // by end
	for i, s := range got {
		switch {
		case s.domain != SpanDomain:
			t.Errorf("span %+v: domain %q", s, s.domain)
		case s.name == "iteration":
			iteration = &got[i]
		case s.name == CheckSpan:
			checks[s.end] = s
		default:
			ops = append(ops, s)
		}
	}
	var names []string
	for _, op := range ops {
		names = append(names, op.name)
	}
	want := "Driver.Open Driver.Device Device.SetCurrent Stream.Create Buffer.Alloc Buffer.Close Stream.Close Driver.Device"
	if strings.Join(names, " ") != want {
		t.Errorf("operations\n got %s\nwant %s", strings.Join(names, " "), want)
	}
	if iteration == nil {
		t.Fatal("no span from Driver.Span")
	}
	for _, op := range ops {
		if op.start > op.end {
			t.Errorf("%s: start %d > end %d", op.name, op.start, op.end)
		}
		// Each operation's check span ends with it and starts inside it.
		c, found := checks[op.end]
		if op.name != "Device.Release" && (!found || c.start < op.start || c.tid != op.tid) {
			t.Errorf("%s [%d, %d]: no check span inside (%+v)", op.name, op.start, op.end, c)
		}
		inIteration := op.start >= iteration.start && op.end <= iteration.end && op.tid == iteration.tid
		if wantIn := op.name != "Driver.Open" && op.name != "Device.Release" && !(op.name == "Driver.Device" && op.start < iteration.start); inIteration != wantIn {
			t.Errorf("%s: inside the iteration span %v, want %v", op.name, inIteration, wantIn)
		}
	}
}

func readSpans(t *testing.T, path string) []recordedSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recordedSpan
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			t.Fatalf("bad span line %q", sc.Text())
		}
		start, _ := strconv.ParseUint(f[3], 10, 64)
		end, _ := strconv.ParseUint(f[4], 10, 64)
		out = append(out, recordedSpan{tid: f[0], domain: f[1], name: f[2], start: start, end: end})
	}
	return out
}

func TestTracerProvider(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	d := openSim(t, WithTracerProvider(tp))
	dev := must[*Device](t)(d.Device(0))
	s := must[*Stream](t)(dev.NewStream())
	_, err := s.Alloc(4 * simMemBytes)
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("alloc: %v", err)
	}
	ok(t, s.Close())
	d.Span("mine")()

	var names []string
	var failed string
	for _, sp := range rec.Ended() {
		names = append(names, sp.Name())
		if sp.Status().Code == codes.Error {
			failed = sp.Name() + ": " + sp.Status().Description
		}
	}
	if got, want := strings.Join(names, " "), "Driver.Open Driver.Device Device.Context Stream.Create Buffer.Alloc Stream.Close mine"; got != want {
		t.Errorf("spans\n got %s\nwant %s", got, want)
	}
	if failed != "Buffer.Alloc: buffer.alloc: CUDA_ERROR_OUT_OF_MEMORY: out of memory" {
		t.Errorf("error span %q", failed)
	}
}
