package lint

import (
	"bytes"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// findingsJSON is fs as WriteJSON writes it: what two runs must agree on.
func findingsJSON(t testing.TB, fs []Finding) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, fs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkOnePass lints tables and replay once as lint does and once with the
// rules replayed again, every baseline known: the findings are the same, and
// the trace was read three times where a call trimmed a pool (a pool-trim
// finding), else once (twice where the first pass guessed a trim wrongly).
// It returns the number of reads.
func checkOnePass(t *testing.T, name string, tables *trace.Trace, replay func() iter.Seq[*trace.Event]) int {
	t.Helper()
	reads := 0
	counted := func() iter.Seq[*trace.Event] { reads++; return replay() }
	got := runPasses(tables, counted, Rules, false)
	first := reads
	want := runPasses(tables, replay, Rules, true)
	if g, w := findingsJSON(t, got), findingsJSON(t, want); g != w {
		t.Errorf("%s: one pass found\n%s\nthe rules replayed with the baselines known found\n%s", name, g, w)
	}
	trimmed := false
	for _, fd := range got {
		trimmed = trimmed || fd.Rule == "pool-trim"
	}
	if (trimmed && first != 3) || (!trimmed && first != 1 && first != 2) {
		t.Errorf("%s: read %d times, a pool trimmed: %v", name, first, trimmed)
	}
	return first
}

// TestOnePassFindsWhatThreeDo: on every fixture and on the mix of every
// pattern, lint's first pass finds what the rules replayed with the
// baselines known find, and only a trace where a pool was trimmed is read
// again. Both kinds of trace are among them.
func TestOnePassFindsWhatThreeDo(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	names := []string{"python_wrapper"}
	for _, p := range paths {
		if !strings.HasSuffix(p, ".golden.txt") {
			names = append(names, strings.TrimSuffix(filepath.Base(p), ".txt"))
		}
	}
	byReads := map[int]int{}
	for _, name := range names {
		tr := readFixture(t, name)
		byReads[checkOnePass(t, name, tr, func() iter.Seq[*trace.Event] { return analysis.Events(tr) })]++
	}
	tables, replay := mixEvents(20_000)
	byReads[checkOnePass(t, "mix", tables, replay)]++
	if byReads[1] == 0 || byReads[3] == 0 || byReads[2] != 0 {
		t.Errorf("traces by reads %v: want some read once and some three times, none twice", byReads)
	}
}

// poolTrace is a trace of one stream: an idle cuCtxSynchronize of each of
// idleNs, then steps of an allocation, a launch, a free into the default pool
// (release threshold 0) and a cuStreamSynchronize of syncNs, each such
// synchronize a trim candidate; then the stream's destroy.
func poolTrace(t *testing.T, idleNs []int64, steps int, syncNs int64) *trace.Trace {
	t.Helper()
	var b strings.Builder
	b.WriteString(`cuprof-text 1
meta host=node1 capture=sim driver=13000 cuprof=0.1.0 inside_ns=12 added_ns=28
gpu ordinal=0 name="NVIDIA H200" uuid=GPU-0
process pid=100 ppid=1 exe=/usr/bin/python3 cmd="python3 app.py" start=0 exit=0
thread pid=100 tid=100 name=python3
call 100/100 t=1000 end=1500 api=cuInit
call 100/100 t=1600 end=51600 api=cuDevicePrimaryCtxRetain handle=0xc0 dev=0
call 100/100 t=51700 end=51730 api=cuCtxSetCurrent handle=0xc0
call 100/100 t=51830 end=56830 api=cuStreamCreate handle=0x10 caller=0x401010
`)
	at := int64(60_000)
	call := func(d int64, rest string) {
		fmt.Fprintf(&b, "call 100/100 t=%d end=%d %s\n", at, at+d, rest)
		at += d + 100
	}
	idle := func(d int64) { call(d, "api=cuCtxSynchronize caller=0x402010") }
	if len(idleNs) > 0 {
		idle(idleNs[0])
	}
	for range steps {
		call(1500, "api=cuMemAllocAsync handle=0x7f0000 stream=0x10 size=10 caller=0x401040")
		call(2500, "api=cuLaunchKernel handle=0xf0 stream=0x10 caller=0x401050")
		call(600, "api=cuMemFreeAsync handle=0x7f0000 stream=0x10 caller=0x401060")
		call(syncNs, "api=cuStreamSynchronize handle=0x10 stream=0x10 caller=0x401070")
	}
	for _, d := range idleNs[min(1, len(idleNs)):] {
		idle(d)
	}
	call(2000, "api=cuStreamDestroy handle=0x10 caller=0x401080")
	tr, err := trace.ReadText(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// firstPassOf replays tr's first pass with no rules.
func firstPassOf(tr *trace.Trace) *replayer {
	return newFacts(tr).replay(analysis.Events(tr), firstPass, nil)
}

// TestFirstPassTakesNoTrimPoint: synchronizes after frees into a pool of
// release threshold 0 that take 6 us, where the idle one takes 1 us, are trim
// candidates but not slow (10 times the baseline is 10 us). Nothing is
// found, in one read; had the first pass judged them before the baseline
// was known (against 0), each would have been a trim point.
func TestFirstPassTakesNoTrimPoint(t *testing.T) {
	tr := poolTrace(t, []int64{1000}, 8, 6000)
	r := firstPassOf(tr)
	if !slow(r.slowestSync, 0) || slow(r.slowestSync, median(r.idle)) || r.idle.Count() != 1 {
		t.Errorf("slowest candidate %d ns, %d idle synchronizes (median %d ns): want one idle and a candidate slow against 0, not against it (the trace tests nothing)",
			r.slowestSync, r.idle.Count(), median(r.idle))
	}
	if reads := checkOnePass(t, "mild", tr, func() iter.Seq[*trace.Event] { return analysis.Events(tr) }); reads != 1 {
		t.Errorf("read %d times, want once", reads)
	}
	if fs := Run(tr); len(fs) != 0 {
		t.Errorf("findings %v, want none", fs)
	}
}

// TestFirstPassWrongGuess: the candidates (8 us) look slow against the one
// idle synchronize before them (0.4 us), so the first pass drops its checks;
// the idle synchronizes after them (1 us each) make the baseline 1 us, against
// which 8 us is not slow. The rules run in a second read and find the same
// as they do with every baseline known.
func TestFirstPassWrongGuess(t *testing.T) {
	idle := []int64{400}
	for range 9 {
		idle = append(idle, 1000)
	}
	tr := poolTrace(t, idle, 4, 8000)
	r := firstPassOf(tr)
	if !r.dropped || slow(r.slowestSync, median(r.idle)) {
		t.Errorf("dropped %v, slowest candidate %d ns against a median %d ns: want a wrong guess (the trace tests nothing)",
			r.dropped, r.slowestSync, median(r.idle))
	}
	if reads := checkOnePass(t, "wrong guess", tr, func() iter.Seq[*trace.Event] { return analysis.Events(tr) }); reads != 2 {
		t.Errorf("read %d times, want twice", reads)
	}
}

// TestFirstPassGuessesTrims: on the fixtures where a pool was trimmed, the
// first pass drops its checks at the first slow candidate.
func TestFirstPassGuessesTrims(t *testing.T) {
	for _, name := range []string{"pool_trim", "pool_trim_lowered"} {
		tr := readFixture(t, name)
		if r := firstPassOf(tr); !r.dropped {
			t.Errorf("%s: the first pass kept its checks", name)
		}
	}
}
