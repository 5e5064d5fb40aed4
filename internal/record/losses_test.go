package record

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

var extraBuilds sync.Map // program name -> *extraBuild

type extraBuild struct {
	once sync.Once
	err  error
}

// program compiles testdata/NAME.c like programs' (against the simulated
// driver, with the shim's headers) once per run and returns its path.
func program(t *testing.T, name string) string {
	t.Helper()
	bins, sim := programs(t)
	v, _ := extraBuilds.LoadOrStore(name, &extraBuild{})
	b := v.(*extraBuild)
	b.once.Do(func() {
		shimDir, _ := filepath.Abs("../../cudawrap/shim")
		args := []string{"-O1", "-I", shimDir, "-o", filepath.Join(bins, name), filepath.Join("testdata", name+".c"),
			"-L", sim, "-lcuda", "-ldl", "-lpthread"}
		if out, err := exec.Command(testCC(), args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("cc %s: %v: %s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return filepath.Join(bins, name)
}

// needRoot skips a test that needs root outside CI, and fails it in CI,
// which runs as root.
func needRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("needs root %s, and CI runs as root", why)
	}
	t.Skipf("needs root %s", why)
}

// dropsFor is the trace's drop count of reason.
func dropsFor(tr *trace.Trace, reason string) uint64 {
	var n uint64
	for _, d := range tr.Drops {
		if d.Reason == reason {
			n += d.Events
		}
	}
	return n
}

// TestBackwardSpanIsOneBadRecord: one cuprof_span whose end precedes its
// start, then 20,000 calls. The trace Writer refuses such an event, and the
// spill used to fail on it: every later event of the process was dropped as
// "spill failed (disk full)" (101,698 of 200,001). It is clamped to its start
// and counted as one bad record, and every call is in the trace.
func TestBackwardSpanIsOneBadRecord(t *testing.T) {
	prog := program(t, "losses")
	const n = 20000
	res, out := record(t, []string{prog, "backspan", fmt.Sprint(n)})
	if strings.TrimSpace(out) != fmt.Sprintf("made %d", n) {
		t.Fatalf("losses output %q", out)
	}
	if got := callCounts(res.Trace)["cuCtxGetCurrent"]; got != n {
		t.Errorf("%d of %d calls recorded (drops %+v)", got, n, res.Trace.Drops)
	}
	if res.SpillDrops != 0 || res.BadRecords != 1 {
		t.Errorf("spill drops %d, bad records %d; want 0 and 1", res.SpillDrops, res.BadRecords)
	}
	spans := 0
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindSpan {
			spans++
			if ev.End != ev.Start {
				t.Errorf("the backward span is [%d, %d], want clamped to its start", ev.Start, ev.End)
			}
		}
	}
	if spans != 1 {
		t.Errorf("%d spans in the trace, want the one, clamped", spans)
	}
}

// TestNamesPastTheStringAreaCounted: 20,000 spans with distinct 64-byte
// names, 1.4 MiB of names for the ring's 1 MiB string area. The names that
// did not fit used to come out empty with nothing said (string_drops was
// read and never reported): each span is in the trace, named or counted
// among the names lost, and the two add up.
func TestNamesPastTheStringAreaCounted(t *testing.T) {
	prog := program(t, "losses")
	const n = 20000
	res, out := record(t, []string{prog, "names", fmt.Sprint(n)})
	if strings.TrimSpace(out) != fmt.Sprintf("made %d", n) {
		t.Fatalf("losses output %q", out)
	}
	named, unnamed := 0, 0
	for _, ev := range res.Trace.Events {
		if ev.Kind != trace.KindSpan {
			continue
		}
		if ev.Name == 0 {
			unnamed++
		} else {
			named++
		}
	}
	lost := dropsFor(res.Trace, DropNameNoRoom)
	if named+unnamed != n || unnamed == 0 || uint64(unnamed) != lost {
		t.Errorf("%d spans named, %d unnamed, %d names counted lost; want %d spans, the unnamed ones counted", named, unnamed, lost, n)
	}
	if res.OtherDrops[DropNameNoRoom] != lost {
		t.Errorf("Result says %d names lost, the trace %d", res.OtherDrops[DropNameNoRoom], lost)
	}
}

// TestLongNameCutCounted: a 2 MiB name given to cuprof_intern keeps its
// first 65,535 bytes, as before, and the cut is counted (it used to be
// silent).
func TestLongNameCutCounted(t *testing.T) {
	prog := program(t, "losses")
	res, out := record(t, []string{prog, "longname"})
	if strings.TrimSpace(out) != "made 1" {
		t.Fatalf("losses output %q", out)
	}
	var got string
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindSpan {
			got = res.Trace.String(ev.Name)
		}
	}
	if len(got) != stringMax || strings.Trim(got, "x") != "" {
		t.Errorf("the long name is %d bytes, want its first %d", len(got), stringMax)
	}
	if cut := dropsFor(res.Trace, DropNameCut); cut != 1 {
		t.Errorf("%d names counted cut, want 1 (drops %+v)", cut, res.Trace.Drops)
	}
}

// TestForkWithoutAtforkHandlers: a child made by glibc's _Fork or by
// syscall(SYS_fork) runs no pthread_atfork handler, so it kept its
// parent's ring and chunk: its calls overwrote the parent's (1,001 of
// 50,001 left, all under the parent, 0 drops). Each process now has its
// own calls, every one of them.
func TestForkWithoutAtforkHandlers(t *testing.T) {
	prog := program(t, "losses")
	const n = 5000
	for _, how := range []string{"_Fork", "syscall"} {
		t.Run(how, func(t *testing.T) {
			res, out := record(t, []string{prog, "fork", how, fmt.Sprint(n)})
			if strings.TrimSpace(out) != fmt.Sprintf("parent %d child %d", 2*n, n) {
				t.Fatalf("losses output %q", out)
			}
			var parent uint32 // the process another one's PPID names
			for _, p := range res.Trace.Processes {
				for _, q := range res.Trace.Processes {
					if q.PPID == p.PID {
						parent = p.PID
					}
				}
			}
			per := map[uint32]int{}
			for _, ev := range res.Trace.Events {
				if ev.Kind == trace.KindCall && ev.API.String() == "cuCtxGetCurrent" {
					per[ev.PID]++
				}
			}
			if len(per) != 2 || res.Trace.TotalDrops() != 0 {
				t.Fatalf("calls by process %v, drops %+v; want the parent's and the child's, none dropped", per, res.Trace.Drops)
			}
			for pid, c := range per {
				want := n
				if pid == parent {
					want = 2 * n
				}
				if c != want {
					t.Errorf("process %d: %d calls recorded, want %d (all: %v, parent %d)", pid, c, want, per, parent)
				}
			}
		})
	}
}

// fill writes a file into dir until its file system is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}

// TestRescueMovesOnWhenAWriteFails: the output's disk fills up once the
// program's calls are spilled, and the temporary directory's disk is full:
// the rescue could create its file there, and its writes failed. It used to
// move on only when it could not create its file, and the recording was
// lost (about 1.08M events, exit 1). It now moves on to the home directory,
// leaves nothing where it failed, and loses nothing.
func TestRescueMovesOnWhenAWriteFails(t *testing.T) {
	needRoot(t, "to mount full file systems (tmpfs)")
	bins, _ := programs(t)
	outDir := mountTmpfs(t, "8m")
	tmp := mountTmpfs(t, "1m")
	home := t.TempDir()
	if os.Getenv("CUPROF_CACHE_DIR") == "" { // the shim's build stays where it is
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Skip(err)
		}
		t.Setenv("CUPROF_CACHE_DIR", filepath.Join(cache, "cuprof"))
	}
	fill(t, tmp)
	t.Setenv("TMPDIR", tmp)
	t.Setenv("HOME", home)
	spillHook = func(string) { fill(t, outDir) }
	defer func() { spillHook = nil }()
	out := filepath.Join(outDir, "out.cuprof")
	var notes strings.Builder
	res, err := Run(context.Background(), []string{filepath.Join(bins, "threads"), "20000"},
		WithSim(true), WithOutput(out), WithStdio(nil, &notes, &notes))
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, notes.String())
	}
	if res.ExitCode != 0 || res.WriteErr == nil || !strings.HasPrefix(res.Rescued, home+string(filepath.Separator)) {
		t.Fatalf("exit %d, rescued to %q (%v); want the program's 0 and the home directory", res.ExitCode, res.Rescued, res.WriteErr)
	}
	tr, err := trace.ReadFile(res.Rescued)
	if err != nil {
		t.Fatal(err)
	}
	if got := callCounts(tr)["cuCtxGetCurrent"]; got != 16*20000 || tr.TotalDrops() != 0 {
		t.Errorf("rescued trace: %d calls, %d drops; want %d, none", got, tr.TotalDrops(), 16*20000)
	}
	if res.Events != len(tr.Events) || res.Drops != tr.TotalDrops() || res.SpillDrops != 0 {
		t.Errorf("Result: %d events, %d drops, %d spill drops; the rescued trace %d, %d", res.Events, res.Drops, res.SpillDrops, len(tr.Events), tr.TotalDrops())
	}
	for _, dir := range []string{tmp, outDir} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.Name() != "filler" {
				t.Errorf("left in %s: %s", dir, e.Name())
			}
		}
	}
}

// TestPassThroughCountedWithoutExitHooks: a process and its fork() child
// pass their calls through and end with _exit, running no exit hook (as a
// Go program's exit and a forked multiprocessing child's os._exit do). The
// counts used to live in the process until its exit hook wrote them, and
// were lost without a word; they are counted in the ring, and the recorder
// writes what a process left once it is gone.
func TestPassThroughCountedWithoutExitHooks(t *testing.T) {
	prog := program(t, "losses")
	apis, err := ParsePassThrough("cuCtxGetDevice")
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	res, out := record(t, []string{prog, "passexit", fmt.Sprint(n)}, WithPassThrough(apis))
	if strings.TrimSpace(out) != fmt.Sprintf("made %d", 2*n) {
		t.Fatalf("losses output %q", out)
	}
	counted := map[uint32]uint64{}
	for _, ev := range res.Trace.Events {
		switch {
		case ev.Kind == trace.KindCall && ev.API.String() == "cuCtxGetDevice":
			t.Fatalf("a passed-through call was recorded: %+v", ev)
		case ev.Kind == trace.KindCount && res.Trace.String(ev.Name) == "cuCtxGetDevice":
			counted[ev.PID] += ev.Size
		}
	}
	if len(counted) != 2 {
		t.Errorf("passed-through calls counted by process: %v, want %d in each of 2", counted, n)
	}
	for pid, c := range counted {
		if c != n {
			t.Errorf("process %d: %d calls counted as passed through, want %d", pid, c, n)
		}
	}
}

// TestChildAfterPrivilegeDropCounted: a fork child that becomes another
// user (setuid, as daemons and setpriv do) cannot make its ring in the
// recorder's private directory. Its calls used to vanish uncounted: the
// child now counts itself and its calls in its parent's ring, and the
// recording says how many children and calls it could not record.
func TestChildAfterPrivilegeDropCounted(t *testing.T) {
	needRoot(t, "to become another user (uid 65534)")
	prog := program(t, "losses")
	const n = 2000
	res, out := record(t, []string{prog, "setuid", fmt.Sprint(n)})
	if strings.TrimSpace(out) != fmt.Sprintf("parent %d child %d", n, n) {
		t.Fatalf("losses output %q", out)
	}
	if got := callCounts(res.Trace)["cuCtxGetCurrent"]; got != n {
		t.Errorf("%d calls recorded, want the parent's %d", got, n)
	}
	if lost := dropsFor(res.Trace, DropChildNoRing); res.RinglessChildren != 1 || lost != n {
		t.Errorf("%d children without a ring, %d of their calls counted; want 1 and %d (drops %+v)",
			res.RinglessChildren, lost, n, res.Trace.Drops)
	}
}
