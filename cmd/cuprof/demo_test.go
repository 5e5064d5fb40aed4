package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/internal/seed"
	"github.com/cuprof/cuprof/trace"
)

// TestDemoChild is the recorded program of TestDemo (a no-op otherwise):
// this test binary stands in for "cuprof demo --run-example".
func TestDemoChild(t *testing.T) {
	n := os.Getenv("CUPROF_DEMO_TEST_CHILD")
	if n == "" {
		t.Skip("only runs as the child of TestDemo")
	}
	if err := seed.TempBuffer([]string{"-n", n, "-warmup", "2"}, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	old := demoChild
	t.Cleanup(func() { demoChild = old })
	demoChild = func(calls int) ([]string, error) {
		return []string{os.Args[0], "-test.run=^TestDemoChild$", "-test.count=1"}, nil
	}
	t.Setenv("CUPROF_DEMO_TEST_CHILD", "30")
	dir := filepath.Join(t.TempDir(), "demo")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"demo", "--sim", "--dir", dir, "-n", "30"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"running examples/tempbuffer on cuprof's simulated driver",
		"tempbuffer (set+stream+alloc+destroy) thr=0 +sync",
		"== cuprof report ",
		"CUDA driver API summary",
		"== flame graph ==",
		"go tool pprof -http=: " + filepath.Join(dir, "tempbuffer.pb.gz"),
		"== cuprof lint ",
		"cuprof lint: ",
		"ERROR pool-trim",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "== cuprof report"), strings.Index(out, "== cuprof lint"); i < 0 || j < i {
		t.Error("the lint findings do not come last")
	}

	// The driver calls nest inside cudawrap's spans.
	tr, err := trace.ReadFile(filepath.Join(dir, "tempbuffer.cuprof"))
	if err != nil {
		t.Fatal(err)
	}
	var allocSpans, nested int
	for i, ev := range tr.Events {
		if ev.Kind != trace.KindSpan || tr.String(ev.Name) != "Buffer.Alloc" {
			continue
		}
		allocSpans++
		for _, c := range tr.Events[i:] {
			if c.Start > ev.End {
				break
			}
			if c.Kind == trace.KindCall && c.TID == ev.TID && c.API.String() == "cuMemAllocAsync" && c.Start >= ev.Start && c.End <= ev.End {
				nested++
				break
			}
		}
	}
	if allocSpans == 0 || nested != allocSpans {
		t.Errorf("%d Buffer.Alloc spans, %d with a cuMemAllocAsync inside", allocSpans, nested)
	}

	// The threshold-0 variants that give memory back (all but a direct
	// allocation without a synchronize) are the widest bars of the flame
	// graph.
	f, err := os.Open(filepath.Join(dir, "tempbuffer.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	vi := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "time" {
			vi = i
		}
	}
	byVariant := map[string]int64{}
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			if name := loc.Line[0].Function.Name; strings.Contains(name, " thr=") {
				byVariant[name] += s.Value[vi]
				break
			}
		}
	}
	type variant struct {
		name string
		v    int64
	}
	var vs []variant
	for name, v := range byVariant {
		vs = append(vs, variant{name, v})
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].v > vs[j].v })
	if len(vs) != 8 {
		t.Fatalf("variants in the profile: %v", byVariant)
	}
	releasing := map[string]bool{
		"tempbuffer (set+stream+alloc+destroy) thr=0":       true,
		"tempbuffer (set+stream+alloc+destroy) thr=0 +sync": true,
		"direct alloc on a stream thr=0 +sync":              true,
	}
	for _, v := range vs[:3] {
		if !releasing[v.name] {
			t.Errorf("widest variants %v", vs)
			break
		}
	}
}

func TestDemoBadCalls(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run([]string{"demo", "-n", strconv.Itoa(-1)}, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "invalid -n") {
		t.Errorf("error %v", err)
	}
	if err := run([]string{"demo", "extra"}, nil, &stdout, &stderr); err == nil {
		t.Error("demo accepted an argument")
	}
}
