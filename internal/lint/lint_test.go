package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

var update = golden.NewFlag("update", "rewrite the golden files in testdata")

func readFixture(t testing.TB, name string) *trace.Trace {
	t.Helper()
	if build, ok := builtFixtures[name]; ok {
		return build()
	}
	return tracetest.ReadText(t, filepath.Join("testdata", name+".txt"))
}

// builtFixtures are made in Go: the text form has no Python frames.
var builtFixtures = map[string]func() *trace.Trace{
	"python_wrapper": func() *trace.Trace { return tracetest.PythonWrapper(5) },
}

// ruleFixtures names each rule's fixture and how many findings it gives there.
var ruleFixtures = map[string]struct {
	fixture  string
	findings int
}{
	"pool-trim":             {"pool_trim", 1},
	"stream-churn":          {"stream_churn", 1},
	"event-churn":           {"event_churn", 1},
	"alloc-churn":           {"alloc_churn", 1},
	"redundant-set-current": {"redundant_set_current", 2},
	"sync-in-loop":          {"sync_in_loop", 1},
	"sync-idle":             {"sync_idle", 1},
	"error-check":           {"error_check", 2},
	"leak":                  {"leak", 5},
	"wrapper-overhead":      {"python_wrapper", 1},
	"graph-reinstantiate":   {"graph_reinstantiate", 1},
	"cached-query":          {"cached_query", 2},
	"vmm-churn":             {"vmm_churn", 1},
	"get-device-storm":      {"get_device_storm", 1},
}

// cleanFixtures give no findings at all.
var cleanFixtures = []string{"clean", "pool_trim_fixed", "graph_updated"}

func TestEveryRuleHasAFixture(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules {
		if seen[r.ID()] {
			t.Errorf("rule id %q registered twice", r.ID())
		}
		seen[r.ID()] = true
		if _, ok := ruleFixtures[r.ID()]; !ok {
			t.Errorf("rule %q has no fixture", r.ID())
		}
		if r.Doc() == "" {
			t.Errorf("rule %q has no doc", r.ID())
		}
	}
	if len(seen) != len(ruleFixtures) {
		t.Errorf("%d rules registered, %d fixtures", len(seen), len(ruleFixtures))
	}
}

// Each rule fires on its fixture, and only it does there: the fixtures are
// clean apart from the pattern they show.
func TestRulesFireOnTheirFixtures(t *testing.T) {
	for id, fx := range ruleFixtures {
		t.Run(id, func(t *testing.T) {
			fs := Run(readFixture(t, fx.fixture))
			if len(fs) != fx.findings {
				t.Errorf("%d findings, want %d: %+v", len(fs), fx.findings, fs)
			}
			for _, f := range fs {
				if f.Rule != id {
					t.Errorf("rule %s fired on %s's fixture: %s", f.Rule, id, f.Message)
				}
				if f.Count <= 0 || f.Fix == "" || f.Message == "" || f.Example.API == "" || f.Where.PID == 0 {
					t.Errorf("incomplete finding: %+v", f)
				}
			}
		})
	}
}

func TestSilentOnCleanFixtures(t *testing.T) {
	for _, name := range cleanFixtures {
		for _, r := range Rules {
			if fs := runRules(readFixture(t, name), r); len(fs) != 0 {
				t.Errorf("%s fired on %s: %+v", r.ID(), name, fs)
			}
		}
	}
}

func TestPoolTrimNumbers(t *testing.T) {
	fs := Run(readFixture(t, "pool_trim"))
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	f := fs[0]
	// six synchronizes of 100000+1000i ns, less 12 ns inside cost and the
	// idle median (two idle cuCtxSynchronize of 400 and 380 ns: 368 ns)
	want := int64(0)
	for i := int64(0); i < 6; i++ {
		want += 100000 + 1000*i - 12 - 368
	}
	if f.Severity != Error || f.Count != 6 || f.CostNs != want {
		t.Errorf("severity %s count %d cost %d, want error 6 %d", f.Severity, f.Count, f.CostNs, want)
	}
	if f.Example.API != "cuStreamSynchronize" || f.Example.DurationNs != 105000-12 {
		t.Errorf("example %+v, want the slowest synchronize", f.Example)
	}
	if f.Where.Range != "step" || f.Where.Function != "step" || f.Where.Caller != "0x401070" || f.Where.Thread != "python3" {
		t.Errorf("where %+v", f.Where)
	}
	if !strings.Contains(f.Fix, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD") || !strings.Contains(f.Fix, "UINT64_MAX") {
		t.Errorf("fix %q", f.Fix)
	}
}

// runRules runs only rules on t.
func runRules(t *trace.Trace, rules ...Rule) []Finding {
	return run(t, func() iter.Seq[*trace.Event] { return analysis.Events(t) }, rules)
}

// syncLog is a rule that records what the rules are told of synchronizes.
type syncLog struct {
	f    *Facts
	idle []bool
}

func (l *syncLog) ID() string                         { return "sync-log" }
func (l *syncLog) Doc() string                        { return "records the synchronizes" }
func (l *syncLog) Check(f *Facts) Check               { l.f = f; return l }
func (l *syncLog) ObjectEnd(*analysis.Object, *Event) {}
func (l *syncLog) Findings() []Finding                { return nil }
func (l *syncLog) Event(e *Event) {
	if e.Sync != nil {
		l.idle = append(l.idle, e.Sync.Idle)
	}
}

func TestIdleSyncs(t *testing.T) {
	l := &syncLog{}
	runRules(readFixture(t, "sync_idle"), l)
	if fmt.Sprint(l.idle) != "[false true true true true]" {
		t.Errorf("idle flags %v", l.idle)
	}
	if f := l.f; !f.IdleMeasured || f.IdleSyncNs != 400-12+10 {
		t.Errorf("idle median %d (measured %v)", f.IdleSyncNs, f.IdleMeasured)
	}
}

func TestSeverity(t *testing.T) {
	for _, s := range []Severity{Info, Warning, Error} {
		got, err := ParseSeverity(s.String())
		if err != nil || got != s {
			t.Errorf("%v: %v %v", s, got, err)
		}
	}
	if _, err := ParseSeverity("fatal"); err == nil {
		t.Error("fatal parsed")
	}
	fs := []Finding{{Severity: Warning}}
	if !AtLeast(fs, Info) || !AtLeast(fs, Warning) || AtLeast(fs, Error) || AtLeast(nil, Info) {
		t.Error("AtLeast")
	}
}

func TestGolden(t *testing.T) {
	names, _ := filepath.Glob("testdata/*.txt")
	for built := range builtFixtures {
		names = append(names, built+".txt")
	}
	for _, n := range names {
		name := strings.TrimSuffix(filepath.Base(n), ".txt")
		if strings.HasSuffix(name, ".golden") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			fs := Run(readFixture(t, name))
			var txt, js bytes.Buffer
			if err := WriteText(&txt, fs); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, fs); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, name+".golden.txt", txt.Bytes())
			checkGolden(t, name+".golden.json", js.Bytes())
			var doc document
			if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Findings) != len(fs) || doc.Summary.Findings != len(fs) {
				t.Errorf("JSON round trip: %d findings, want %d", len(doc.Findings), len(fs))
			}
		})
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	update.Check(t, filepath.Join("testdata", name), got)
}

// Traces recorded by cuprof record --sim from testdata/sim/prog.c: the
// threshold-0, stream-per-call loops get pool-trim (at the synchronizes, or
// at the stream destroys when there are none) and stream-churn; the fixed
// loop gets nothing.
func TestRecordedSimTraces(t *testing.T) {
	for _, c := range []struct {
		fixture string
		trimAPI string
	}{{"sim_threshold0", "cuStreamSynchronize"}, {"sim_stream_destroy", "cuStreamDestroy"}} {
		got := map[string]int{}
		for _, f := range Run(readFixture(t, c.fixture)) {
			got[f.Rule] += f.Count
			if f.Rule == "pool-trim" && (f.Example.API != c.trimAPI || !strings.Contains(f.Message, "allocations after them")) {
				t.Errorf("%s: pool-trim %+v", c.fixture, f)
			}
		}
		if len(got) != 2 || got["pool-trim"] != 50 || got["stream-churn"] < 45 {
			t.Errorf("%s: findings %v, want pool-trim 50 times and stream-churn", c.fixture, got)
		}
	}
	if fs := Run(readFixture(t, "sim_fixed")); len(fs) != 0 {
		t.Errorf("fixed loop: %+v", fs)
	}
}

// Lowering a pool's release threshold to 0 while it caches freed memory makes
// the next synchronize trim it, though that synchronize waits on no work.
func TestPoolTrimLowered(t *testing.T) {
	fs := Run(readFixture(t, "pool_trim_lowered"))
	if len(fs) != 1 || fs[0].Rule != "pool-trim" || fs[0].Count != 1 ||
		fs[0].CostNs != 100000-12-(380-12) ||
		!strings.Contains(fs[0].Message, "after 1 lowering of the release threshold of the default pool of device 0 to 0 took") {
		t.Errorf("findings: %+v", fs)
	}
}

// examples/tempbuffer recorded with the simulated driver: its variants run in
// cudawrap spans named after them, so each finding says which variant it is
// about. The threshold-0 variants get pool-trim, the stream-per-call
// (tempbuffer) variants stream-churn, and the fixed variants (direct
// allocation on a long-lived stream at threshold max) nothing.
func TestRecordedTempBuffer(t *testing.T) {
	fs := Run(readFixture(t, "sim_tempbuffer"))
	byVariant := map[string]map[string]bool{}
	for _, f := range fs {
		variant, _, _ := strings.Cut(f.Where.Range, "/")
		if byVariant[variant] == nil {
			byVariant[variant] = map[string]bool{}
		}
		byVariant[variant][f.Rule] = true
	}
	const tb, direct = "tempbuffer (set+stream+alloc+destroy) ", "direct alloc on a stream "
	want := map[string][]string{
		tb + "thr=max":           {"redundant-set-current", "stream-churn"},
		tb + "thr=max +sync":     {"redundant-set-current", "stream-churn"},
		tb + "thr=0":             {"pool-trim", "redundant-set-current", "stream-churn"},
		tb + "thr=0 +sync":       {"pool-trim", "redundant-set-current", "stream-churn"},
		direct + "thr=max":       nil,
		direct + "thr=max +sync": nil,
		direct + "thr=0":         nil, // its frees are trimmed by the synchronize after the variant
		direct + "thr=0 +sync":   {"pool-trim"},
	}
	for variant, rules := range want {
		var got []string
		for r := range byVariant[variant] {
			got = append(got, r)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(rules, ",") {
			t.Errorf("%q: rules %v, want %v", variant, got, rules)
		}
	}
}

// TestWrapperOverhead: the heavy wrapper's own time (460 ns self, 1.9 us in
// the options, finalize and error-check frames) against its 1.19 us in
// cuStreamCreate, with what to look at; the lean wrapper, close() and the
// ctypes frames cost less than their driver calls and are not reported.
func TestWrapperOverhead(t *testing.T) {
	fs := runRules(tracetest.PythonWrapper(5), wrapperOverhead{})
	if len(fs) != 1 {
		t.Fatalf("findings: %+v", fs)
	}
	f := fs[0]
	for _, want := range []string{"Stream.__init__ takes 2.36 us per call of its own (self 460 ns, plus 1.9 us in frames",
		"1.19 us per call of the driver calls", "5 calls"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	if !strings.Contains(f.Fix, "finalize.__init__ (800 ns per call), StreamOptions.__init__ (600 ns per call), handle_return (500 ns per call)") ||
		!strings.Contains(f.Fix, "weakref.finalize") {
		t.Errorf("fix: %s", f.Fix)
	}
	if f.Count != 5 || f.CostNs != 5*2360 || f.Example.API != "cuStreamCreate" ||
		f.Where.Python != "main > Stream.__init__ > CFuncPtr cuStreamCreate" {
		t.Errorf("finding: %+v", f)
	}
}

// TestDoesNotModifyTrace: lint reads devices from the analysis; the trace's
// events stay as recorded.
func TestDoesNotModifyTrace(t *testing.T) {
	tr := readFixture(t, "sim_threshold0")
	before := append([]trace.Event(nil), tr.Events...)
	Run(tr)
	for i := range before {
		if tr.Events[i] != before[i] {
			t.Fatalf("event %d changed: %+v, was %+v", i, tr.Events[i], before[i])
		}
	}
}
