package analysis_test

// The exporters' part of the cross-consumer test: flame's stacks in every
// view, the OTLP spans and the Perfetto (Chrome JSON) timeline, read back
// and compared with what the analysis resolved.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/exporters/otlp"
	"github.com/cuprof/cuprof/exporters/perfetto"
	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/trace"
)

func init() {
	consumers = append(consumers,
		consumer{"flame/stacks", checkFlameStacks},
		consumer{"flame/memory", checkFlameMemory},
		consumer{"flame/sites", checkFlameSites},
		consumer{"otlp", checkOTLP},
		consumer{"perfetto", checkPerfetto},
	)
}

// site is what the analysis says encloses an event, as flame stacks it:
// the NVTX start/end range when no push/pop range or span encloses it, then
// the scope (ranges and Python frames as they nest), outermost first.
type site struct {
	names  []string
	ranges []string // the range elements only
	nested []string // the range elements of the scope (no start/end range)
	scoped bool     // a range or frame nests around it
}

func (s site) String() string { return strings.Join(s.names, ";") }

// sites resolves each event's site.
func sites(t *trace.Trace) []site {
	out := make([]site, len(t.Events))
	scopes := make([]analysis.ScopeID, len(t.Events))
	loose := make([]*trace.StringID, len(t.Events))
	a := analysis.Of(t, analysis.OnEvent(func(e *analysis.Event) {
		scopes[e.Index] = e.Scope
		if r := e.InRange(); r != nil && r.Origin == trace.KindRangeStart {
			name := r.Name
			loose[e.Index] = &name
		}
	}))
	for i := range t.Events {
		var s site
		for sc := scopes[i]; sc != analysis.NoScope; sc = a.ScopeParent(sc) {
			frame, code, name, _ := a.ScopeFrame(sc)
			if frame {
				s.names = append(s.names, analysis.CodeName(t, code))
			} else {
				s.names = append(s.names, rangeName(t, name))
				s.ranges = append(s.ranges, t.String(name))
			}
			s.scoped = true
		}
		s.nested = append(s.nested, s.ranges...)
		reverse(s.nested)
		if l := loose[i]; l != nil {
			s.names = append(s.names, rangeName(t, *l))
			s.ranges = append(s.ranges, t.String(*l))
		}
		reverse(s.names)
		reverse(s.ranges)
		out[i] = s
	}
	return out
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

func rangeName(t *trace.Trace, id trace.StringID) string {
	if s := t.String(id); s != "" {
		return s
	}
	return "(unnamed range)"
}

// flameStack returns a sample's stack, outermost first, without the API and
// the caller (a location with an address).
func flameStack(s *profile.Sample) string {
	var names []string
	for i := len(s.Location) - 1; i >= 0; i-- {
		l := s.Location[i]
		if l.Address != 0 {
			continue
		}
		names = append(names, l.Line[0].Function.Name)
	}
	if len(s.Label["api"]) > 0 && len(names) > 0 {
		names = names[:len(names)-1]
	}
	return strings.Join(names, ";")
}

// checkFlameStacks: each call sits under the ranges and Python frames that
// enclose it, and those ranges are the analysis' path of the call.
func checkFlameStacks(t *testing.T, tr *trace.Trace, want *facts) {
	p := buildProfile(t, tr, flame.ViewAPI)
	ss := sites(tr)
	type key struct{ api, stack string }
	got, w := map[key]int64{}, map[key]int64{}
	for _, s := range p.Sample {
		if api := s.Label["api"]; len(api) == 1 {
			got[key{api[0], flameStack(s)}] += s.Value[0]
		}
	}
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.KindCall {
			continue
		}
		w[key{e.API.String(), ss[i].String()}]++
		if r := strings.Join(ss[i].ranges, "/"); r != want.path[i] {
			t.Errorf("event %d: ranges in the stack %q, analysis path %q", i, r, want.path[i])
		}
	}
	compare(t, "calls by API and stack", got, w)
}

// checkFlameMemory: allocations by creation site, and those alive at the end.
func checkFlameMemory(t *testing.T, tr *trace.Trace, want *facts) {
	p := buildProfile(t, tr, flame.ViewMemory)
	ss := sites(tr)
	type key struct{ api, stack string }
	got, w := map[key][4]int64{}, map[key][4]int64{}
	for _, s := range p.Sample {
		k := key{strings.Join(s.Label["api"], ","), flameStack(s)}
		v := got[k]
		for i := range v {
			v[i] += s.Value[i]
		}
		got[k] = v
	}
	for _, o := range want.a.Objects {
		if !analysis.IsAllocation(o.Kind) {
			continue // mappings count: expandable segments are memory too
		}
		k := key{tr.Events[o.Create].API.String(), ss[o.Create].String()}
		v := w[k]
		v[0]++
		v[1] += int64(o.Bytes)
		if o.Alive() {
			v[2]++
			v[3] += int64(o.Bytes)
		}
		w[k] = v
	}
	compare(t, "allocations by site", got, w)
}

// checkFlameSites: the lifetime view keys every object by its creation site.
func checkFlameSites(t *testing.T, tr *trace.Trace, want *facts) {
	p := buildProfile(t, tr, flame.ViewLifetime)
	ss := sites(tr)
	type key struct{ kind, state, stack string }
	got, w := map[key][2]int64{}, map[key][2]int64{}
	for _, s := range p.Sample {
		k := key{strings.Join(s.Label["object"], ","), strings.Join(s.Label["state"], ","), flameStack(s)}
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
		k := key{o.Kind.String(), state, ss[o.Create].String()}
		v := w[k]
		v[0]++
		v[1] += o.Lifetime()
		w[k] = v
	}
	compare(t, "lifetimes by kind, end and site", got, w)
}

// compare reports the differences between two maps, sorted.
func compare[K comparable, V any](t *testing.T, what string, got, want map[K]V) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 || reflect.DeepEqual(got, want) {
		return
	}
	var diff []string
	for k, v := range want {
		if g, ok := got[k]; !ok || !reflect.DeepEqual(g, v) {
			diff = append(diff, fmt.Sprintf("%+v: got %v, analysis %v", k, g, v))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%+v: got %v, analysis none", k, g))
		}
	}
	sort.Strings(diff)
	if len(diff) > 10 {
		diff = append(diff[:10], fmt.Sprintf("... %d more", len(diff)-10))
	}
	t.Errorf("%s differ:\n%s", what, strings.Join(diff, "\n"))
}

func unixNano(tr *trace.Trace, t int64) uint64 {
	v := t
	if tr.Meta.WallStart != 0 {
		v = tr.Meta.WallStart + (t - tr.Meta.MonoStart)
	}
	return uint64(max(v, 0))
}

func otlpAttr(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// checkOTLP: one lifetime span per object (its kind, handle, extent and how
// it ended), each call span's device, enclosing ranges and Python stack,
// each range span's path.
func checkOTLP(t *testing.T, tr *trace.Trace, want *facts) {
	rss, err := otlp.Collect(tr)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]*tracepb.Span{}
	for _, rs := range rss {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				ids[string(s.SpanId)] = s
			}
		}
	}
	isRange := func(s *tracepb.Span) bool { return otlpAttr(s.Attributes, otlp.AttrRangeKind) != nil }
	var rangesAbove func(s *tracepb.Span) []string
	ranges := func(s *tracepb.Span) string { return strings.Join(rangesAbove(s), "/") }
	rangesAbove = func(s *tracepb.Span) []string { // the range spans above s, outermost first
		var names []string
		for p := ids[string(s.ParentSpanId)]; p != nil; p = ids[string(p.ParentSpanId)] {
			if isRange(p) {
				names = append(names, strings.TrimPrefix(p.Name, "range")) // unnamed ranges are "range"
			}
		}
		reverse(names)
		return names
	}
	type life struct {
		kind, handle, end string
		start, stop       uint64
	}
	gotLife, wantLife := map[life]int{}, map[life]int{}
	type call struct {
		api    string
		dev    int64
		ranges string
		python string // the frame spans above it, " > "-joined
	}
	frames := func(s *tracepb.Span) string {
		var names []string
		for p := ids[string(s.ParentSpanId)]; p != nil; p = ids[string(p.ParentSpanId)] {
			if otlpAttr(p.Attributes, otlp.AttrFrameKind) != nil {
				names = append(names, p.Name)
			}
		}
		reverse(names)
		return strings.Join(names, " > ")
	}
	gotCall, wantCall := map[call]int{}, map[call]int{}
	gotRange, wantRange := map[string]int{}, map[string]int{}
	for _, s := range ids {
		switch {
		case otlpAttr(s.Attributes, otlp.AttrObjectEnd) != nil:
			gotLife[life{s.Name, otlpAttr(s.Attributes, otlp.AttrHandle).GetStringValue(),
				otlpAttr(s.Attributes, otlp.AttrObjectEnd).GetStringValue(), s.StartTimeUnixNano, s.EndTimeUnixNano}]++
		case otlpAttr(s.Attributes, otlp.AttrAPI) != nil:
			dev := int64(-1)
			if d := otlpAttr(s.Attributes, otlp.AttrDevice); d != nil {
				dev = d.GetIntValue()
			}
			gotCall[call{s.Name, dev, ranges(s), frames(s)}]++
		case isRange(s):
			gotRange[strings.Join(append(rangesAbove(s), strings.TrimPrefix(s.Name, "range")), "/")]++
		}
	}
	for _, o := range want.a.Objects {
		wantLife[life{o.Kind.String(), fmt.Sprintf("0x%x", o.Handle), o.Reason.String(), unixNano(tr, o.Start),
			unixNano(tr, o.End)}]++
	}
	// a call's parents are the ranges and frames nesting around it, or when
	// nothing nests, the start/end range its thread started (the analysis'
	// path then); start/end ranges parent no frame
	ss := sites(tr)
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.KindCall {
			ranges := want.path[i]
			if ss[i].scoped {
				ranges = strings.Join(ss[i].nested, "/")
			}
			wantCall[call{e.API.String(), int64(want.device[i]), ranges, want.python[i]}]++
		}
	}
	for _, r := range want.a.Ranges {
		wantRange[want.a.PathString(r.Path)]++
	}
	compare(t, "OTLP lifetimes", gotLife, wantLife)
	compare(t, "OTLP calls by API, device and ranges", gotCall, wantCall)
	compare(t, "OTLP ranges by path", gotRange, wantRange)
}

// checkPerfetto: the Chrome JSON timeline has one lifetime slice per object
// (handle, extent, end), and each call's slice carries its device and sits
// in the slices of the push/pop ranges and spans enclosing it.
func checkPerfetto(t *testing.T, tr *trace.Trace, want *facts) {
	var buf bytes.Buffer
	if err := perfetto.WriteChromeJSON(&buf, tr); err != nil {
		t.Fatal(err)
	}
	var ct perfetto.ChromeTrace
	if err := json.Unmarshal(buf.Bytes(), &ct); err != nil {
		t.Fatal(err)
	}
	us := func(ns int64) float64 { return float64(ns) / 1000 }
	type life struct {
		handle, end string
		ts, dur     float64
	}
	gotLife, wantLife := map[life]int{}, map[life]int{}
	type call struct {
		api string
		dev int64
	}
	gotCall, wantCall := map[call]int{}, map[call]int{}
	for _, e := range ct.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		switch e.Cat {
		case "lifetime":
			gotLife[life{fmt.Sprint(e.Args["handle"]), fmt.Sprint(e.Args["end"]), e.Ts, *e.Dur}]++
		case "range", "python":
		default:
			dev := int64(-1)
			if d, ok := e.Args["device"].(float64); ok {
				dev = int64(d)
			}
			gotCall[call{e.Name, dev}]++
		}
	}
	for _, o := range want.a.Objects {
		wantLife[life{fmt.Sprintf("0x%x", o.Handle), o.Reason.String(), us(o.Start), us(max(o.End, o.Start) - o.Start)}]++
	}
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.KindCall {
			wantCall[call{e.API.String(), int64(want.device[i])}]++
		}
	}
	compare(t, "Perfetto lifetimes", gotLife, wantLife)
	compare(t, "Perfetto calls by API and device", gotCall, wantCall)

	// how the slices nest on a thread's track is checked against the
	// analysis in package perfetto (TestNestingAgreesWithAnalysis), on the
	// protobuf's explicit begins and ends: Chrome JSON's complete events
	// leave a slice starting exactly where another ends ambiguous
}
