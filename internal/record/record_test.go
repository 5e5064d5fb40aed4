package record

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cuprof/cuprof/cudawrap/shim"
	simdriver "github.com/cuprof/cuprof/cudawrap/sim"
	"github.com/cuprof/cuprof/trace"
)

var (
	buildOnce sync.Once
	binDir    string
	simDir    string
	buildErr  error
)

// programs compiles testdata/*.c against the simulated driver once per run.
func programs(t *testing.T) (bins, sim string) {
	t.Helper()
	if _, err := exec.LookPath(testCC()); err != nil {
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skip("no C compiler")
		}
	}
	buildOnce.Do(func() {
		ctx := context.Background()
		// The shim, which every recording needs, builds while the
		// programs do: two compilers at once, for the machine's cores.
		shimDone := make(chan error, 1)
		go func() {
			_, err := shim.Library(ctx)
			shimDone <- err
		}()
		defer func() {
			if err := <-shimDone; err != nil && buildErr == nil {
				buildErr = err
			}
		}()
		simDir, buildErr = simdriver.Driver(ctx)
		if buildErr != nil {
			return
		}
		// The shim too, once and without a deadline, so that a test's own
		// timeout does not include building it on a loaded machine.
		if _, buildErr = shim.Library(ctx); buildErr != nil {
			return
		}
		binDir, buildErr = os.MkdirTemp("", "cuprof-record-test-")
		if buildErr != nil {
			return
		}
		shimDir, _ := filepath.Abs("../../cudawrap/shim")
		var cmds [][]string
		// dlnext's plugin's dependency, found by its rpath: built before
		// the plugin, which links against it.
		dep := []string{"-O1", "-shared", "-fPIC", "-o", filepath.Join(binDir, "libdlpdep.so"), filepath.Join("testdata", "dlpdep.c")}
		if out, err := exec.Command(testCC(), dep...).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("compile dlpdep.c: %v: %s", err, out)
			return
		}
		cmds = append(cmds, []string{"-O1", "-shared", "-fPIC", "-o", filepath.Join(binDir, "libdlplugin.so"), filepath.Join("testdata", "dlplugin.c"),
			"-L", binDir, "-ldlpdep", "-Wl,-rpath,$ORIGIN", "-ldl"})
		for _, name := range []string{"paths", "threads", "forkexec", "killme", "exitcode", "nvtxclient", "dlnext", "manythreads", "errnoexec", "sigintern", "sigalloc", "forkintern", "keysfull", "sigspan", "capture", "barrier", "contend"} {
			cmds = append(cmds, []string{"-O1", "-I", shimDir, "-o", filepath.Join(binDir, name),
				filepath.Join("testdata", name+".c"), "-L", simDir, "-lcuda", "-ldl", "-lpthread"})
		}
		// shadows defines clock_gettime for the shim to call: exported.
		cmds = append(cmds, []string{"-O1", "-rdynamic", "-I", shimDir, "-o", filepath.Join(binDir, "shadows"),
			filepath.Join("testdata", "shadows.c"), "-L", simDir, "-lcuda", "-ldl", "-lpthread"})
		errs := make([]error, len(cmds))
		var wg sync.WaitGroup
		for i, args := range cmds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if out, err := exec.Command(testCC(), args...).CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("cc %s: %v: %s", strings.Join(args, " "), err, out)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				buildErr = err
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir, simDir
}

func TestMain(m *testing.M) {
	if out := os.Getenv("CUPROF_TEST_RECORDER_OUT"); out != "" {
		recorderProcess(out) // a recorder for a test to kill
		return
	}
	if paths := os.Getenv("CUPROF_TEST_PLANT"); paths != "" {
		plantAs(65534, strings.Split(paths, "\x1f")) // another user, for a test of what it can make
		return
	}
	os.Setenv("CUPROF_SIM_COST_SCALE", "0")
	// The shim and the simulated driver come from cuprof's own cache
	// ($CUPROF_CACHE_DIR, else the user's), as for the other packages'
	// recordings: built once per version of their sources, not once per
	// test run (the cbuild tests build them afresh).
	// The rings go to a ring base of this test binary's own, made like
	// /dev/shm (there when it is writable; mode 1777): a recording of
	// another run that was killed (a test binary past its timeout) leaves
	// its working directory in its own base, where the next run's
	// recordings do not report it in the output the tests compare.
	var base string
	if os.Getenv("CUPROF_TMPDIR") == "" {
		parent := ""
		if ringBase() == "/dev/shm" {
			parent = "/dev/shm"
		}
		if d, err := os.MkdirTemp(parent, "cuprof-record-test-rings-"); err == nil && os.Chmod(d, 0o777|os.ModeSticky) == nil {
			base = d
			os.Setenv("CUPROF_TMPDIR", d)
		}
	}
	code := m.Run()
	if base != "" {
		os.RemoveAll(base)
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// recording is a Result with the trace it wrote, read back.
type recording struct {
	*Result
	Trace *trace.Trace
}

// run records argv into a temporary file and reads the trace back.
func run(t *testing.T, argv []string, opts ...Option) (*recording, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.cuprof")
	res, err := Run(context.Background(), argv, append(opts, WithOutput(out))...)
	if err != nil {
		return nil, err
	}
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatalf("read the recorded trace back: %v", err)
	}
	checkWritten(t, out, res, tr)
	return &recording{Result: res, Trace: tr}, nil
}

// checkWritten checks the file's mode, that no spill or temporary file is
// left beside it, and that the counts Run returns are the trace's.
func checkWritten(t *testing.T, out string, res *Result, tr *trace.Trace) {
	t.Helper()
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("trace file mode: %v %v, want 0600", st.Mode(), err)
	}
	ents, _ := os.ReadDir(filepath.Dir(out))
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("beside the trace after recording: %v, want only it", names)
	}
	if res.Events != len(tr.Events) || res.Processes != len(tr.Processes) || res.Drops != tr.TotalDrops() {
		t.Errorf("Result counts %d events, %d processes, %d drops; the file has %d, %d, %d",
			res.Events, res.Processes, res.Drops, len(tr.Events), len(tr.Processes), tr.TotalDrops())
	}
}

func record(t *testing.T, argv []string, opts ...Option) (*recording, string) {
	t.Helper()
	var out bytes.Buffer
	opts = append([]Option{WithSim(true), WithStdio(nil, &out, &out)}, opts...)
	res, err := run(t, argv, opts...)
	if err != nil {
		t.Fatalf("Run %v: %v\noutput:\n%s", argv, err, out.String())
	}
	return res, out.String()
}

func callCounts(tr *trace.Trace) map[string]int {
	m := map[string]int{}
	for _, ev := range tr.Events {
		if ev.Kind == trace.KindCall {
			m[ev.API.String()]++
		}
	}
	return m
}

func TestPathsRecordedExactlyAndResultsUnchanged(t *testing.T) {
	bins, sim := programs(t)
	prog := filepath.Join(bins, "paths")
	plain := exec.Command(prog)
	plain.Env = append(os.Environ(), "LD_LIBRARY_PATH="+sim)
	want, err := plain.CombinedOutput()
	if err != nil {
		t.Fatalf("paths without the shim: %v\n%s", err, want)
	}
	t.Setenv("RANK", "3")
	// srun's variables, kept whole for analysis.IdentityOf.
	t.Setenv("SLURM_PROCID", "5")
	t.Setenv("SLURM_NTASKS", "16")
	t.Setenv("SLURM_JOB_ID", "4242")
	res, got := record(t, []string{prog})
	if got != string(want) {
		t.Errorf("output changed under the shim:\n--- without\n%s\n--- with\n%s", want, got)
	}
	made := map[string]int{}
	for _, line := range strings.Split(string(want), "\n") {
		var api string
		var n int
		if _, err := fmt.Sscanf(line, "made %s %d", &api, &n); err == nil {
			made[api] = n
		}
	}
	if len(made) < 10 {
		t.Fatalf("paths reported too few APIs: %v", made)
	}
	rec := callCounts(res.Trace)
	for api, n := range made {
		if rec[api] != n {
			t.Errorf("%s: recorded %d calls, made %d", api, rec[api], n)
		}
	}
	for api, n := range rec {
		// paths does not count its cuGetProcAddress lookups (recorded as
		// calls too; TestEveryFunctionRecordedOnce counts them).
		if made[api] == 0 && api != "cuGetProcAddress" {
			t.Errorf("%s: recorded %d calls the program did not make", api, n)
		}
	}
	// Handles pair create to destroy.
	for _, obj := range []struct{ create, destroy trace.API }{
		{trace.APIStreamCreate, trace.APIStreamDestroy},
		{trace.APIEventCreate, trace.APIEventDestroy},
		{trace.APIMemAllocAsync, trace.APIMemFreeAsync},
	} {
		live := map[uint64]int{}
		for _, ev := range res.Trace.Events {
			if ev.Kind != trace.KindCall || ev.Result != 0 {
				continue
			}
			switch ev.API {
			case obj.create:
				if ev.Handle == 0 {
					t.Errorf("%v recorded without its handle", obj.create)
				}
				live[ev.Handle]++
			case obj.destroy:
				live[ev.Handle]--
			}
		}
		for h, n := range live {
			if n != 0 {
				t.Errorf("%v/%v: handle %#x unbalanced by %d", obj.create, obj.destroy, h, n)
			}
		}
	}
	// The double free is recorded with its error; calls carry callers,
	// and the callers resolve to main.
	var errs, symbolized int
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindCall && ev.API == trace.APIMemFree && ev.Result != 0 {
			errs++
		}
		if ev.Kind == trace.KindCall && ev.Caller == 0 {
			t.Fatalf("call without caller: %+v", ev)
		}
	}
	for _, s := range res.Trace.Symbols {
		if s.Name == "main" {
			symbolized++
		}
	}
	if errs != 1 {
		t.Errorf("failed cuMemFree calls recorded: %d, want 1", errs)
	}
	if symbolized == 0 {
		t.Errorf("no call site symbolized to main: %v", res.Trace.Symbols)
	}
	if res.Trace.Meta.Capture != "sim" || res.Trace.Meta.Clock.Source == "" {
		t.Errorf("meta: %+v", res.Trace.Meta)
	}
	if len(res.Trace.Processes) != 1 || res.Trace.Processes[0].ExitCode != 0 ||
		res.Trace.Processes[0].Env["RANK"] != "3" || res.Trace.Processes[0].Exe != prog {
		t.Errorf("processes: %+v", res.Trace.Processes)
	}
	if len(res.Trace.Processes) == 1 {
		p := &res.Trace.Processes[0]
		host, _ := os.Hostname()
		if p.Env["SLURM_NTASKS"] != "16" || p.Env["SLURM_JOB_ID"] != "4242" || p.Host != host || p.BootID == "" || p.HostNS == "" {
			t.Errorf("process identity not kept: host %q boot %q ns %q env %v", p.Host, p.BootID, p.HostNS, p.Env)
		}
	}
}

// TestDlsymNextFromProgram looks symbols up with dlsym(RTLD_NEXT, ...) from
// the program and from a plugin it dlopen's: under the shim they resolve as
// without it (the shim's dlsym used to crash on a link map the loader had
// not opened, and to miss what comes before a plugin in load order),
// dlerror() is left as the loader leaves it, and the driver functions found
// are recorded.
func TestDlsymNextFromProgram(t *testing.T) {
	bins, sim := programs(t)
	prog := filepath.Join(bins, "dlnext")
	plugin := filepath.Join(bins, "libdlplugin.so")
	// Preloaded before the shim: the program's RTLD_NEXT lookups find it,
	// the shim's own would not.
	t.Setenv("LD_PRELOAD", filepath.Join(bins, "libdlpdep.so"))
	plain := exec.Command(prog, plugin)
	plain.Env = append(os.Environ(), "LD_LIBRARY_PATH="+sim)
	want, err := plain.CombinedOutput()
	if err != nil {
		t.Fatalf("dlnext without the shim: %v\n%s", err, want)
	}
	for _, line := range []string{"next puts is libc's 1", "next dlpdep_value 42", "through them: 0 0",
		"plugin: next dlpdep_value"} {
		if !strings.Contains(string(want), line) {
			t.Fatalf("dlnext without the shim: no %q in\n%s", line, want)
		}
	}
	res, got := record(t, []string{prog, plugin})
	if got != string(want) {
		t.Errorf("output changed under the shim:\n--- without\n%s\n--- with\n%s", want, got)
	}
	if c := callCounts(res.Trace); c["cuInit"] != 2 || c["cuDeviceGetCount"] != 1 {
		t.Errorf("recorded calls %v, want cuInit 2 (direct, through RTLD_NEXT) and cuDeviceGetCount 1", c)
	}
}

// TestErrnoKeptWhenARingOpens: an exec'd image whose first event is a
// cuprof_intern (as an NVTX name is) opens its ring past the previous
// image's file of the same pid; errno must come out as the program set it
// (it came out EEXIST).
func TestErrnoKeptWhenARingOpens(t *testing.T) {
	bins, _ := programs(t)
	_, out := record(t, []string{filepath.Join(bins, "errnoexec")})
	var id, e1, on, e2 int
	if _, err := fmt.Sscanf(out, "id %d errno %d, active %d errno %d", &id, &e1, &on, &e2); err != nil {
		t.Fatalf("errnoexec output %q", out)
	}
	if id == 0 || on != 1 || e1 != 77 || e2 != 78 {
		t.Errorf("errnoexec: %q, want a string id, active 1, errno 77 and 78", strings.TrimSpace(out))
	}
}

// TestSignalHandlerInternNoDeadlock names strings in a loop while a 20 kHz
// profiling timer's handler names strings too: a handler interrupting the
// shim inside its string table used to block on the lock the thread
// already held, hanging the program within milliseconds; one landing in
// the shim's dlsym as the ring opened, inside malloc, blocked on glibc's
// arena lock in the string table's calloc (a run in a hundred or so;
// TestSignalHandlerInternAllocatesNothing checks that). Killed (SIGTERM)
// after 90 s if it hangs.
func TestSignalHandlerInternNoDeadlock(t *testing.T) {
	bins, _ := programs(t)
	// 2M calls take about a second, 7 s on a loaded machine; a deadlock
	// takes forever.
	res, out := recordWithin(t, 90*time.Second, []string{filepath.Join(bins, "sigintern"), "2000000"})
	if res.ExitCode != 0 || !strings.HasPrefix(out, "done 2000000") {
		t.Errorf("sigintern: exit %d (signal %v), output %q: deadlocked in the shim?", res.ExitCode, res.Signal, out)
	}
}

// recordWithin records argv on the simulated driver as record does, the
// program killed (SIGTERM) once limit has passed: for a test of a hang.
func recordWithin(t *testing.T, limit time.Duration, argv []string) (*Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out bytes.Buffer
	res, err := Run(ctx, argv, WithSim(true), WithStdio(nil, &out, &out), WithOutput(filepath.Join(t.TempDir(), "t.cuprof")))
	if err != nil {
		t.Fatalf("Run %v: %v\n%s", argv, err, out.String())
	}
	return res, out.String()
}

// TestSignalHandlerInternAllocatesNothing: a signal handler names strings
// new to the string table, the process's first among them, while the
// program counts the allocations made inside the handler. The string table
// used to be allocated (calloc) and grown (realloc) by whichever call
// needed it: a handler's, interrupting its thread inside malloc (the shim's
// own dlsym when the ring opens), then blocked on glibc's arena lock
// forever (TestSignalHandlerInternNoDeadlock's rare hang). Every handler
// call must still get its id.
func TestSignalHandlerInternAllocatesNothing(t *testing.T) {
	bins, _ := programs(t)
	_, out := record(t, []string{filepath.Join(bins, "sigalloc"), "1500"})
	if strings.HasPrefix(out, "not glibc") {
		t.Skip("the program counts allocations through glibc's __libc_malloc")
	}
	var handled, ids, allocs int
	if _, err := fmt.Sscanf(out, "handled %d ids %d allocs %d", &handled, &ids, &allocs); err != nil {
		t.Fatalf("sigalloc output %q", out)
	}
	if handled != 1500 || ids != handled || allocs != 0 {
		t.Errorf("sigalloc: %q, want 1500 handled, an id for each and no allocation in the handler", strings.TrimSpace(out))
	}
}

// TestForkHandlerInternNoDeadlock: a signal handler names a string while
// its thread forks, after the shim's fork-prepare handler took the ring's
// locks (the program's own prepare handler raises the signal). The
// handler's cuprof_intern used to wait on the lock its thread held, every
// time; it is now dropped. Killed (SIGTERM) after 60 s if it hangs.
func TestForkHandlerInternNoDeadlock(t *testing.T) {
	bins, _ := programs(t)
	res, out := recordWithin(t, 60*time.Second, []string{filepath.Join(bins, "forkintern")})
	if res.ExitCode != 0 || !strings.HasPrefix(out, "forked, child 0, handled 1") {
		t.Errorf("forkintern: exit %d (signal %v), output %q: deadlocked in the fork?", res.ExitCode, res.Signal, out)
	}
}

// TestNoPthreadKeyLeft: a program that used up every pthread key keeps its
// keys' values: the shim, whose key creation then failed, used to set key 0
// (someone else's) on every chunk it claimed.
func TestNoPthreadKeyLeft(t *testing.T) {
	bins, _ := programs(t)
	res, out := record(t, []string{filepath.Join(bins, "keysfull")})
	if !strings.Contains(out, " kept 1") {
		t.Errorf("keysfull: %q, want its key kept", strings.TrimSpace(out))
	}
	if n := callCounts(res.Trace)["cuCtxGetCurrent"]; n != 3 {
		t.Errorf("recorded %d cuCtxGetCurrent, want 3", n)
	}
}

// TestSignalHandlerSpansCounted records a span from a profiling timer's
// handler while the program calls the driver in a loop: a span landing
// inside a wrapper (most of them) cannot be written there, and used to be
// lost without a trace; every one is now recorded or counted as dropped.
func TestSignalHandlerSpansCounted(t *testing.T) {
	bins, _ := programs(t)
	// 20 us per call, spun in the driver: the handler runs inside wrappers.
	t.Setenv("CUPROF_SIM_COST_SCALE", "1")
	t.Setenv("CUPROF_SIM_COSTS", "cuCtxGetCurrent=20000")
	res, out := record(t, []string{filepath.Join(bins, "sigspan"), "20000"})
	var handled, made int
	if _, err := fmt.Sscanf(out, "handled %d made %d", &handled, &made); err != nil {
		t.Fatalf("sigspan output %q", out)
	}
	var calls, spans int
	for _, ev := range res.Trace.Events {
		switch ev.Kind {
		case trace.KindCall:
			calls++
		case trace.KindSpan:
			spans++
		}
	}
	drops := res.Trace.TotalDrops()
	if handled < 10 {
		t.Fatalf("only %d signals handled", handled)
	}
	if uint64(calls+spans)+drops != uint64(made+handled) {
		t.Errorf("recorded %d calls + %d spans + %d dropped, made %d calls and %d spans",
			calls, spans, drops, made, handled)
	}
	t.Logf("%d calls, %d spans (%d recorded), %d dropped", made, handled, spans, drops)
}

// TestSignalHandlerCallsCounted: a profiling timer's handler makes a
// driver call while the program calls the driver in a loop. A handler's
// call landing inside a wrapped call goes to the driver unrecorded (the
// thread's record is being made); it used to be lost without a trace
// (432 of 442 at 20 kHz), and is now counted with its own drop reason:
// recorded + dropped = made.
func TestSignalHandlerCallsCounted(t *testing.T) {
	bins, _ := programs(t)
	t.Setenv("CUPROF_SIM_COST_SCALE", "1")
	t.Setenv("CUPROF_SIM_COSTS", "cuCtxGetCurrent=20000")
	res, out := record(t, []string{filepath.Join(bins, "sigspan"), "20000", "calls"})
	var handled, made int
	if _, err := fmt.Sscanf(out, "handled %d made %d", &handled, &made); err != nil {
		t.Fatalf("sigspan output %q", out)
	}
	if handled < 10 {
		t.Fatalf("only %d signals handled", handled)
	}
	calls := 0
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindCall {
			calls++
		}
	}
	var nested uint64
	for _, d := range res.Trace.Drops {
		if d.Reason == DropNestedCall {
			nested += d.Events
		}
	}
	if drops := res.Trace.TotalDrops(); uint64(calls)+drops != uint64(made+handled) {
		t.Errorf("recorded %d calls + %d dropped, made %d in the loop and %d in the handler", calls, drops, made, handled)
	}
	if nested == 0 {
		t.Errorf("no drop says %q, though the handler ran %d times inside 20 us calls", DropNestedCall, handled)
	}
	if res.OtherDrops[DropNestedCall] != nested {
		t.Errorf("the result counts %d nested calls by reason (%v), the trace %d", res.OtherDrops[DropNestedCall], res.OtherDrops, nested)
	}
	t.Logf("%d calls in the loop, %d in the handler, %d recorded, %d counted as %q", made, handled, calls, nested, DropNestedCall)
}

// TestSignalHandlerSpansInsideSpans: a timer's handler records a span
// every 20 us while the thread itself records spans in a loop. A handler
// landing between the loop's read of its slot and its re-entrancy guard
// used to write that slot, which the loop's span then overwrote (the chunk's
// count running ahead of its records); every span is now recorded whole or
// counted as dropped, none twice.
func TestSignalHandlerSpansInsideSpans(t *testing.T) {
	bins, _ := programs(t)
	// Until the handler has run 8000 times, however fast the loop (about
	// 3M loop spans on an idle machine, fewer when it is loaded and the
	// timer's signals come at every return to the CPU).
	const signals = 8000
	res, out := record(t, []string{filepath.Join(bins, "sigspan"), strconv.Itoa(signals), "spans"})
	var handled, made int
	if _, err := fmt.Sscanf(out, "handled %d made %d", &handled, &made); err != nil {
		t.Fatalf("sigspan spans output %q", out)
	}
	if handled < signals {
		t.Fatalf("only %d signals handled in %d loop spans", handled, made)
	}
	names := map[string]int{}
	for i := range res.Trace.Events {
		if ev := &res.Trace.Events[i]; ev.Kind == trace.KindSpan {
			names[res.Trace.String(ev.Name)]++
		}
	}
	drops := res.Trace.TotalDrops()
	if res.BadRecords != 0 {
		t.Errorf("%d torn or bogus ring records: a handler's span and the loop's wrote one slot", res.BadRecords)
	}
	if names["loop"] > made || names["tick"] > handled {
		t.Errorf("%d loop and %d tick spans recorded, more than the %d and %d made", names["loop"], names["tick"], made, handled)
	}
	if got := uint64(names["loop"]+names["tick"]) + drops; got != uint64(made+handled) {
		t.Errorf("recorded %d loop + %d tick spans + %d dropped = %d, made %d + %d (other names: %v)",
			names["loop"], names["tick"], drops, got, made, handled, names)
	}
	t.Logf("%d loop spans, %d handler spans (%d recorded), %d dropped", made, handled, names["tick"], drops)
}

func threadRun(t *testing.T, buffer uint64, w WhenFull) (made, recorded int, drops uint64, tr *trace.Trace) {
	bins, _ := programs(t)
	res, out := record(t, []string{filepath.Join(bins, "threads"), "20000"}, WithBuffer(buffer), WithWhenFull(w))
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "made %d", &made); err != nil {
		t.Fatalf("threads output %q", out)
	}
	recorded = callCounts(res.Trace)["cuCtxGetCurrent"]
	if res.Trace.Meta.WhenFull != string(w) {
		t.Errorf("Meta.WhenFull %q, want %q", res.Trace.Meta.WhenFull, w)
	}
	if res.FullWaits != res.Trace.Meta.FullWaits || int64(res.FullWait) != res.Trace.Meta.FullWaitNs {
		t.Errorf("Result waited %d times %v, the trace says %d times %d ns",
			res.FullWaits, res.FullWait, res.Trace.Meta.FullWaits, res.Trace.Meta.FullWaitNs)
	}
	return made, recorded, res.Trace.TotalDrops(), res.Trace
}

func TestSixteenThreadsEveryCallRecordedOrCounted(t *testing.T) {
	for _, w := range []WhenFull{Drop, Wait} {
		made, recorded, drops, _ := threadRun(t, DefaultBuffer, w)
		if uint64(recorded)+drops != uint64(made) {
			t.Errorf("%s: recorded %d + dropped %d != made %d", w, recorded, drops, made)
		}
		if w == Wait && drops != 0 {
			t.Errorf("wait: %d dropped", drops)
		}
		t.Logf("%s: made %d, recorded %d, dropped %d", w, made, recorded, drops)
	}
}

func TestTinyBufferReportsDrops(t *testing.T) {
	made, recorded, drops, tr := threadRun(t, 16<<10, Drop)
	if drops == 0 {
		t.Errorf("a 16 KiB buffer dropped nothing of %d calls", made)
	}
	if uint64(recorded)+drops != uint64(made) {
		t.Errorf("recorded %d + dropped %d != made %d", recorded, drops, made)
	}
	if tr.Meta.FullWaits != 0 {
		t.Errorf("drop: writers waited %d times", tr.Meta.FullWaits)
	}
	t.Logf("made %d, recorded %d, dropped %d", made, recorded, drops)
}

// TestTinyBufferWaits: with the wait policy a 16 KiB ring (a few chunks for
// 16 threads) loses nothing: writers wait for the drainer instead, and the
// trace says how often.
func TestTinyBufferWaits(t *testing.T) {
	made, recorded, drops, tr := threadRun(t, 16<<10, Wait)
	if drops != 0 || recorded != made {
		t.Errorf("made %d, recorded %d, dropped %d; want every call recorded", made, recorded, drops)
	}
	if tr.Meta.FullWaits == 0 || tr.Meta.FullWaitNs <= 0 {
		t.Errorf("a 16 KiB ring never made a writer wait (%d waits, %d ns)", tr.Meta.FullWaits, tr.Meta.FullWaitNs)
	}
	t.Logf("made %d, recorded %d, %d waits, %v", made, recorded, tr.Meta.FullWaits, time.Duration(tr.Meta.FullWaitNs))
}

// TestWaitWithoutRecorderDrops: a writer told to wait whose ring nobody
// drains (the recorder killed) waits one stall period, then drops and counts
// without waiting again, and the program finishes. The stall period is the
// compiled-in 2 s, or the program's CUPROF_STALL_MS: each thread's wait
// lasts at least that long (the shim's own count of waits and of the time
// spent in them, in the ring header), and with a short CUPROF_STALL_MS less
// than the default would have made it.
func TestWaitWithoutRecorderDrops(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     string
		threads int
		stall   time.Duration
	}{
		{"default", "", 1, 2 * time.Second},
		{"CUPROF_STALL_MS=100", "CUPROF_STALL_MS=100", 2, 100 * time.Millisecond},
		// Out of range: the default.
		{"CUPROF_STALL_MS=0", "CUPROF_STALL_MS=0", 1, 2 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			const perThread = 200000
			waits, waitNs, drops, capacity := stallRun(t, perThread, c.threads, c.env)
			made := uint64(perThread * c.threads)
			if drops < made-capacity {
				t.Errorf("dropped %d of %d calls in a ring of %d records", drops, made, capacity)
			}
			// Once per thread (a thread that gave up does not wait again
			// until the recorder polls); the main thread's cuInit may wait too.
			if waits < uint64(c.threads) || waits > uint64(c.threads)+1 {
				t.Errorf("writers waited %d times; want once each of the %d threads, then no more", waits, c.threads)
			}
			// Each thread's wait ends when nothing moved for the stall
			// period (nobody frees a chunk here): no sooner.
			if waitNs < time.Duration(c.threads)*c.stall {
				t.Errorf("%d threads waited %v in all, less than the stall period of %v each", c.threads, waitNs, c.stall)
			}
			// A shorter stall period is used: the waits end well before
			// the default's 2 s (a wait overshoots its period by one
			// sleep of at most 1 ms and the wake-up's delay).
			if c.stall < 2*time.Second && waitNs >= time.Duration(waits)*2*time.Second {
				t.Errorf("%d waits took %v: the default stall period, not %v", waits, waitNs, c.stall)
			}
			t.Logf("%d waits, %v in all; %d of %d calls dropped", waits, waitNs, drops, made)
		})
	}
}

// stallRun runs the threads program under the shim with the wait policy, a
// 16 KiB ring and no recorder (env added to its environment), and returns
// the ring header's count of waits and their time, the drops and the ring's
// capacity in records.
func stallRun(t *testing.T, perThread, threads int, env string) (waits uint64, waitNs time.Duration, drops, capacity uint64) {
	t.Helper()
	bins, sim := programs(t)
	lib, err := shim.Library(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A deadline that is a failure, not a hang: far beyond the waits.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bins, "threads"), strconv.Itoa(perThread), strconv.Itoa(threads))
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "CUPROF_DIR="+dir, "CUPROF_BUFFER=16384",
		"CUPROF_WHEN_FULL=wait", "LD_LIBRARY_PATH="+sim, "CUPROF_SIM_COST_SCALE=0")
	if env != "" {
		cmd.Env = append(cmd.Env, env)
	}
	out, err := cmd.CombinedOutput()
	if want := fmt.Sprintf("made %d", perThread*threads); err != nil || strings.TrimSpace(string(out)) != want {
		t.Fatalf("threads: %v, output %q, want %q", err, out, want)
	}
	ents, _ := os.ReadDir(dir)
	var ringPath string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".ring") {
			ringPath = filepath.Join(dir, e.Name())
		}
	}
	r, err := openRing(ringPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	h := make([]byte, hdrSize)
	if _, err := r.f.ReadAt(h, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.readThreads(le.Uint32(h[hOffNThreads:])); err != nil {
		t.Fatal(err)
	}
	if le.Uint32(h[hOffWaiters:]) != 0 || le.Uint32(h[hOffWhenFull:]) != whenFullWait {
		t.Errorf("header: waiters %d, when_full %d", le.Uint32(h[hOffWaiters:]), le.Uint32(h[hOffWhenFull:]))
	}
	capacity = uint64(r.nchunks) * uint64(r.chunkSize/recSize)
	r.stallDrops = le.Uint64(h[hOffStallDrops:])
	if d := r.totalDrops(); d != r.stallDrops {
		t.Errorf("%d drops, %d of them for the recorder gone (%q); want all", d, r.stallDrops, DropRecorderGone)
	}
	return le.Uint64(h[hOffWaits:]), time.Duration(le.Uint64(h[hOffWaitNs:])), r.totalDrops(), capacity
}

// TestThreadsBeyondSlots runs more short-lived threads than the ring has
// thread slots (CUPROF_MAX_THREADS, 4096), one after the other, each making
// one call. Every call is recorded or counted, the threads without a slot
// hand their chunk back when they exit like the others (they used to keep
// it: 1300 of them would hold all 1024 chunks of the default buffer and
// drop every later call), and the reader takes no chunk header for a
// thread slot (every thread the trace names made calls).
func TestThreadsBeyondSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 5400 threads")
	}
	bins, _ := programs(t)
	const extra = 1300
	res, out := record(t, []string{filepath.Join(bins, "manythreads"), strconv.Itoa(4096 + extra)})
	var made int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "made %d", &made); err != nil {
		t.Fatalf("manythreads output %q", out)
	}
	recorded := callCounts(res.Trace)["cuCtxGetCurrent"]
	drops := res.Trace.TotalDrops()
	if uint64(recorded)+drops != uint64(made) {
		t.Errorf("recorded %d + dropped %d != made %d", recorded, drops, made)
	}
	// A chunk kept by each thread without a slot would drop at least
	// extra-1024 calls; the drainer alone drops none unless it stalls for
	// the lifetime of a thousand threads.
	if drops >= 128 {
		t.Errorf("%d of %d calls dropped: exited threads keep their chunks", drops, made)
	}
	called := map[uint32]bool{}
	for _, ev := range res.Trace.Events {
		called[ev.TID] = true
	}
	for _, th := range res.Trace.Threads {
		if !called[th.TID] {
			t.Errorf("thread %+v made no call: read from something that is not a thread slot", th)
			break
		}
	}
	t.Logf("made %d, recorded %d, dropped %d, %d threads named", made, recorded, drops, len(res.Trace.Threads))
}

// TestManyThreadsAliveNothingLost runs 2,000 threads that stay alive
// together (a barrier before and after their calls), more than the ring has
// chunks (1,023 at the default 64 MiB, 256 at 16 MiB): each holds the chunk
// it wrote to, so the ring used to have none left and, under the default
// wait policy, the threads without one waited forever for the recorder,
// which had nothing to free (drop mode lost them as "buffer full" with the
// ring 5 % used). The ring now grows: every call is recorded in both
// policies, nothing dropped.
func TestManyThreadsAliveNothingLost(t *testing.T) {
	bins, _ := programs(t)
	for _, c := range []struct {
		name string
		opts []Option
	}{{"default", nil}, {"drop", []Option{WithWhenFull(Drop)}}, {"16M", []Option{WithBuffer(16 << 20)}}} {
		res, out := record(t, []string{filepath.Join(bins, "barrier"), "2000", "10"}, c.opts...)
		var made int
		if _, err := fmt.Sscanf(strings.TrimSpace(out), "made %d", &made); err != nil || made != 20000 {
			t.Fatalf("%s: barrier output %q", c.name, out)
		}
		recorded := callCounts(res.Trace)["cuCtxGetCurrent"]
		if drops := res.Trace.TotalDrops(); recorded != made || drops != 0 {
			t.Errorf("%s: made %d, recorded %d, dropped %d (%+v); want every call recorded", c.name, made, recorded, drops, res.Trace.Drops)
		}
	}
}

// TestWaitUnderContentionDropsNothing: 4 threads spin while 200 forked
// children make 10,000 calls each into 64 KiB rings on this machine's
// cores, so writers wait for room while the recorder gets little CPU and a
// round of polls over 200 rings takes long. Writers used to give up when
// the recorder's heartbeat had not moved for 2 s (8-52 % dropped); they
// now ask the recorder's lock, which holds for as long as it lives.
func TestWaitUnderContentionDropsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("200 forked children under 4 spinning threads: a load test, run without -short")
	}
	bins, _ := programs(t)
	res, out := record(t, []string{filepath.Join(bins, "contend"), "200", "10000"}, WithBuffer(64<<10))
	var made int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "made %d", &made); err != nil {
		t.Fatalf("contend output %q", out)
	}
	recorded := callCounts(res.Trace)["cuCtxGetCurrent"]
	if drops := res.Trace.TotalDrops(); recorded != made || drops != 0 {
		t.Errorf("made %d, recorded %d, dropped %d (%+v); want nothing dropped", made, recorded, drops, res.Trace.Drops)
	}
	if res.FullWaits == 0 {
		t.Errorf("no writer waited for room: the test does not test the wait")
	}
	t.Logf("made %d in %d processes, %d waits (%v)", made, res.Processes, res.FullWaits, res.FullWait)
}

// TestWaitThroughALongPoll makes one round of polls last longer than
// CUPROF_STALL_MS while writers wait for room (a poll hook sleeps): the
// writers go on waiting, as the recorder's lock says it lives, and nothing
// is dropped.
func TestWaitThroughALongPoll(t *testing.T) {
	bins, _ := programs(t)
	var stalled atomic.Bool
	pollHook = func(r *ring) {
		if r.waiters > 0 && !stalled.Swap(true) {
			time.Sleep(stallMs*time.Millisecond + 500*time.Millisecond)
		}
	}
	defer func() { pollHook = nil }()
	res, out := record(t, []string{filepath.Join(bins, "threads"), "20000", "4"}, WithBuffer(16<<10))
	var made int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "made %d", &made); err != nil {
		t.Fatalf("threads output %q", out)
	}
	if !stalled.Load() {
		t.Fatal("no poll found a writer waiting: the long poll was not tested")
	}
	recorded := callCounts(res.Trace)["cuCtxGetCurrent"]
	if drops := res.Trace.TotalDrops(); recorded != made || drops != 0 {
		t.Errorf("made %d, recorded %d, dropped %d (%+v); want nothing dropped", made, recorded, drops, res.Trace.Drops)
	}
}

// smallRingRun records the threads program in argv (a shell command line
// running it, the program's path in $0) and checks it ran to its end with
// every call recorded or counted, some recorded.
func smallRingRun(t *testing.T, script string) {
	t.Helper()
	bins, _ := programs(t)
	res, out := record(t, []string{"sh", "-c", script, filepath.Join(bins, "threads")})
	var made int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "made %d", &made); err != nil || res.ExitCode != 0 {
		t.Fatalf("threads: exit %d (signal %v), output %q", res.ExitCode, res.Signal, out)
	}
	recorded := callCounts(res.Trace)["cuCtxGetCurrent"]
	if recorded == 0 || uint64(recorded)+res.Trace.TotalDrops() != uint64(made) {
		t.Errorf("recorded %d + dropped %d, made %d", recorded, res.Trace.TotalDrops(), made)
	}
}

// TestRingBeyondFileSizeLimit runs a program whose RLIMIT_FSIZE (10 or 20
// MB, by the shell's unit) is below the default ring's size: growing the
// ring file there used to kill it with SIGXFSZ; the shim takes a smaller
// ring instead.
func TestRingBeyondFileSizeLimit(t *testing.T) {
	smallRingRun(t, `ulimit -f 20000 && exec "$0" 1000`)
}

// TestRingOnAFullFileSystem puts the rings on a 16 MiB tmpfs (a container's
// small /dev/shm; needs root to mount it, else skipped), less than the
// default ring: its pages used to be a SIGBUS in the program as soon as
// the file system had no room for them; the shim takes a ring that fits.
func TestRingOnAFullFileSystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m,mode=0700"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	t.Setenv("CUPROF_TMPDIR", dir)
	smallRingRun(t, `exec "$0" 1000`)
}

// pipeKiller reads the program's output and kills it once it is ready.
type pipeKiller struct {
	w    *io.PipeWriter
	done chan struct{}
	pid  int
}

func TestSIGKILLKeepsWhatWasWritten(t *testing.T) {
	bins, _ := programs(t)
	pr, pw := io.Pipe()
	k := &pipeKiller{w: pw, done: make(chan struct{})}
	go func() {
		defer close(k.done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "ready" {
				// Its calls returned: the shim has committed them to
				// the ring, which the recorder reads after the kill.
				k.pid, _ = strconv.Atoi(f[1])
				syscall.Kill(k.pid, syscall.SIGKILL)
			}
		}
	}()
	res, err := run(t, []string{filepath.Join(bins, "killme"), "5000"},
		WithSim(true), WithStdio(nil, pw, io.Discard))
	pw.Close()
	<-k.done
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != syscall.SIGKILL || res.ExitCode != 128+9 {
		t.Errorf("exit: code %d signal %v, want 137 SIGKILL", res.ExitCode, res.Signal)
	}
	if n := callCounts(res.Trace)["cuCtxGetCurrent"]; n != 5000 {
		t.Errorf("recorded %d cuCtxGetCurrent before SIGKILL, want 5000", n)
	}
}

func TestForkAndExecTracedInBothProcesses(t *testing.T) {
	bins, _ := programs(t)
	res, out := record(t, []string{filepath.Join(bins, "forkexec")})
	var parent, child, status int
	for _, line := range strings.Split(out, "\n") {
		fmt.Sscanf(line, "parent %d child %d status %d", &parent, &child, &status)
	}
	if parent == 0 || child == 0 || status != 0 {
		t.Fatalf("forkexec output %q", out)
	}
	per := map[uint32]map[string]int{}
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindCall {
			if per[ev.PID] == nil {
				per[ev.PID] = map[string]int{}
			}
			per[ev.PID][ev.API.String()]++
		}
	}
	wantParent := map[string]int{"cuInit": 1, "cuStreamCreate": 1, "cuStreamDestroy": 1}
	wantChild := map[string]int{"cuEventCreate": 1, "cuEventDestroy": 1, "cuInit": 1, "cuDeviceGetCount": 5}
	if fmt.Sprint(per[uint32(parent)]) != fmt.Sprint(wantParent) {
		t.Errorf("parent calls %v, want %v", per[uint32(parent)], wantParent)
	}
	if fmt.Sprint(per[uint32(child)]) != fmt.Sprint(wantChild) {
		t.Errorf("child calls (fork + exec) %v, want %v", per[uint32(child)], wantChild)
	}
	if len(res.Trace.Processes) != 2 {
		t.Errorf("processes %+v, want 2", res.Trace.Processes)
	}
}

func TestExitCodesPreserved(t *testing.T) {
	bins, _ := programs(t)
	for _, c := range []struct {
		arg  string
		code int
		sig  syscall.Signal
	}{{"0", 0, 0}, {"3", 3, 0}, {"-15", 128 + 15, syscall.SIGTERM}} {
		res, _ := record(t, []string{filepath.Join(bins, "exitcode"), c.arg})
		if res.ExitCode != c.code || res.Signal != c.sig {
			t.Errorf("exitcode %s: got %d/%v, want %d/%v", c.arg, res.ExitCode, res.Signal, c.code, c.sig)
		}
	}
}

// TestSymbolsOfAProcessGoneBeforeAPoll records a program that makes its
// driver call and is killed (no exit hook runs, as for a Go program's
// os.Exit) before the recorder's first poll, so the recorder never reads
// its /proc/PID/maps: the mappings the shim saved when the ring opened
// still symbolize its call site.
func TestSymbolsOfAProcessGoneBeforeAPoll(t *testing.T) {
	bins, _ := programs(t)
	prog := filepath.Join(bins, "exitcode")
	res, _ := record(t, []string{prog, "-9"}, WithPollInterval(time.Hour))
	if res.Signal != syscall.SIGKILL {
		t.Fatalf("exit %d/%v, want SIGKILL", res.ExitCode, res.Signal)
	}
	calls := 0
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindCall && ev.API == trace.APIInit {
			calls++
		}
	}
	mapped := false
	for _, m := range res.Trace.Mappings {
		mapped = mapped || m.File == prog
	}
	named := false
	for _, s := range res.Trace.Symbols {
		named = named || s.Name == "main"
	}
	if calls != 1 || !mapped || !named {
		t.Errorf("%d cuInit calls (want 1), the program mapped %v, its call site named main %v: mappings %+v, symbols %+v",
			calls, mapped, named, res.Trace.Mappings, res.Trace.Symbols)
	}
}

func TestNVTXInjection(t *testing.T) {
	bins, _ := programs(t)
	res, out := record(t, []string{filepath.Join(bins, "nvtxclient")})
	if strings.TrimSpace(out) != "ok" {
		t.Fatalf("nvtxclient: %q", out)
	}
	tr := res.Trace
	var got []string
	for _, ev := range tr.Events {
		s := ev.Kind.String()
		if n := tr.String(ev.Name); n != "" {
			s += " " + n
		}
		if d := tr.String(ev.Domain); d != "" {
			s += " @" + d
		}
		if ev.Kind == trace.KindObjectName {
			s += fmt.Sprintf(" %v=%#x", ev.Object, ev.Handle)
		}
		got = append(got, s)
	}
	want := []string{
		"push outer", "mark checkpoint", "start load", "end", "push attributed", "push wideé", "pop", "pop",
		"push registered @mydomain", "pop @mydomain", "pop",
		"name compute stream=0x1234", "name done event=0x99", "name gpu0 device=0x0",
		"span Stream.Create @cudawrap",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("NVTX events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var startID, endID uint64
	for _, ev := range tr.Events {
		switch ev.Kind {
		case trace.KindRangeStart:
			startID = ev.ID
		case trace.KindRangeEnd:
			endID = ev.ID
		}
	}
	if startID == 0 || startID != endID {
		t.Errorf("start/end ids %d/%d", startID, endID)
	}
}

func TestMissingCommand(t *testing.T) {
	if _, err := Run(context.Background(), nil); err != ErrNoCommand {
		t.Errorf("Run(nil) = %v, want ErrNoCommand", err)
	}
	if _, err := Run(context.Background(), []string{"true"}); err != ErrNoOutput {
		t.Errorf("Run without output = %v, want ErrNoOutput", err)
	}
}

type countingObserver struct{ n int }

func (o *countingObserver) Observe(pid uint32, events []trace.Event, strs []string) {
	o.n += len(events)
}

var _ Observer = (*countingObserver)(nil)

func TestObserverSeesEveryEvent(t *testing.T) {
	bins, _ := programs(t)
	o := &countingObserver{}
	res, _ := record(t, []string{filepath.Join(bins, "threads"), "2000"}, WithObserver(o))
	if o.n != len(res.Trace.Events) {
		t.Errorf("observer saw %d events, trace has %d", o.n, len(res.Trace.Events))
	}
}

func TestEndOnlyTiming(t *testing.T) {
	bins, _ := programs(t)
	res, _ := record(t, []string{filepath.Join(bins, "threads"), "1000"}, WithEndOnlyTiming(true))
	n := 0
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindCall {
			n++
			if ev.Start != ev.End {
				t.Fatalf("end-only timing recorded a duration: %+v", ev)
			}
		}
	}
	if uint64(n)+res.Trace.TotalDrops() != 16*1000+1 {
		t.Errorf("recorded %d calls + %d dropped, made %d", n, res.Trace.TotalDrops(), 16*1000+1)
	}
}

func TestSignalsForwarded(t *testing.T) {
	bins, _ := programs(t)
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				// To cuprof itself (this process): it must reach the program.
				syscall.Kill(os.Getpid(), syscall.SIGTERM)
			}
		}
	}()
	res, err := run(t, []string{filepath.Join(bins, "killme"), "10"},
		WithSim(true), WithStdio(nil, pw, io.Discard))
	pw.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != syscall.SIGTERM || res.ExitCode != 128+15 {
		t.Errorf("exit: code %d signal %v, want 143 SIGTERM", res.ExitCode, res.Signal)
	}
}

// TestMemoryBoundedByBufferNotEvents records about a million calls and
// checks that the recorder never holds them all: the final pass buffers at
// most maxBuffered events, and the heap stays far below the ~390 bytes per
// event an in-memory trace would take.
func TestMemoryBoundedByBufferNotEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("records a million calls")
	}
	bins, _ := programs(t)
	const perThread = 64000 // 16 threads
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	var outb bytes.Buffer
	path := filepath.Join(t.TempDir(), "big.cuprof")
	res, err := Run(context.Background(), []string{filepath.Join(bins, "threads"), strconv.Itoa(perThread)},
		WithSim(true), WithStdio(nil, &outb, &outb), WithOutput(path))
	close(stop)
	<-sampled
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, outb.String())
	}
	tr, err := trace.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkWritten(t, path, res, tr)
	var made int
	if _, err := fmt.Sscanf(strings.TrimSpace(outb.String()), "made %d", &made); err != nil {
		t.Fatalf("threads output %q", outb.String())
	}
	recorded := callCounts(tr)["cuCtxGetCurrent"]
	if uint64(recorded)+tr.TotalDrops() != uint64(made) {
		t.Errorf("recorded %d + dropped %d != made %d", recorded, tr.TotalDrops(), made)
	}
	if res.peakBuffered > maxBuffered || res.peakBuffered == 0 {
		t.Errorf("the final pass held up to %d events, want 1..%d", res.peakBuffered, maxBuffered)
	}
	// Each thread's batches follow each other in time, so the reader merges
	// threads without sorting.
	if res.outOfOrder != 0 {
		t.Errorf("%d batches went back in time in their thread", res.outOfOrder)
	}
	// Kept in memory, the events alone would take ~390 MB.
	if p := peak.Load(); p > 64<<20 {
		t.Errorf("heap in use peaked at %d MiB while recording %d events", p>>20, res.Events)
	}
	t.Logf("%d events; final pass held at most %d; heap in use peaked at %d MiB", res.Events, res.peakBuffered, peak.Load()>>20)
}

// TestFailedWriteLeavesNothing records into a path that cannot be written
// (a directory, a missing directory): Run refuses it before the program
// runs and leaves neither spill files nor a temporary trace beside it.
func TestFailedWriteLeavesNothing(t *testing.T) {
	bins, _ := programs(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "taken")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), []string{filepath.Join(bins, "threads"), "100"}, WithSim(true), WithOutput(out))
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Run into a directory: %v, want a write error", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "taken" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("left beside the output: %v", names)
	}
	_, err = Run(context.Background(), []string{filepath.Join(bins, "threads"), "100"}, WithSim(true),
		WithOutput(filepath.Join(dir, "missing", "x.cuprof")))
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Run into a missing directory: %v, want a missing directory error", err)
	}
}

// TestSIGINTForwardedWithStdinFromDevNull: SIGINT sent to cuprof reaches
// the program when standard input is /dev/null (a character device, which
// used to count as a terminal: the signal was swallowed and the program ran
// to its end).
func TestSIGINTForwardedWithStdinFromDevNull(t *testing.T) {
	if inTerminalForeground() {
		t.Skip("in a terminal's foreground group: the terminal, not cuprof, signals the program")
	}
	bins, _ := programs(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				syscall.Kill(os.Getpid(), syscall.SIGINT)
			}
		}
	}()
	res, err := run(t, []string{filepath.Join(bins, "killme"), "10"},
		WithSim(true), WithStdio(null, pw, io.Discard))
	pw.Close()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal != syscall.SIGINT || res.ExitCode != 128+2 {
		t.Errorf("exit: code %d signal %v, want 130 SIGINT", res.ExitCode, res.Signal)
	}
}

// TestInPlaceOneCallIn64 checks the wrapper's cost measured in place
// (inplace.c): each of the 16 threads makes 20,000 calls of a hot wrapper
// and nothing else, and a shadow call is measured at one recorded call in
// 64, alternately before and after it (the first call's, which has no
// chunk yet, moves to the second: 313 a thread; a chunk claim that falls
// on one moves it by a call and may cost the thread its last, a shadow
// over the cap, a preemption, is left out), each thread's sums reaching the
// ring's header at its exit (without that, 9 of each thread's 313 would be
// missing); the calibration is corrected by their means.
func TestInPlaceOneCallIn64(t *testing.T) {
	_, _, _, tr := threadRun(t, DefaultBuffer, Drop)
	o := tr.Meta.Overhead
	if lo, hi := int64(16*311), int64(16*313); o.InPlaceCalls < lo || o.InPlaceCalls > hi {
		t.Errorf("InPlaceCalls = %d, want %d-%d (16 threads x 313, less a call for a chunk claim or a preemption)", o.InPlaceCalls, lo, hi)
	}
	if math.IsNaN(o.InPlaceNs) || math.Abs(o.InPlaceNs) > 1000 {
		t.Errorf("InPlaceNs = %v, want a measured correction under a microsecond", o.InPlaceNs)
	}
	if o.AddedNs < o.InsideNs || o.AddedNs <= 0 {
		t.Errorf("AddedNs = %v, InsideNs = %v", o.AddedNs, o.InsideNs)
	}
	t.Logf("in place: %+v", o)
}

// shadowSchedule is how many shadow calls inplace.c takes in a thread's
// recorded calls [from, to) (counted from 0), and what they count for in
// all, in shadows of 1 in 64: the first shadow at call 1 (call 0 has no
// chunk yet), then one every 64 << level calls, each counting 1 << level,
// the level rising by one after every 64 shadows up to 4
// (CUPROF_SAMPLE_EVERY, _PER_LEVEL and _LEVELS in shim_internal.h).
func shadowSchedule(from, to int) (shadows, weight int) {
	taken, level := 0, 0
	for at := 1; at < to; at += 64 << level {
		if at >= from {
			shadows++
			weight += 1 << level
		}
		taken++
		if level < 4 && taken%64 == 0 {
			level++
		}
	}
	return shadows, weight
}

// TestInPlaceRateFalls checks that a long-running thread takes fewer
// shadow calls as it goes (the interval doubling up to 1 in 1024), and that
// each counts for the calls it stands for. The shadows are counted by their
// clock reads: on the monotonic clock every read is a clock_gettime, which
// the shadows program defines, and a shadow reads the clock four times, a
// recorded call twice. The program makes 2 x 200,000 calls (and cuInit,
// the thread's first) and counts the second half's reads: a constant 1 in
// 64 would take 3,125 shadows there, the schedule takes 195.
func TestInPlaceRateFalls(t *testing.T) {
	bins, _ := programs(t)
	t.Setenv("CUPROF_CLOCK", "monotonic")
	const n = 200000
	res, out := record(t, []string{filepath.Join(bins, "shadows"), strconv.Itoa(n)})
	var calls, reads int
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "calls %d reads %d", &calls, &reads); err != nil || calls != n {
		t.Fatalf("shadows output %q", out)
	}
	// Besides the calls' and the shadows' reads, a few at chunk claims;
	// the schedule counts from cuInit, the thread's first recorded call.
	shadows := (reads - 2*n) / 4
	want, _ := shadowSchedule(1+n, 1+2*n)
	if shadows < want-2 || shadows > want+4 {
		t.Errorf("%d shadow calls in %d recorded calls (%d clock reads), want %d (1 in 64, doubling after every 64 up to 1 in 1024; a constant 1 in 64 takes %d)",
			shadows, n, reads, want, n/64)
	}
	// Counted for the calls they stand for: about one per 64 calls whatever
	// the rate; a shadow over its cap (a preemption) or without room in its
	// chunk is left out, with what it counts for (16 at the end).
	_, weight := shadowSchedule(0, 1+2*n)
	if got := int(res.Trace.Meta.Overhead.InPlaceCalls); got < weight-48 || got > weight {
		t.Errorf("InPlaceCalls = %d, want %d less at most three shadows' 16: each shadow counts the calls it stands for", got, weight)
	}
	t.Logf("%d shadows in the second %d calls (schedule %d); InPlaceCalls %d of %d", shadows, n, want, res.Trace.Meta.Overhead.InPlaceCalls, weight)
}
