package analysis_test

// The cross-consumer test: over every fixture trace of the repository and
// generated ones, each output (report, lint, flame, ...) must say what the
// analysis says about objects created, ended (and how), alive at the end,
// each lifetime, each range's path and each call's device and enclosing
// ranges. Each consumer is one entry of consumers; to add an exporter as it
// is migrated, add a check that reads its output back and compares it with
// the resolved facts.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// facts is what the analysis resolved for a trace, per event and per
// object, as the consumers are checked against it.
type facts struct {
	a       *analysis.Analysis
	device  []int32  // per event
	path    []string // per event: enclosing ranges
	python  []string // per event: Python stack, " > "-joined
	dur     []int64  // per event: call duration, cost taken out
	isError []bool
}

func resolve(t *trace.Trace) *facts {
	n := len(t.Events)
	f := &facts{device: make([]int32, n), path: make([]string, n), python: make([]string, n), dur: make([]int64, n),
		isError: make([]bool, n)}
	var a *analysis.Analysis
	paths := make([]analysis.PathID, n)
	stacks := make([]analysis.FrameID, n)
	a = analysis.Of(t, analysis.OnEvent(func(e *analysis.Event) {
		f.device[e.Index], f.dur[e.Index], f.isError[e.Index] = e.Device, e.Duration, e.Error
		paths[e.Index], stacks[e.Index] = e.Path, e.Frame
	}))
	for i := range t.Events {
		f.path[i] = a.PathString(paths[i])
		var names []string
		for _, c := range a.FrameStack(stacks[i]) {
			names = append(names, analysis.CodeName(t, c))
		}
		f.python[i] = strings.Join(names, " > ")
	}
	f.a = a
	return f
}

// consumer is one output checked against the analysis. check gets its own
// copy of the trace.
type consumer struct {
	name  string
	check func(t *testing.T, tr *trace.Trace, want *facts)
}

var consumers = []consumer{
	{"report", checkReport},
	{"lint", checkLint},
	{"flame/api", checkFlameAPI},
	{"flame/lifetime", checkFlameLifetime},
}

// fixture is a trace to check, built fresh for each consumer.
type fixture struct {
	name  string
	build func(t *testing.T) *trace.Trace
}

// fixtures lists the 7-event disagreement trace first, then every text trace of
// the consumers' testdata, the built ones and random traces.
func fixtures(t *testing.T) []fixture {
	fs := []fixture{{"disagreement", func(t *testing.T) *trace.Trace {
		return tracetest.ReadText(t, "testdata/disagreement.txt")
	}}}
	var paths []string
	for _, dir := range []string{"testdata", "../internal/report/testdata", "../internal/lint/testdata",
		"../flame/testdata", "../exporters/otlp/testdata", "../exporters/perfetto/testdata"} {
		ms, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
		paths = append(paths, ms...)
	}
	for _, p := range paths {
		if strings.Contains(filepath.Base(p), ".golden") || strings.HasSuffix(p, "disagreement.txt") {
			continue
		}
		if data, err := os.ReadFile(p); err != nil || !strings.HasPrefix(string(data), trace.TextHeader) {
			continue // not a trace (e.g. a text golden)
		}
		fs = append(fs, fixture{p, func(t *testing.T) *trace.Trace { return tracetest.ReadText(t, p) }})
	}
	fs = append(fs,
		fixture{"PythonWrapper", func(*testing.T) *trace.Trace { return tracetest.PythonWrapper(5) }},
		fixture{"PythonTrace", func(*testing.T) *trace.Trace { return tracetest.PythonTrace() }},
		fixture{"LoopTrace", func(*testing.T) *trace.Trace { return tracetest.LoopTrace(30) }},
	)
	for seed := uint64(1); seed <= 8; seed++ {
		fs = append(fs, fixture{fmt.Sprintf("random-%d", seed), func(*testing.T) *trace.Trace {
			return tracetest.Random(seed, 1500)
		}})
	}
	return fs
}

func TestConsumersAgree(t *testing.T) {
	fs := fixtures(t)
	if len(fs) < 40 {
		t.Fatalf("only %d fixtures found", len(fs))
	}
	for _, fx := range fs {
		t.Run(strings.TrimPrefix(fx.name, "../"), func(t *testing.T) {
			want := resolve(fx.build(t))
			for _, c := range consumers {
				t.Run(c.name, func(t *testing.T) {
					tr := fx.build(t)
					before := slices.Clone(tr.Events)
					c.check(t, tr, want)
					if !slices.Equal(before, tr.Events) {
						t.Errorf("%s modified the trace's events", c.name)
					}
				})
			}
		})
	}
}

// TestDisagreementCase pins what every consumer must say about the disagreement
// 7-event trace: two contexts, the stream ended with its context (not a
// leak), the managed allocation freed by cuMemFree after 300 ns.
func TestDisagreementCase(t *testing.T) {
	tr := tracetest.ReadText(t, "testdata/disagreement.txt")
	a := analysis.Of(tr)
	var got []string
	for _, o := range a.Objects {
		got = append(got, fmt.Sprintf("%s %s %d", o.Kind, o.Reason, o.Lifetime()))
	}
	want := []string{"context destroyed 500", "stream context-destroyed 300", "context destroyed 700",
		"managed-allocation destroyed 300"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects %q, want %q", got, want)
	}
	r := report.Build(tr, report.Options{})
	if r.Objects[0].Kind != "context" || r.Objects[0].Created != 2 {
		t.Errorf("report contexts: %+v", r.Objects[0])
	}
	for _, f := range lint.Run(tr) {
		if f.Rule == "leak" && strings.Contains(f.Message, "stream") && !strings.Contains(f.Message, "reclaimed only when its context") {
			t.Errorf("lint calls the stream live: %s", f.Message)
		}
	}
}

// objectRow is a report row recomputed from the analysis's objects.
func objectRows(objs []analysis.Object, keep func(*analysis.Object) bool) []report.ObjectRow {
	by := map[trace.Object]*report.ObjectRow{}
	lifetimes := map[trace.Object][]int64{}
	for i := range objs {
		o := &objs[i]
		if keep != nil && !keep(o) {
			continue
		}
		r := by[o.Kind]
		if r == nil {
			r = &report.ObjectRow{Kind: o.Kind.String()}
			by[o.Kind] = r
		}
		r.Created++
		r.Bytes += o.Bytes
		switch o.Reason {
		case analysis.EndDestroyed:
			r.Destroyed++
			lifetimes[o.Kind] = append(lifetimes[o.Kind], o.End-o.Start)
			if o.End-o.Start <= analysis.ChurnWindow {
				r.Churn++
			}
		case analysis.EndAlive:
			r.Alive++
		default:
			r.Implicit++
		}
	}
	var out []report.ObjectRow
	for _, k := range trace.Objects() {
		if r := by[k]; r != nil {
			ls := lifetimes[k]
			slices.Sort(ls)
			r.LifetimeMedianNs, r.LifetimeP99Ns = quantile.NearestRank(ls, 50), quantile.NearestRank(ls, 99)
			out = append(out, *r)
		}
	}
	return out
}

func checkReport(t *testing.T, tr *trace.Trace, want *facts) {
	r := report.Build(tr, report.Options{})
	a := want.a
	if got, w := r.Objects, objectRows(a.Objects, nil); !(len(got) == 0 && len(w) == 0) && !reflect.DeepEqual(got, w) {
		t.Errorf("objects:\n got %+v\nwant %+v", got, w)
	}
	if r.Unpaired != len(a.Problems) {
		t.Errorf("unpaired destroys %d, analysis %d", r.Unpaired, len(a.Problems))
	}
	// each call's device: the per-device tables count the calls of each
	calls := map[int32]map[string]int{}
	devs := map[int32]bool{}
	errors := map[[2]uint32]int{}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.KindCall {
			continue
		}
		d := want.device[i]
		if calls[d] == nil {
			calls[d] = map[string]int{}
		}
		calls[d][e.API.String()]++
		if d != trace.NoDevice {
			devs[d] = true
		}
		if want.isError[i] {
			errors[[2]uint32{e.PID, e.TID}]++
		}
	}
	if len(devs) > 1 {
		if len(r.Devices) != len(calls) {
			t.Errorf("%d device tables, analysis has calls on %d devices", len(r.Devices), len(calls))
		}
		for _, dt := range r.Devices {
			got := map[string]int{}
			for _, row := range dt.APIs {
				got[row.API] = row.Count
			}
			if !reflect.DeepEqual(got, calls[dt.Device]) {
				t.Errorf("device %d calls %v, analysis %v", dt.Device, got, calls[dt.Device])
			}
			if w := objectRows(a.Objects, func(o *analysis.Object) bool { return o.Device == dt.Device }); !(len(w) == 0 && len(dt.Objects) == 0) && !reflect.DeepEqual(dt.Objects, w) {
				t.Errorf("device %d objects %+v, analysis %+v", dt.Device, dt.Objects, w)
			}
		}
	} else if len(r.Devices) != 0 {
		t.Errorf("device tables for %d known devices", len(devs))
	}
	for _, th := range r.Threads {
		if th.Errors != errors[[2]uint32{th.PID, th.TID}] {
			t.Errorf("thread %d/%d: %d errors, analysis %d", th.PID, th.TID, th.Errors, errors[[2]uint32{th.PID, th.TID}])
		}
	}
	// each range: count and time per (domain, name)
	type rk struct{ domain, name string }
	ranges := map[rk][2]int64{}
	for _, rg := range a.Ranges {
		k := rk{tr.String(rg.Domain), tr.String(rg.Name)}
		v := ranges[k]
		v[0]++
		v[1] += max(rg.End-rg.Start, 0)
		ranges[k] = v
	}
	got := map[rk][2]int64{}
	for _, row := range r.Ranges {
		got[rk{row.Domain, row.Name}] = [2]int64{int64(row.Count), row.TotalNs}
	}
	if !(len(got) == 0 && len(ranges) == 0) && !reflect.DeepEqual(got, ranges) {
		t.Errorf("ranges %v, analysis %v", got, ranges)
	}
	// Python frames: the table's rows are the analysis's per-code totals
	cs := a.ByCode()
	if len(r.Frames) != len(cs) {
		t.Fatalf("%d frame rows, analysis %d codes", len(r.Frames), len(cs))
	}
	for i, c := range cs {
		f := r.Frames[i]
		if f.Calls != c.Activations || f.SelfNs != c.SelfNs || f.InclusiveNs != c.InclusiveNs || f.DriverNs != c.DriverNs {
			t.Errorf("frame %s: %+v, analysis %+v", f.Frame, f, c)
		}
	}
}

// leaks is lint's leak rule's object set, recomputed from the analysis.
func leaks(o *analysis.Object) bool {
	if o.Reason != analysis.EndAlive && o.Reason != analysis.EndContext {
		return false
	}
	switch o.Kind {
	case trace.ObjectStream, trace.ObjectEvent, trace.ObjectAllocation, trace.ObjectHostAllocation,
		trace.ObjectManagedAllocation, trace.ObjectPool:
		return true
	case trace.ObjectContext:
		return !o.Primary
	}
	return false
}

// sameSite rules report their first occurrence as the example.
var sameSite = map[string]bool{"leak": true, "stream-churn": true, "event-churn": true, "error-check": true,
	"redundant-set-current": true, "wrapper-overhead": true}

func checkLint(t *testing.T, tr *trace.Trace, want *facts) {
	fs := lint.Run(tr)
	a := want.a
	leaked := map[trace.Object]int{}
	for i := range a.Objects {
		if o := &a.Objects[i]; leaks(o) {
			leaked[o.Kind]++
		}
	}
	// churn sites: (process, caller, ranges, Python stack) of the create calls
	type site struct {
		pid    uint32
		caller uint64
		path   string
		python string
	}
	churn := map[trace.Object]map[site]int{}
	for i := range a.Objects {
		o := &a.Objects[i]
		if !o.Churn(analysis.ChurnWindow) {
			continue
		}
		if churn[o.Kind] == nil {
			churn[o.Kind] = map[site]int{}
		}
		churn[o.Kind][site{o.PID, o.Caller, want.path[o.Create], want.python[o.Create]}]++
	}
	churned := func(kind trace.Object) int {
		n := 0
		for _, c := range churn[kind] {
			if c >= 3 {
				n += c
			}
		}
		return n
	}
	got := map[string]int{}
	for _, f := range fs {
		got[f.Rule] += f.Count
		i := f.Example.Event
		if i < 0 || i >= len(tr.Events) {
			t.Errorf("%s: example event %d out of range", f.Rule, i)
			continue
		}
		if e := &tr.Events[i]; f.Example.API != e.API.String() || f.Example.DurationNs != want.dur[i] {
			t.Errorf("%s: example %+v, analysis: %s took %d", f.Rule, f.Example, e.API, want.dur[i])
		}
		if sameSite[f.Rule] && (f.Where.Range != want.path[i] || f.Where.Python != want.python[i]) {
			t.Errorf("%s: where range %q python %q, analysis %q and %q", f.Rule, f.Where.Range, f.Where.Python,
				want.path[i], want.python[i])
		}
	}
	n := 0
	for _, c := range leaked {
		n += c
	}
	if got["leak"] != n {
		t.Errorf("lint reports %d leaked objects, analysis %d (%v)", got["leak"], n, leaked)
	}
	if w := churned(trace.ObjectStream); got["stream-churn"] != w {
		t.Errorf("stream-churn counts %d streams, analysis %d", got["stream-churn"], w)
	}
	if w := churned(trace.ObjectEvent); got["event-churn"] != w {
		t.Errorf("event-churn counts %d events, analysis %d", got["event-churn"], w)
	}
}

func buildProfile(t *testing.T, tr *trace.Trace, v flame.View) *profile.Profile {
	p, _, err := flame.Build(tr, flame.WithView(v))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkFlameAPI: the api view counts each call once, under its API and
// device, and its stack holds the call's ranges.
func checkFlameAPI(t *testing.T, tr *trace.Trace, want *facts) {
	p := buildProfile(t, tr, flame.ViewAPI)
	type key struct {
		api string
		dev string
	}
	got, w := map[key]int64{}, map[key]int64{}
	for _, s := range p.Sample {
		if api := s.Label["api"]; len(api) == 1 {
			dev := "-1"
			if d := s.Label["device"]; len(d) == 1 {
				dev = d[0]
			}
			got[key{api[0], dev}] += s.Value[0]
		}
	}
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.KindCall {
			w[key{e.API.String(), fmt.Sprint(want.device[i])}]++
		}
	}
	if !(len(got) == 0 && len(w) == 0) && !reflect.DeepEqual(got, w) {
		t.Errorf("calls by API and device %v, analysis %v", got, w)
	}
}

// checkFlameLifetime: the lifetime view has every object once, by kind and
// how it ended, with its lifetime.
func checkFlameLifetime(t *testing.T, tr *trace.Trace, want *facts) {
	p := buildProfile(t, tr, flame.ViewLifetime)
	type key struct{ kind, state string }
	got, w := map[key][2]int64{}, map[key][2]int64{}
	for _, s := range p.Sample {
		k := key{strings.Join(s.Label["object"], ","), strings.Join(s.Label["state"], ",")}
		v := got[k]
		v[0] += s.Value[0]
		v[1] += s.Value[1]
		got[k] = v
	}
	for _, o := range want.a.Objects {
		state := o.Reason.String()
		if o.Alive() {
			state = "live"
		}
		k := key{o.Kind.String(), state}
		v := w[k]
		v[0]++
		v[1] += o.Lifetime()
		w[k] = v
	}
	if !(len(got) == 0 && len(w) == 0) && !reflect.DeepEqual(got, w) {
		keys := func(m map[key][2]int64) []string {
			var out []string
			for k, v := range m {
				out = append(out, fmt.Sprintf("%s/%s=%v", k.kind, k.state, v))
			}
			sort.Strings(out)
			return out
		}
		t.Errorf("objects by kind and end\n got %v\nwant %v", keys(got), keys(w))
	}
}
