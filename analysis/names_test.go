package analysis_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/exporters/otlp"
	"github.com/cuprof/cuprof/exporters/perfetto"
	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/trace"
)

// TestCallSiteRule pins the one rule of analysis.CallSite: a symbol holds
// [Addr, Addr+Size), a size-0 symbol only its own address, the innermost
// (latest start) holder names the address, the first listed of one start.
func TestCallSiteRule(t *testing.T) {
	tr := &trace.Trace{
		Mappings: []trace.Mapping{{PID: 1, Start: 0x400000, Limit: 0x500000, Offset: 0x1000, File: "/opt/app/bin/train"}},
		Symbols: []trace.Symbol{
			{PID: 1, Addr: 0x401000, Size: 0x100, Name: "outer"},
			{PID: 1, Addr: 0x401040, Size: 0x10, Name: "inner"},
			{PID: 1, Addr: 0x401080, Name: "label"}, // size 0
			{PID: 1, Addr: 0x402000, Name: "asm_entry"},
			{PID: 1, Addr: 0x403000, Size: 0x20, Name: "alias_a"},
			{PID: 1, Addr: 0x403000, Size: 0x20, Name: "alias_b"},
			{PID: 2, Addr: 0x401000, Size: 0x100, Name: "other_process"},
		},
	}
	s := analysis.SitesOf(tr)
	for _, c := range []struct {
		pid  uint32
		addr uint64
		name string
		off  uint64
	}{
		{1, 0x401010, "outer", 0x10},
		{1, 0x401044, "inner", 4},
		{1, 0x401050, "outer", 0x50},     // past inner: the outer one holds it
		{1, 0x401080, "label", 0},        // a size-0 symbol holds its own address
		{1, 0x401084, "outer", 0x84},     // and no other
		{1, 0x402000, "asm_entry", 0},    //
		{1, 0x402010, "train+0x3010", 0}, // not up to the next symbol: the file and offset
		{1, 0x403010, "alias_a", 0x10},   // the first listed of one start
		{1, 0x600000, "0x600000", 0},     // neither mapped nor symbolized
		{2, 0x401010, "other_process", 0x10},
		{3, 0x401010, "0x401010", 0},
		{1, 0, "", 0},
	} {
		cs := s.Resolve(c.pid, c.addr)
		if cs.Name() != c.name || cs.Offset != c.off {
			t.Errorf("pid %d %#x: %q +%#x, want %q +%#x", c.pid, c.addr, cs.Name(), cs.Offset, c.name, c.off)
		}
	}
	// the tables grow (a live recording): indexed again
	tr.Symbols = append(tr.Symbols, trace.Symbol{PID: 1, Addr: 0x402008, Size: 0x10, Name: "late"})
	if got := s.Resolve(1, 0x402010).Name(); got != "late" {
		t.Errorf("after a symbol was added: %q, want late", got)
	}
}

// TestCodeName pins the one fallback and the one way of adding the module.
func TestCodeName(t *testing.T) {
	tr := &trace.Trace{}
	named := tr.Intern("Stream.synchronize")
	mod := tr.Intern("cuda.core")
	tr.Code = []trace.Code{{}, {Kind: trace.CodePython, Name: named, Module: mod}, {Kind: trace.CodeNative, Name: named}, {Kind: trace.CodePython, Module: mod}}
	for _, c := range []struct {
		id       trace.CodeID
		name, fn string
	}{
		{1, "Stream.synchronize", "cuda.core.Stream.synchronize"},
		{2, "Stream.synchronize", "Stream.synchronize"},
		{3, "(code 3)", "cuda.core.(code 3)"},
		{9, "(code 9)", "(code 9)"},
	} {
		if n, f := analysis.CodeName(tr, c.id), analysis.CodeFunction(tr, c.id); n != c.name || f != c.fn {
			t.Errorf("code %d: %q %q, want %q %q", c.id, n, f, c.name, c.fn)
		}
	}
}

// TestObjectNameRule: a name names the live object of its handle; naming a
// handle with none names the next object created with it; a later name
// replaces an earlier one; an object ended keeps its name, its handle's
// next object does not inherit it.
func TestObjectNameRule(t *testing.T) {
	tr, err := trace.ReadText(strings.NewReader(`cuprof-text 1
meta host=h capture=text driver=13000 cuprof=0.1.0 clock=mono
name 1/1 t=100 object=stream handle=0x10 name=early
call 1/1 t=200 end=300 api=cuStreamCreate handle=0x10
name 1/1 t=400 object=stream handle=0x20 name=ignored-kind-mismatch
name 1/1 t=400 object=event handle=0x10 name=other-kind
call 1/1 t=500 end=600 api=cuStreamDestroy handle=0x10
call 1/1 t=700 end=800 api=cuStreamCreate handle=0x10
name 1/1 t=900 object=stream handle=0x10 name=first
name 1/1 t=950 object=stream handle=0x10 name=second
call 1/1 t=1000 end=1100 api=cuStreamDestroy handle=0x10
call 1/1 t=1200 end=1300 api=cuStreamCreate handle=0x10
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	analysis.Of(tr, analysis.OnEvent(func(e *analysis.Event) {
		if e.Kind == trace.KindCall && e.Object != analysis.NoObject {
			a := e.Analysis()
			got = append(got, a.ObjectName(&a.Objects[e.Object]))
		}
	}))
	want := []string{"early", "early", "", "second", ""}
	if !slices.Equal(got, want) {
		t.Errorf("names at each call %q, want %q", got, want)
	}
}

// wantNames is what the analysis names in a trace, as the outputs must
// show it.
type wantNames struct {
	calls   map[string]int // "API site" of each call recorded with its caller
	sites   map[string]int // calls by site name
	byAddr  map[uint64]map[string]bool
	frames  map[string]int // each frame activation's CodeName
	funcs   map[string]int // each frame activation's CodeFunction
	stacks  map[string]bool
	objects map[string]int // each named object's name
	named   []report.NamedRow
}

func namesOf(t *testing.T, tr *trace.Trace) *wantNames {
	w := &wantNames{calls: map[string]int{}, sites: map[string]int{}, byAddr: map[uint64]map[string]bool{},
		frames: map[string]int{}, funcs: map[string]int{}, stacks: map[string]bool{}, objects: map[string]int{}}
	type namedAt struct {
		create int
		row    report.NamedRow
	}
	var named []namedAt
	a := analysis.Of(tr, analysis.OnEvent(func(e *analysis.Event) {
		a := e.Analysis()
		switch {
		case e.Kind == trace.KindCall && e.Caller != 0:
			site := e.CallSite().Name()
			w.calls[e.API.String()+" "+site]++
			if !e.Outside {
				w.sites[site]++
			}
			if w.byAddr[e.Caller] == nil {
				w.byAddr[e.Caller] = map[string]bool{}
			}
			w.byAddr[e.Caller][site] = true
		case e.Kind == trace.KindFrame:
			w.frames[a.CodeName(e.Code)]++
			w.funcs[a.CodeFunction(e.Code)]++
		}
		var names []string
		for _, c := range a.FrameStack(e.Frame) {
			names = append(names, a.CodeName(c))
		}
		w.stacks[strings.Join(names, " > ")] = true
	}), analysis.OnObjectEnd(func(o *analysis.Object) {
		if o.Name != 0 {
			named = append(named, namedAt{o.Create, report.NamedRow{Name: tr.String(o.Name), Kind: o.Kind.String(),
				Handle: fmt.Sprintf("0x%x", o.Handle), PID: o.PID, Device: o.Device}})
		}
	}))
	for _, o := range a.Objects {
		if n := a.ObjectName(&o); n != "" {
			w.objects[n]++
		}
	}
	sort.SliceStable(named, func(i, j int) bool { return named[i].create < named[j].create })
	for _, n := range named {
		w.named = append(w.named, n.row)
	}
	return w
}

// TestNamesAgree is the cross-consumer test of names, over every fixture:
// each call site, Python frame name and object name is the same string in
// report, lint, flame, the timeline and OTLP as the analysis makes it
// (names.go). A consumer resolving a caller, naming code or keeping object
// names on its own disagrees on testdata/names.txt, which holds the cases
// where they used to differ.
func TestNamesAgree(t *testing.T) {
	fs := fixtures(t)
	var ran, sawSites, sawFrames, sawObjects, sawLintSites, sawLintObjects bool
	for _, fx := range fs {
		t.Run(strings.TrimPrefix(fx.name, "../"), func(t *testing.T) {
			ran = ran || strings.HasSuffix(fx.name, "names.txt")
			want := namesOf(t, fx.build(t))
			sawSites = sawSites || len(want.sites) > 0
			sawFrames = sawFrames || len(want.frames) > 0
			sawObjects = sawObjects || len(want.objects) > 0

			t.Run("report", func(t *testing.T) {
				r := report.Build(fx.build(t), report.Options{})
				got := map[string]int{}
				for _, s := range r.Sites {
					got[s.Site] += s.Calls
				}
				compare(t, "report call sites", got, want.sites)
				gotF, wantF := map[string]bool{}, map[string]bool{}
				for _, f := range r.Frames {
					gotF[f.Frame] = true
				}
				for n := range want.frames {
					wantF[n] = true
				}
				compare(t, "report frames", gotF, wantF)
				if !reflect.DeepEqual(r.Named, want.named) {
					t.Errorf("report named objects %+v, want %+v", r.Named, want.named)
				}
			})
			t.Run("lint", func(t *testing.T) {
				for _, f := range lint.Run(fx.build(t)) {
					w := f.Where
					if w.Caller != "" {
						addr, err := strconv.ParseUint(strings.TrimPrefix(w.Caller, "0x"), 16, 64)
						if err != nil {
							t.Fatalf("lint caller %q: %v", w.Caller, err)
						}
						if !want.byAddr[addr][w.Function] {
							t.Errorf("lint names the site %s %q, the analysis %v", w.Caller, w.Function, want.byAddr[addr])
						}
						sawLintSites = true
					}
					if !want.stacks[w.Python] {
						t.Errorf("lint's Python stack %q is none of the analysis's", w.Python)
					}
					for _, fr := range w.Stack {
						if want.frames[fr.Name] == 0 {
							t.Errorf("lint's frame %q is no frame the analysis names", fr.Name)
						}
					}
					if w.Object != "" {
						if want.objects[w.Object] == 0 {
							t.Errorf("lint's object %q is no name the analysis gave", w.Object)
						}
						sawLintObjects = true
					}
				}
			})
			t.Run("flame", func(t *testing.T) {
				tr := fx.build(t)
				got := map[string]int{}
				for _, s := range buildProfile(t, tr, flame.ViewAPI).Sample {
					for _, l := range s.Location {
						if l.Address != 0 {
							got[s.Label["api"][0]+" "+l.Line[0].Function.Name] += int(s.Value[0])
						}
					}
				}
				compare(t, "flame callers by API", got, want.calls)
				gotO := map[string]int{}
				for _, s := range buildProfile(t, tr, flame.ViewLifetime).Sample {
					if n := s.Label["object_name"]; len(n) > 0 {
						gotO[n[0]] += int(s.Value[0])
					}
				}
				compare(t, "flame object names", gotO, want.objects)
				// Python frame names: checkFlameStacks compares each
				// call's stack with the analysis's (CodeName)
			})
			t.Run("timeline", func(t *testing.T) {
				var buf bytes.Buffer
				if err := perfetto.WriteChromeJSON(&buf, fx.build(t)); err != nil {
					t.Fatal(err)
				}
				var ct perfetto.ChromeTrace
				if err := json.Unmarshal(buf.Bytes(), &ct); err != nil {
					t.Fatal(err)
				}
				gotC, gotF, gotO := map[string]int{}, map[string]int{}, map[string]int{}
				for _, e := range ct.TraceEvents {
					if e.Ph != "X" && e.Ph != "B" { // calls and lifetimes whole, frames begun and ended
						continue
					}
					switch e.Cat {
					case "python":
						gotF[e.Name]++
					case "lifetime":
						if name, _, ok := strings.Cut(e.Name, " ("); ok {
							gotO[name]++
						}
					case "range":
					default:
						if c, ok := e.Args["caller"].(string); ok {
							gotC[e.Name+" "+c]++
						}
					}
				}
				compare(t, "timeline callers by API", gotC, want.calls)
				compare(t, "timeline Python slices", gotF, want.frames)
				compare(t, "timeline lifetimes' names", gotO, want.objects)
			})
			t.Run("otlp", func(t *testing.T) {
				rss, err := otlp.Collect(fx.build(t))
				if err != nil {
					t.Fatal(err)
				}
				gotC, gotF, gotFn, gotO := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
				for _, rs := range rss {
					for _, ss := range rs.ScopeSpans {
						for _, s := range ss.Spans {
							switch {
							case otlpAttr(s.Attributes, otlp.AttrAPI) != nil:
								c := otlpAttr(s.Attributes, otlp.AttrCodeFunc) // absent: only the address
								if c == nil {
									c = otlpAttr(s.Attributes, otlp.AttrCaller)
								}
								if c != nil {
									gotC[s.Name+" "+c.GetStringValue()]++
								}
							case otlpAttr(s.Attributes, otlp.AttrFrameKind) != nil:
								gotF[s.Name]++
								gotFn[otlpAttr(s.Attributes, otlp.AttrCodeFunc).GetStringValue()]++
							case otlpAttr(s.Attributes, otlp.AttrObjectEnd) != nil:
								if n := otlpAttr(s.Attributes, otlp.AttrObjectName); n != nil {
									gotO[n.GetStringValue()]++
								}
							}
						}
					}
				}
				compare(t, "OTLP callers by API", gotC, want.calls)
				compare(t, "OTLP frame spans", gotF, want.frames)
				compare(t, "OTLP frames' code.function.name", gotFn, want.funcs)
				compare(t, "OTLP lifetimes' names", gotO, want.objects)
			})
		})
	}
	if ran && (!sawSites || !sawFrames || !sawObjects || !sawLintSites || !sawLintObjects) {
		t.Errorf("testdata/names.txt and the fixtures hold no call site (%v), frame (%v), named object (%v), lint site (%v) or lint object (%v): nothing was compared",
			sawSites, sawFrames, sawObjects, sawLintSites, sawLintObjects)
	}
}

// TestStreamOf pins the one default-stream rule.
func TestStreamOf(t *testing.T) {
	for _, c := range []struct {
		e    trace.Event
		want uint64
	}{
		{trace.Event{Kind: trace.KindCall, API: trace.APIMemcpyAsync, Stream: 0}, 0},
		{trace.Event{Kind: trace.KindCall, API: trace.APIMemcpyAsync, Stream: 1}, 0}, // CU_STREAM_LEGACY
		{trace.Event{Kind: trace.KindCall, API: trace.APIMemcpyAsync, Stream: 2}, 0}, // CU_STREAM_PER_THREAD
		{trace.Event{Kind: trace.KindCall, API: trace.APIMemcpyAsync, Stream: 0x10}, 0x10},
		{trace.Event{Kind: trace.KindCall, API: trace.APIMemcpy}, 0}, // synchronous: the default stream
		{trace.Event{Kind: trace.KindCall, API: trace.APILaunchKernelEx}, analysis.UnknownStream},
	} {
		if got := analysis.StreamOf(&c.e); got != c.want {
			t.Errorf("%s stream %#x: %#x, want %#x", c.e.API, c.e.Stream, got, c.want)
		}
	}
	if !trace.APILaunchKernelEx.Info().StreamUnrecorded || trace.APILaunchKernel.Info().StreamUnrecorded {
		t.Error("the API table's StreamUnrecorded: want cuLaunchKernelEx only")
	}
}

// TestContextGen: a thread's ContextGen moves with each successful call
// that changes its context (or may end it), not with questions, failures,
// or other threads' calls.
func TestContextGen(t *testing.T) {
	tr, err := trace.ReadText(strings.NewReader(`cuprof-text 1
meta host=h capture=text driver=13000 cuprof=0.1.0 clock=mono
call 1/1 t=100 end=110 api=cuCtxGetDevice
call 1/1 t=200 end=210 api=cuCtxSetCurrent handle=0xc0
call 1/1 t=300 end=310 api=cuCtxGetCurrent handle=0xc0
call 1/2 t=350 end=360 api=cuCtxPushCurrent handle=0xc1
call 1/1 t=400 end=410 api=cuCtxPushCurrent handle=0xc1 result=CUDA_ERROR_INVALID_VALUE
call 1/1 t=500 end=510 api=cuDevicePrimaryCtxRelease dev=0
call 1/1 t=600 end=610 api=cuCtxGetDevice
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []uint32
	analysis.Of(tr, analysis.OnEvent(func(e *analysis.Event) {
		if e.TID == 1 {
			got = append(got, e.ContextGen)
		}
	}))
	if want := []uint32{0, 0, 1, 1, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("ContextGen of thread 1's calls %v, want %v", got, want)
	}
}
