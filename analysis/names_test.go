package analysis_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
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
