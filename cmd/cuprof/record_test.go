package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/trace"
)

func TestRecordErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record"}, "missing command"},
		{[]string{"record", "--buffer", "lots", "--", "true"}, "invalid --buffer"},
		{[]string{"record", "--when-full", "later", "--", "true"}, "invalid --when-full \"later\": use wait"},
		{[]string{"record", "--nope", "--", "true"}, "unknown flag"},
		{[]string{"record", "--python-threshold", "70000", "--", "true"}, "invalid --python-threshold 70000"},
		{[]string{"record", "--python-helper-min", "2s", "--", "true"}, "invalid --python-helper-min 2s"},
		{[]string{"record", "--python", "some", "--", "true"}, "invalid --python \"some\""},
	} {
		var out, errb bytes.Buffer
		err := run(c.args, nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
		// Refused before anything ran: no "recording ... into" notice.
		if strings.Contains(errb.String(), "recording") {
			t.Errorf("%v: said %q before refusing", c.args, errb.String())
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"65536": 65536, "256K": 256 << 10, "64M": 64 << 20, "1G": 1 << 30, "16KiB": 16 << 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// Sizes past 2^64 bytes wrapped around (17179869184G was 0: a ring of
	// two tiny chunks) instead of being refused.
	for _, in := range []string{"17179869184G", "17179869185G", "18446744073709551616", "0", "-1"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestRecordWritesTraceAndKeepsExitCode(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	t.Setenv("CUPROF_SIM_COST_SCALE", "0")
	out := filepath.Join(t.TempDir(), "t.cuprof")
	var stdout, stderr bytes.Buffer
	err := run([]string{"record", "--sim", "-o", out, "--", "sh", "-c", "echo hi; exit 3"}, nil, &stdout, &stderr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 3 {
		t.Fatalf("record of exit 3: %v (stderr %q)", err, stderr.String())
	}
	if stdout.String() != "hi\n" {
		t.Errorf("program output %q", stdout.String())
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("trace mode %v, want 0600", st.Mode().Perm())
	}
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta.Capture != "sim" || len(tr.Meta.Command) != 3 {
		t.Errorf("meta %+v", tr.Meta)
	}
	if !strings.Contains(stderr.String(), "written to "+out) {
		t.Errorf("stderr %q", stderr.String())
	}
}

// TestRecordChecksOutputFirst: an output that cannot be written is refused
// before the program runs (it used to run, then fail to rename and lose
// the recording).
func TestRecordChecksOutputFirst(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	for _, out := range []string{dir, filepath.Join(dir, "missing", "t.cuprof"), filepath.Join(dir, "t.cuprof") + "/"} {
		var stdout, stderr bytes.Buffer
		err := run([]string{"record", "--sim", "-o", out, "--", "touch", marker}, nil, &stdout, &stderr)
		if err == nil {
			t.Errorf("record -o %s: no error", out)
		}
		if _, serr := os.Stat(marker); serr == nil {
			t.Fatalf("record -o %s ran the program before refusing the output (%v)", out, err)
		}
	}
}

func TestRecordSummaryWords(t *testing.T) {
	var b bytes.Buffer
	summary(&b, &record.Result{Events: 1, Processes: 1, Drops: 1}, "t.cuprof")
	if got := b.String(); got != "cuprof: 1 event from 1 process written to t.cuprof; 1 event dropped (buffer full: raise --buffer, or --when-full wait)\n" {
		t.Errorf("summary %q", got)
	}
	b.Reset()
	summary(&b, &record.Result{Events: 9, Processes: 1, Drops: 7, SpillDrops: 5, BadRecords: 2}, "t.cuprof")
	if got := b.String(); got != "cuprof: 9 events from 1 process written to t.cuprof; 5 events lost to a full disk beside the output (free some space); 2 torn or bogus ring records dropped\n" {
		t.Errorf("summary %q", got)
	}
	// Drops for another reason are said as that reason, not as a full
	// buffer: on the H200 CUPTI's callbacks made 45 nested calls in every
	// recording, which the summary called "buffer full".
	b.Reset()
	summary(&b, &record.Result{Events: 9, Processes: 1, Drops: 50, OtherDrops: map[string]uint64{
		record.DropNestedCall: 45, record.DropRingHeld: 3}}, "t.cuprof")
	if got := b.String(); got != "cuprof: 9 events from 1 process written to t.cuprof; 2 events dropped (buffer full: raise --buffer, or --when-full wait)"+
		"; 45 driver calls made inside a wrapped call went to the driver unrecorded (a signal handler's, or another tool's callback such as CUPTI's)"+
		"; 3 events dropped ("+record.DropRingHeld+")\n" {
		t.Errorf("summary %q", got)
	}
}

// The warning a reading command prints names each drop reason, with the
// full buffer's fix only for a full buffer.
func TestDropWarningByReason(t *testing.T) {
	var b bytes.Buffer
	g := &globalOptions{info: &b}
	tr := &trace.Trace{Drops: []trace.Drop{
		{PID: 1, TID: 1, Events: 45, Reason: record.DropNestedCall},
		{PID: 1, TID: 2, Events: 2, Reason: "buffer full"},
		{PID: 1, TID: 3, Events: 1, Reason: ""},
		{PID: 1, TID: 4, Events: 5, Reason: record.DropNestedCall},
	}}
	warnTrace(g, "t.cuprof", tr, warnDrops)
	want := "cuprof: warning: t.cuprof: 50 events were not recorded (" + record.DropNestedCall + "); counts are low by them\n" +
		"cuprof: warning: t.cuprof: the capture dropped 3 events (buffer full); counts and times are low (record again with a larger --buffer)\n"
	if got := b.String(); got != want {
		t.Errorf("warnings\n%s\nwant\n%s", got, want)
	}
	b.Reset()
	warnTrace(g, "t.cuprof", tr, 0)
	if b.Len() != 0 {
		t.Errorf("warned %q without warnDrops", b.String())
	}
	b.Reset()
	summary(&b, &record.Result{Events: 5, Processes: 1, FullWaits: 1, FullWait: 1500 * time.Microsecond}, "t.cuprof")
	if got := b.String(); got != "cuprof: 5 events from 1 process written to t.cuprof; threads waited 1 time for room in the ring (2ms in all: raise --buffer to wait less)\n" {
		t.Errorf("summary %q", got)
	}
	b.Reset()
	summary(&b, &record.Result{Events: 2, Processes: 3}, "t.cuprof")
	if got := b.String(); got != "cuprof: 2 events from 3 processes written to t.cuprof\n" {
		t.Errorf("summary %q", got)
	}
}

// TestNoEventsSaysWhy: a statically linked program cannot be interposed
// on; one that never calls the driver is told apart from it.
func TestNoEventsSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module static\n"), 0o600)
	bin := filepath.Join(dir, "static")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build a static program: %v %s", err, out)
	}
	if msg := noEventsReason(bin, &record.Result{}); !strings.Contains(msg, "is statically linked") {
		t.Errorf("static: %s", msg)
	}
	if msg := noEventsReason("sh", &record.Result{}); !strings.Contains(msg, "no process of sh loaded the CUDA driver") {
		t.Errorf("sh: %s", msg)
	}
}

// FuzzParseSize: --buffer sizes parse or fail with the one-line usage
// error, never panic or wrap around, and a size written back in bytes reads
// the same.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"65536", "256K", "64M", "1G", "64MiB", "16mb", " 8k ", "0", "-1", "18446744073709551615", "17179869184G", "1.5M", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseSize(s)
		if err != nil {
			if v != 0 || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "invalid --buffer") {
				t.Fatalf("%q: %d, %v", s, v, err)
			}
			return
		}
		if v == 0 {
			t.Fatalf("%q: size 0 accepted", s)
		}
		if back, err := parseSize(strconv.FormatUint(v, 10)); err != nil || back != v {
			t.Fatalf("%q = %d reads back as %d, %v", s, v, back, err)
		}
	})
}
