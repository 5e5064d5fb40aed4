package otlp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

var update = golden.NewFlag("update", "rewrite golden files")

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return fmt.Sprintf("%q", x.StringValue)
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, anyString(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return "?"
}

func attrString(kvs []*commonpb.KeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, kv.Key+"="+anyString(kv.Value))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// dump renders spans as one tree per resource, children under parents, for
// golden files a person can review.
func dump(rss []*tracepb.ResourceSpans) string {
	type res struct {
		attrs string
		spans []*tracepb.Span
	}
	var order []string
	byRes := map[string]*res{}
	for _, rs := range rss {
		a := attrString(rs.Resource.Attributes)
		r := byRes[a]
		if r == nil {
			r = &res{attrs: a}
			byRes[a] = r
			order = append(order, a)
		}
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	sort.Strings(order)
	var b strings.Builder
	for _, a := range order {
		r := byRes[a]
		fmt.Fprintf(&b, "resource %s\n", r.attrs)
		byID := map[string]*tracepb.Span{}
		children := map[string][]*tracepb.Span{}
		for _, s := range r.spans {
			byID[string(s.SpanId)] = s
		}
		var roots []*tracepb.Span
		for _, s := range r.spans {
			if _, ok := byID[string(s.ParentSpanId)]; ok {
				children[string(s.ParentSpanId)] = append(children[string(s.ParentSpanId)], s)
			} else {
				roots = append(roots, s)
			}
		}
		byTime := func(ss []*tracepb.Span) {
			sort.SliceStable(ss, func(i, j int) bool {
				if ss[i].StartTimeUnixNano != ss[j].StartTimeUnixNano {
					return ss[i].StartTimeUnixNano < ss[j].StartTimeUnixNano
				}
				if ss[i].Name != ss[j].Name {
					return ss[i].Name < ss[j].Name
				}
				return string(ss[i].SpanId) < string(ss[j].SpanId)
			})
		}
		byTime(roots)
		base := uint64(0)
		if len(roots) > 0 {
			base = roots[0].StartTimeUnixNano
		}
		var walk func(s *tracepb.Span, depth int)
		walk = func(s *tracepb.Span, depth int) {
			fmt.Fprintf(&b, "%s%s [%d,%d] %s", strings.Repeat("  ", depth+1), s.Name,
				s.StartTimeUnixNano-base, s.EndTimeUnixNano-base, attrString(s.Attributes))
			if s.Status != nil {
				fmt.Fprintf(&b, " status=%s:%s", s.Status.Code, s.Status.Message)
			}
			for _, ev := range s.Events {
				fmt.Fprintf(&b, " event(%s@%d %s)", ev.Name, ev.TimeUnixNano-base, attrString(ev.Attributes))
			}
			for _, l := range s.Links {
				t := byID[string(l.SpanId)]
				name := "?"
				if t != nil {
					name = fmt.Sprintf("%s@%d", t.Name, t.StartTimeUnixNano-base)
				}
				fmt.Fprintf(&b, " link(%s)->%s", attrString(l.Attributes), name)
			}
			b.WriteByte('\n')
			kids := children[string(s.SpanId)]
			byTime(kids)
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
		for _, s := range roots {
			walk(s, 0)
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	tr := readFixture(t, "small.txt")
	rs, err := Collect(tr, WithVersion("test"))
	if err != nil {
		t.Fatal(err)
	}
	update.Check(t, "testdata/small.spans.golden", []byte(dump(rs)))
}

// spanIndex checks invariants every export must hold and indexes the spans.
func spanIndex(t *testing.T, rss []*tracepb.ResourceSpans) map[string]*tracepb.Span {
	t.Helper()
	ids := map[string]*tracepb.Span{}
	for _, rs := range rss {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				if len(s.TraceId) != 16 || len(s.SpanId) != 8 {
					t.Fatalf("span %s: bad id lengths", s.Name)
				}
				if _, dup := ids[string(s.SpanId)]; dup {
					t.Fatalf("span id %x used twice", s.SpanId)
				}
				if s.EndTimeUnixNano < s.StartTimeUnixNano {
					t.Errorf("span %s ends before it starts", s.Name)
				}
				ids[string(s.SpanId)] = s
			}
		}
	}
	for _, s := range ids {
		if len(s.ParentSpanId) > 0 {
			p, ok := ids[string(s.ParentSpanId)]
			if !ok {
				t.Errorf("span %s: parent %x missing", s.Name, s.ParentSpanId)
			} else if !bytes.Equal(p.TraceId, s.TraceId) {
				t.Errorf("span %s: parent in another trace", s.Name)
			} else if p.StartTimeUnixNano > s.StartTimeUnixNano || p.EndTimeUnixNano < s.EndTimeUnixNano {
				t.Errorf("span %s [%d,%d] not inside parent %s [%d,%d]", s.Name, s.StartTimeUnixNano,
					s.EndTimeUnixNano, p.Name, p.StartTimeUnixNano, p.EndTimeUnixNano)
			}
		}
		for _, l := range s.Links {
			if _, ok := ids[string(l.SpanId)]; !ok {
				t.Errorf("span %s: link to missing %x", s.Name, l.SpanId)
			}
		}
	}
	return ids
}

func attr(s []*commonpb.KeyValue, key string) string {
	for _, kv := range s {
		if kv.Key == key {
			return anyString(kv.Value)
		}
	}
	return ""
}

func TestStructure(t *testing.T) {
	tr := readFixture(t, "small.txt")
	rs, err := Collect(tr)
	if err != nil {
		t.Fatal(err)
	}
	ids := spanIndex(t, rs)
	calls := 0
	for i := range tr.Events {
		e := &tr.Events[i]
		if e.Kind != trace.KindCall {
			continue
		}
		calls++
		s := ids[string(newIDSource(Identity(tr)).spanID(idCall, uint64(i)))]
		if s == nil || s.Name != e.API.String() {
			t.Fatalf("event %d (%s): no span of that name", i, e.API)
		}
	}
	ranges := analysis.Of(tr).Ranges
	if want := calls + len(ranges) + 2 /*processes*/ + 8; /*objects*/ len(ids) != want {
		t.Errorf("got %d spans, want %d", len(ids), want)
	}
	byName := func(name string) []*tracepb.Span {
		var out []*tracepb.Span
		for _, s := range ids {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	// a call inside a cudawrap span inside an NVTX range
	alloc := byName("cuMemAllocAsync")[0]
	if p := ids[string(alloc.ParentSpanId)]; p.Name != "Allocator.alloc" || ids[string(p.ParentSpanId)].Name != "step" {
		t.Errorf("cuMemAllocAsync parent chain wrong: %s", p.Name)
	}
	if got := attr(alloc.Attributes, AttrBytes); got != "1048576" {
		t.Errorf("cuda.bytes = %s", got)
	}
	if got := attr(alloc.Attributes, AttrCodeFunc); got != `"train_step"` {
		t.Errorf("code.function.name = %s", got)
	}
	oom := byName("cuMemAlloc")
	for _, s := range oom {
		if attr(s.Attributes, AttrResult) == `"CUDA_ERROR_OUT_OF_MEMORY"` && s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("failed call without error status")
		}
	}
	if q := byName("cuEventQuery")[0]; q.Status != nil {
		t.Errorf("not-ready query flagged as error")
	}
	// the stream lifetime links to its create and destroy calls
	st := byName("stream")[0]
	if len(st.Links) != 2 || ids[string(st.Links[0].SpanId)].Name != "cuStreamCreate" ||
		ids[string(st.Links[1].SpanId)].Name != "cuStreamDestroy" {
		t.Errorf("stream lifetime links wrong: %v", st.Links)
	}
	if attr(st.Attributes, AttrObjectName) != `"compute"` {
		t.Errorf("stream name missing")
	}
	// resources: ranks and GPUs
	for _, r := range rs {
		pid := attr(r.Resource.Attributes, AttrPID)
		want := map[string]string{"100": "0", "200": "1"}[pid]
		if got := attr(r.Resource.Attributes, AttrRank); got != want {
			t.Errorf("pid %s: rank %s, want %s", pid, got, want)
		}
		if got := attr(r.Resource.Attributes, AttrServiceName); got != `"unknown_service:python3"` {
			t.Errorf("service.name %s", got)
		}
		if got := attr(r.Resource.Attributes, AttrDriverVersion); got != `"13.0"` {
			t.Errorf("driver version %s", got)
		}
	}
}

func TestDeterministicIDs(t *testing.T) {
	tr := readFixture(t, "small.txt")
	a, _ := Collect(tr)
	b, _ := Collect(readFixture(t, "small.txt"))
	if len(a) != len(b) {
		t.Fatal("different resource counts")
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			t.Fatal("two exports of one trace differ")
		}
	}
	c, _ := Collect(tr, WithIdentity("another file"))
	if bytes.Equal(a[0].ScopeSpans[0].Spans[0].SpanId, c[0].ScopeSpans[0].Spans[0].SpanId) {
		t.Error("identity does not change span IDs")
	}
}

func TestBatchesSplitAndCoverEverything(t *testing.T) {
	tr := readFixture(t, "small.txt")
	whole, _ := Collect(tr)
	want := map[string]bool{}
	for _, rs := range whole {
		for _, s := range rs.ScopeSpans[0].Spans {
			want[hex.EncodeToString(s.SpanId)] = true
		}
	}
	got := map[string]bool{}
	batches := 0
	_, err := Build(tr, func(b Batch) error {
		batches++
		rss, err := b.ResourceSpans()
		if err != nil {
			t.Fatal(err)
		}
		req := &tracepb.TracesData{ResourceSpans: rss}
		if n := proto.Size(req); n > 2000 {
			t.Errorf("batch of %d bytes over the 1000-byte limit plus one span", n)
		}
		for _, rs := range rss {
			for _, s := range rs.ScopeSpans[0].Spans {
				k := hex.EncodeToString(s.SpanId)
				if got[k] {
					t.Errorf("span %s in two batches", s.Name)
				}
				got[k] = true
			}
		}
		return nil
	}, WithBatchBytes(1000))
	if err != nil {
		t.Fatal(err)
	}
	if batches < 3 || len(got) != len(want) {
		t.Errorf("%d batches, %d spans; want several batches and %d spans", batches, len(got), len(want))
	}
}

func TestAttributesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/attributes.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(documentedKeys[:len(documentedKeys):len(documentedKeys)], documentedAggregateKeys...) {
		if !bytes.Contains(doc, []byte("`"+k+"`")) {
			t.Errorf("attribute %s is not in docs/attributes.md", k)
		}
	}
}

// FuzzBuild exports arbitrary text traces: span IDs stay unique, every parent
// and link resolves within the export, and batches cover every span once.
func FuzzBuild(f *testing.F) {
	seed, err := os.ReadFile("testdata/small.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil || len(tr.Events) > 2000 {
			return
		}
		ids := map[string]*tracepb.Span{}
		var all []*tracepb.Span
		_, err = Build(tr, func(b Batch) error {
			rss, err := b.ResourceSpans()
			if err != nil {
				t.Fatal(err)
			}
			for _, rs := range rss {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						if _, dup := ids[string(s.SpanId)]; dup {
							t.Fatalf("span id of %s used twice", s.Name)
						}
						ids[string(s.SpanId)] = s
						all = append(all, s)
					}
				}
			}
			return nil
		}, WithBatchBytes(700))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			if len(s.ParentSpanId) > 0 && ids[string(s.ParentSpanId)] == nil {
				t.Fatalf("span %s: parent missing", s.Name)
			}
			for _, l := range s.Links {
				if ids[string(l.SpanId)] == nil {
					t.Fatalf("span %s: link missing", s.Name)
				}
			}
		}
	})
}

func TestIdentityFollowsContent(t *testing.T) {
	a := readFixture(t, "small.txt")
	b := readFixture(t, "small.txt")
	if Identity(a) != Identity(b) {
		t.Fatal("one file, two identities")
	}
	b.Events[3].Handle++ // same size, same first and last times
	if Identity(a) == Identity(b) {
		t.Error("identity ignores event content")
	}
}

// TestPythonFrames checks the spans of Python frames: code.* attributes,
// nesting with ranges, and driver calls parented by the frame that made them.
func TestPythonFrames(t *testing.T) {
	tr := tracetest.PythonTrace()
	rs, err := Collect(tr)
	if err != nil {
		t.Fatal(err)
	}
	checkPythonSpans(t, spanIndex(t, rs))
	update.Check(t, "testdata/python.spans.golden", []byte(dump(rs)))
}

func checkPythonSpans(t *testing.T, ids map[string]*tracepb.Span) {
	t.Helper()
	byName := map[string]*tracepb.Span{}
	for _, s := range ids {
		if _, ok := byName[s.Name]; !ok || s.StartTimeUnixNano < byName[s.Name].StartTimeUnixNano {
			byName[s.Name] = s
		}
	}
	chain := func(s *tracepb.Span) string {
		var names []string
		for p := ids[string(s.ParentSpanId)]; p != nil; p = ids[string(p.ParentSpanId)] {
			names = append([]string{p.Name}, names...)
		}
		return strings.Join(names, "/")
	}
	for name, want := range map[string]string{
		"cuStreamCreate":       "python3/<module>/main/step/Device.create_stream/CFuncPtr cuStreamCreate",
		"Device.create_stream": "python3/<module>/main/step",
		"cuStreamDestroy":      "python3/<module>",
		"cuStreamSynchronize":  "python3/worker",
	} {
		s := byName[name]
		if s == nil {
			t.Errorf("no span %s", name)
			continue
		}
		if got := chain(s); got != want {
			t.Errorf("%s: parents %s, want %s", name, got, want)
		}
	}
	cs := byName["Device.create_stream"]
	if cs == nil {
		t.Fatal("no Device.create_stream span")
	}
	for k, want := range map[string]string{
		AttrCodeFunc: `"cuda.core._device.Device.create_stream"`, AttrCodeFile: `"cuda/core/_device.py"`,
		AttrCodeLine: "120", AttrFrameKind: `"python"`, AttrFrameEnd: `"returned"`, AttrFrameSelf: "7340",
		AttrFrameDriver: "1990",
	} {
		if got := attr(cs.Attributes, k); got != want {
			t.Errorf("Device.create_stream %s = %s, want %s", k, got, want)
		}
	}
	if got := attr(byName["CFuncPtr cuStreamCreate"].Attributes, AttrFrameKind); got != `"native"` {
		t.Errorf("ctypes function kind %s", got)
	}
	if got := attr(byName["Buffer.allocate"].Attributes, AttrFrameEnd); got != `"unwound"` {
		t.Errorf("Buffer.allocate end %s", got)
	}
	if got := attr(byName["worker"].Attributes, AttrFrameEnd); got != `"open"` {
		t.Errorf("worker end %s", got)
	}
}
