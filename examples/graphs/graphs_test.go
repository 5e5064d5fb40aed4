package graphs

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/trace"
)

// build compiles csrc/graphs.c into dir.
func build(t *testing.T, dir string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc: the example, the shim and the simulated driver cannot be built")
	}
	exe := filepath.Join(dir, "graphs")
	if out, err := exec.Command(cc, "-O1", "-Wall", "-o", exe, filepath.Join("csrc", "graphs.c"), "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("compile graphs.c: %v\n%s", err, out)
	}
	return exe
}

// TestRecordedOnSimulatedDriver records the example on the simulated driver
// and checks what the analysis makes of it: a capture per captured step, a
// graph per capture, one graph exec replayed every step in the replay and
// update variants and one exec per step in the reinstantiate variant, the
// library's kernel and function ending at its unload; and that lint finds
// the per-step instantiation (and only there) and the capture check before
// every eager launch.
func TestRecordedOnSimulatedDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	const steps, kernels, warmup = 12, 4, 3
	dir := t.TempDir()
	exe := build(t, dir)
	t.Setenv("CUPROF_SIM_COST_SCALE", "0")
	var stdout, stderr bytes.Buffer
	out := filepath.Join(dir, "graphs.cuprof")
	res, err := record.Run(context.Background(),
		[]string{exe, "-n", strconv.Itoa(steps), "-k", strconv.Itoa(kernels)},
		record.WithSim(true), record.WithOutput(out), record.WithStdio(nil, &stdout, &stderr))
	if err != nil {
		t.Fatalf("record: %v\nstderr:\n%s", err, stderr.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("the example exited with %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, stdout.String(), stderr.String())
	}
	for _, v := range []string{"eager", "replay", "reinstantiate", "update"} {
		if !strings.Contains(stdout.String(), "\n"+v+" ") {
			t.Errorf("the example printed no line for %s:\n%s", v, stdout.String())
		}
	}
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}

	calls := map[trace.API]int{}
	for i := range tr.Events {
		if e := &tr.Events[i]; e.Kind == trace.KindCall {
			calls[e.API]++
			if !e.Result.OK() {
				t.Errorf("%s failed with %s", e.API, e.Result)
			}
		}
	}
	runs := steps + warmup          // timed steps and warm-up steps of each variant
	captures := 1 + runs + 1 + runs // replay's one, reinstantiate's and update's per step
	want := map[trace.API]int{
		trace.APIStreamIsCapturing:         runs * kernels,
		trace.APILaunchKernel:              runs*kernels + captures*kernels,
		trace.APIStreamBeginCapture:        captures,
		trace.APIStreamEndCapture:          captures,
		trace.APIGraphInstantiateWithFlags: 1 + runs + 1,
		trace.APIGraphLaunch:               3 * runs,
		trace.APIGraphExecUpdate:           runs,
		trace.APIGraphExecDestroy:          1 + runs + 1,
		trace.APIGraphDestroy:              captures,
		trace.APILibraryLoadData:           1,
		trace.APILibraryGetKernel:          1,
		trace.APIKernelGetFunction:         1,
		trace.APILibraryUnload:             1,
	}
	for api, n := range want {
		if calls[api] != n {
			t.Errorf("%d %s calls recorded, want %d", calls[api], api, n)
		}
	}

	a := analysis.Of(tr)
	byKind := map[trace.Object][]*analysis.Object{}
	for i := range a.Objects {
		o := &a.Objects[i]
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	if n := len(byKind[trace.ObjectCapture]); n != captures {
		t.Errorf("%d captures, want %d", n, captures)
	}
	for _, o := range byKind[trace.ObjectCapture] {
		if o.Reason != analysis.EndDestroyed || tr.Events[o.Destroy].API != trace.APIStreamEndCapture {
			t.Errorf("capture of stream %#x ended %s, not by cuStreamEndCapture", o.Handle, o.Reason)
		}
	}
	if n := len(byKind[trace.ObjectGraph]); n != captures {
		t.Errorf("%d graphs, want one per capture (%d)", n, captures)
	}
	execs := byKind[trace.ObjectGraphExec]
	if len(execs) != 1+runs+1 {
		t.Fatalf("%d graph execs, want %d", len(execs), 1+runs+1)
	}
	// replay's exec is launched every step; reinstantiate's once each;
	// update's is updated and launched every step
	uses := []int32{execs[0].Uses, execs[1].Uses, execs[len(execs)-1].Uses}
	if uses[0] != int32(runs) || uses[1] != 1 || uses[2] != int32(2*runs) {
		t.Errorf("graph exec uses (replay, first reinstantiated, update) = %v, want [%d 1 %d]", uses, runs, 2*runs)
	}
	for _, x := range execs {
		if x.Reason != analysis.EndDestroyed || x.Parent == 0 {
			t.Errorf("graph exec %#x: ended %s, made from graph %#x", x.Handle, x.Reason, x.Parent)
		}
	}
	for _, k := range []trace.Object{trace.ObjectKernel, trace.ObjectFunction} {
		if os := byKind[k]; len(os) != 1 || os[0].Reason != analysis.EndOwner {
			t.Errorf("%s objects %d, want 1 ended with its library", k, len(os))
		}
	}

	findings := map[string][]lint.Finding{}
	for _, f := range lint.Run(tr) {
		findings[f.Rule] = append(findings[f.Rule], f)
	}
	if fs := findings["graph-reinstantiate"]; len(fs) != 1 || fs[0].Count != runs || fs[0].CostNs < 0 {
		t.Errorf("graph-reinstantiate findings %+v, want one of %d execs", fs, runs)
	}
	if fs := findings["cached-query"]; len(fs) != 1 || fs[0].Count != runs*kernels-1 ||
		fs[0].Example.API != "cuStreamIsCapturing" {
		t.Errorf("cached-query findings %+v, want one of %d repeated capture checks", fs, runs*kernels-1)
	}
}
