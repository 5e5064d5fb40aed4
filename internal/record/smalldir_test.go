package record

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// mountTmpfs mounts a tmpfs of the given size ("4m") on a temporary
// directory for the test, skipping when not root.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestSmallRingDirectory records on ring directories too small for the
// default rings (a 2-6 MB CUPROF_TMPDIR, or 8 processes on
// Docker's 64 MB /dev/shm, lost the whole recording with "calibrate the
// clock: unexpected calibrator output"): the recording is kept, every call
// recorded or counted as dropped, and the program's exit status is its own.
func TestSmallRingDirectory(t *testing.T) {
	bins, _ := programs(t)
	prog := filepath.Join(bins, "threads")
	for _, tc := range []struct {
		size   string
		procs  int
		script string
	}{
		{"2m", 1, `exec "$0" 1000`},
		{"4m", 1, `exec "$0" 1000`},
		{"6m", 1, `exec "$0" 1000`},
		{"64m", 8, `for i in 1 2 3 4 5 6 7 8; do "$0" 1000 & done; wait`},
	} {
		t.Run(fmt.Sprintf("%s-%dprocs", tc.size, tc.procs), func(t *testing.T) {
			t.Setenv("CUPROF_TMPDIR", mountTmpfs(t, tc.size))
			var notes strings.Builder
			res, out := record(t, []string{"sh", "-c", tc.script, prog}, WithStdio(nil, &notes, &notes))
			_ = out
			var made, n int
			for _, line := range strings.Split(notes.String(), "\n") {
				var m int
				if _, err := fmt.Sscanf(line, "made %d", &m); err == nil {
					made += m
					n++
				}
			}
			if res.ExitCode != 0 || n != tc.procs {
				t.Fatalf("exit %d, %d of %d programs finished; output:\n%s", res.ExitCode, n, tc.procs, notes.String())
			}
			recorded := callCounts(res.Trace)["cuCtxGetCurrent"]
			if uint64(recorded)+res.Trace.TotalDrops() != uint64(made) {
				t.Errorf("recorded %d + dropped %d, made %d", recorded, res.Trace.TotalDrops(), made)
			}
			t.Logf("made %d, recorded %d, dropped %d; notes:\n%s", made, recorded, res.Trace.TotalDrops(), notes.String())
		})
	}
}

// TestCalibratorFailureKeepsRecording runs with a calibrator that fails
// ("calibrate the clock: unexpected calibrator output" ended the
// recording with exit 1 and no trace): the trace is written from the rings'
// clock anchors, with a warning, and the program's exit status is kept.
func TestCalibratorFailureKeepsRecording(t *testing.T) {
	bins, _ := programs(t)
	var notes strings.Builder
	cfgHook := optionFunc(func(c *config) { c.calibPath = "/bin/false" })
	res, _ := record(t, []string{filepath.Join(bins, "threads"), "100"}, WithStdio(nil, &notes, &notes), cfgHook)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if !strings.Contains(notes.String(), "cuprof: warning: calibrate the clock") || !strings.Contains(notes.String(), "anchors") {
		t.Errorf("no warning about the calibrator: %q", notes.String())
	}
	recorded := callCounts(res.Trace)["cuCtxGetCurrent"]
	if uint64(recorded)+res.Trace.TotalDrops() != 1600 || recorded == 0 {
		t.Errorf("recorded %d + dropped %d, made 1600", recorded, res.Trace.TotalDrops())
	}
	for _, e := range res.Trace.Events {
		if e.End < e.Start || e.Start < res.Trace.Meta.MonoStart-int64(1e9) {
			t.Fatalf("event %+v out of the run's time (mono start %d)", e, res.Trace.Meta.MonoStart)
		}
	}
}

// TestChildExitStatusRecorded: processes the program starts exit with
// statuses only their parents can wait for; the shim's exit hook passes
// them on (children were recorded with -1 after a clean exit).
// A child killed by a signal runs no exit hook: -1, unknown.
func TestChildExitStatusRecorded(t *testing.T) {
	bins, _ := programs(t)
	prog := filepath.Join(bins, "exitcode")
	res, _ := record(t, []string{"sh", "-c", `"$0" 0; "$0" 3; "$0" -9; exit 0`, prog})
	var codes []int32
	for _, p := range res.Trace.Processes {
		if strings.HasSuffix(p.Exe, "/exitcode") {
			codes = append(codes, p.ExitCode)
		}
	}
	slices.Sort(codes)
	if fmt.Sprint(codes) != "[-1 0 3]" {
		t.Errorf("children's exit codes %v, want 0, 3 and -1 (killed)", codes)
	}
}

// TestStaticProgramWarned: a statically linked program cannot load the
// shim (it gave 0 events with no warning); cuprof says so before
// it runs and after, and records what its dynamic children do.
func TestStaticProgramWarned(t *testing.T) {
	programs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "static.c")
	os.WriteFile(src, []byte("int main(void) { return 0; }\n"), 0o600)
	bin := filepath.Join(dir, "static")
	if out, err := exec.Command(testCC(), "-static", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cannot link a static program here: %v %s", err, out)
	}
	var notes strings.Builder
	res, _ := record(t, []string{bin}, WithStdio(nil, &notes, &notes))
	if res.ExitCode != 0 || !strings.Contains(notes.String(), "is statically linked") || !strings.Contains(notes.String(), "recorded anything") {
		t.Errorf("exit %d, notes %q; want warnings that it is static and nothing was recorded", res.ExitCode, notes.String())
	}
	if StaticELF("/bin/sh") || StaticELF(src) {
		t.Errorf("a dynamic program or a non-ELF file taken for static")
	}
}

// TestSpillDiskFull records with the output on a 1 MiB tmpfs, too small for
// the spill (a full disk for the spill replaced the program's exit
// status 0 with 1 and kept nothing): the program's status is kept, what
// was spilled is in the trace, the rest is counted as drops, and cuprof says
// so.
func TestSpillDiskFull(t *testing.T) {
	bins, _ := programs(t)
	dir := mountTmpfs(t, "1m")
	out := filepath.Join(dir, "out.cuprof")
	var notes strings.Builder
	res, err := Run(context.Background(), []string{filepath.Join(bins, "threads"), "20000"},
		WithSim(true), WithOutput(out), WithStdio(nil, &notes, &notes))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, notes.String())
	}
	if res.ExitCode != 0 {
		t.Errorf("exit %d, want the program's 0", res.ExitCode)
	}
	path := out
	if res.Rescued != "" {
		path = res.Rescued
		defer os.Remove(res.Rescued)
	}
	tr, err := trace.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v\n%s", path, err, notes.String())
	}
	var spillDrops uint64
	for _, d := range tr.Drops {
		if strings.HasPrefix(d.Reason, "spill failed") {
			spillDrops += d.Events
		}
	}
	recorded := callCounts(tr)["cuCtxGetCurrent"]
	if spillDrops == 0 || recorded == 0 || uint64(recorded)+tr.TotalDrops() != 16*20000 {
		t.Errorf("recorded %d, dropped %d (%d spill failed), made %d", recorded, tr.TotalDrops(), spillDrops, 16*20000)
	}
	if res.SpillDrops != spillDrops {
		t.Errorf("Result.SpillDrops %d, the trace's spill drops %d", res.SpillDrops, spillDrops)
	}
	if !strings.Contains(notes.String(), "spill files beside the output could not be written") {
		t.Errorf("no warning about the spill: %q", notes.String())
	}
	t.Logf("recorded %d, spill drops %d; %s", recorded, spillDrops, notes.String())
}

// TestSpillCompact checks the spill's cost per event: it is a trace
// (about 8 bytes a call), not the ring's 80-byte records.
func TestSpillCompact(t *testing.T) {
	bins, _ := programs(t)
	out := filepath.Join(t.TempDir(), "out.cuprof")
	var sizes []int64
	spillHook = func(dir string) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if st, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && strings.HasSuffix(e.Name(), ".spill") {
				sizes = append(sizes, st.Size())
			}
		}
	}
	defer func() { spillHook = nil }()
	res, err := Run(context.Background(), []string{filepath.Join(bins, "threads"), "5000"}, WithSim(true), WithOutput(out))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range sizes {
		total += s
	}
	st, _ := os.Stat(out)
	perEvent := float64(total) / float64(res.Events)
	t.Logf("%d events: spill %d bytes (%.1f B/event), trace %d bytes", res.Events, total, perEvent, st.Size())
	if res.Events == 0 || perEvent > 16 {
		t.Errorf("spill takes %.1f bytes per event, want at most 16 (the ring's records are %d)", perEvent, recSize)
	}
}

// TestDiskFallbackRelativeOutput: with no room for a ring in the ring
// directory (a 1 MiB tmpfs, as root) the rings go to disk beside the spill
// files, which sit beside a relative -o; the program changes directory
// before its first call. The fallback directory it was given used to be
// relative too, so its ring went nowhere: 0 of 1,001 calls recorded, none
// counted. It is absolute now.
func TestDiskFallbackRelativeOutput(t *testing.T) {
	bins, _ := programs(t)
	t.Setenv("CUPROF_TMPDIR", mountTmpfs(t, "1m"))
	t.Chdir(t.TempDir())
	var out bytes.Buffer
	res, err := Run(context.Background(), []string{"sh", "-c", `cd / && exec "$0" 1000 1`, filepath.Join(bins, "threads")},
		WithSim(true), WithStdio(nil, &out, &out), WithOutput("out.cuprof"))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	tr, err := trace.ReadFile("out.cuprof")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "made 1000") {
		t.Fatalf("threads output %q", out.String())
	}
	if got := callCounts(tr)["cuCtxGetCurrent"]; got != 1000 || tr.TotalDrops() != 0 {
		t.Errorf("recorded %d of 1000 calls, %d dropped; output:\n%s", got, tr.TotalDrops(), out.String())
	}
	if !strings.Contains(out.String(), "disk") {
		t.Errorf("no note says a ring went to disk: the fallback was not tested; output:\n%s", out.String())
	}
	if res.Events != len(tr.Events) {
		t.Errorf("Result says %d events, the trace has %d", res.Events, len(tr.Events))
	}
}
