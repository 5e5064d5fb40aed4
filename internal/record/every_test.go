package record

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// buildProgram compiles one C test program against the simulated driver.
func buildProgram(t *testing.T, src, name string, link ...string) string {
	t.Helper()
	bins, sim := programs(t)
	shimDir, _ := filepath.Abs("../../cudawrap/shim")
	bin := filepath.Join(bins, name)
	args := append([]string{"-O0", "-I", shimDir, "-o", bin, src}, link...)
	args = append(args, "-L", sim, "-ldl")
	if out, err := exec.Command(testCC(), args...).CombinedOutput(); err != nil {
		t.Fatalf("compile %s: %v\n%s", src, err, out)
	}
	return bin
}

type callKey struct {
	api    string
	result int32
}

// TestEveryFunctionRecordedOnce is the every-function test: the generated
// program (cudawrap/sim/testdata/every_gen.c, from the API table) calls
// every exported symbol of the table on the simulated driver by link,
// through dlsym and through cuGetProcAddress_v2 at each (name, version,
// per-thread flag) that returns it; each call must be recorded exactly once,
// in order, with its API and the result the program saw, and the lookups
// as cuGetProcAddress calls (cuProfilerStart and cuProfilerStop, which move
// the capture gate, are the two APIs not recorded as calls).
func TestEveryFunctionRecordedOnce(t *testing.T) {
	bin := buildProgram(t, "../../cudawrap/sim/testdata/every_gen.c", "every", "-lcuda")
	res, out := record(t, []string{bin})
	want, vias, apis, gates := everyCalls(t, out)
	if len(want) == 0 {
		t.Fatalf("every printed no calls:\n%s", out)
	}
	if gates != 6 {
		t.Errorf("cuProfilerStart/Stop called %d times, want 6 (link, dlsym, one lookup each)", gates)
	}
	var got []callKey
	evs := append([]trace.Event(nil), res.Trace.Events...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Start < evs[j].Start })
	for _, ev := range evs {
		if ev.Kind == trace.KindCall {
			got = append(got, callKey{ev.API.String(), int32(ev.Result)})
		}
	}
	if len(got) != len(want) {
		t.Errorf("recorded %d calls, the program made %d", len(got), len(want))
	}
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			t.Fatalf("call %d: recorded %v, the program made %v (and %d more differ or follow)", i, got[i], want[i], len(want)-i-1)
		}
	}
	// Every API of the table was reached, each symbol by link and dlsym,
	// and each lookup of the version table made.
	for _, a := range trace.APIs() {
		if a == trace.APIGetProcAddress {
			continue
		}
		if !apis[a.String()] {
			t.Errorf("%s was not called", a)
		}
	}
	nsym, nlook := 0, 0
	for _, a := range trace.APIs() {
		if a != trace.APIGetProcAddress {
			nsym += len(a.Info().Symbols)
		}
	}
	funcs, err := os.ReadFile("../../trace/spec/cuda_functions.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(funcs), "\n") {
		f := strings.Split(line, " | ")
		if len(f) == 7 && f[0] == "func" && !strings.HasPrefix(f[1], "cuGetProcAddress") && f[3] != "-" {
			nlook += len(strings.Fields(f[3]))
		}
	}
	if vias["link"] != nsym || vias["dlsym"] != nsym || vias["lookups"] != nlook || vias["gpa"] != nlook {
		t.Errorf("calls by way: %v, want %d by link and by dlsym and %d lookups and calls through them", vias, nsym, nlook)
	}
	t.Logf("%d APIs, %d symbols, %d lookups: %d calls recorded", len(apis), nsym, nlook, len(got))
}

// TestDlerrorAndUnknownFunctions: dlsym and dlerror answer under the shim as
// without it, to the letter: NULL and the loader's message for a driver
// name with no driver loaded, naming the object glibc names (the program,
// for its own lookups, where the shim's used to name the loader's object or
// the shim), cleared by a later lookup that succeeds, replaced by a later
// error; and a driver function the table does
// not know is handed out through a counting trampoline: its calls pass
// through (the results are the same) and their number is in the trace.
func TestDlerrorAndUnknownFunctions(t *testing.T) {
	_, sim := programs(t)
	bin := buildProgram(t, "testdata/dlerr.c", "dlerr")
	plain := exec.Command(bin)
	plain.Env = append(os.Environ(), "LD_LIBRARY_PATH="+sim)
	want, err := plain.CombinedOutput()
	if err != nil {
		t.Fatalf("dlerr without the shim: %v\n%s", err, want)
	}
	for _, line := range []string{
		"default cuInit, no driver null=1 error=" + bin + ": undefined symbol: cuInit",
		"default cuNoSuchFunction, no driver null=1 error=" + bin + ": undefined symbol: cuNoSuchFunction",
		"program cuInit, no driver null=1 error=" + bin + ": undefined symbol: cuInit",
		"default cuInit then puts, no driver null=0 error=(null)",
		"default cuInit then a failed dlopen null=0 error=/nonexistent/libnothing.so: cannot open shared object file",
		"local driver: default cuInit null=1 error=" + bin + ": undefined symbol: cuInit",
		"local driver: its own cuInit null=0 error=(null)",
		"default cuInit null=0 error=(null)",
		"future 48", "same pointer 1",
	} {
		if !strings.Contains(string(want), line) {
			t.Fatalf("dlerr without the shim: no %q in\n%s", line, want)
		}
	}
	res, got := record(t, []string{bin})
	if got != string(want) {
		t.Errorf("output changed under the shim:\n--- without\n%s\n--- with\n%s", want, got)
	}
	counts := map[string]uint64{}
	for _, ev := range res.Trace.Events {
		if ev.Kind == trace.KindCount {
			counts[res.Trace.String(ev.Name)] += ev.Size
		}
	}
	if counts["cuCuprofSimFuture"] != 8 || len(counts) != 1 {
		t.Errorf("count events %v, want cuCuprofSimFuture 8", counts)
	}
	if c := callCounts(res.Trace); c["cuGetProcAddress"] != 1 {
		t.Errorf("recorded calls %v, want one cuGetProcAddress", c)
	}
}

// everyCalls reads what the every program printed: the calls it made in
// order (API and result; a lookup is a cuGetProcAddress call), how many
// by each way (link, dlsym, gpa, lookups), the APIs it reached, and how
// many of its calls were cuProfilerStart or cuProfilerStop (not in want:
// they move the capture gate).
func everyCalls(t *testing.T, out string) (want []callKey, vias map[string]int, apis map[string]bool, gates int) {
	t.Helper()
	vias = map[string]int{}
	apis = map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if f[0] == "MISMATCH" {
			t.Errorf("every: %s", sc.Text())
			continue
		}
		if len(f) < 4 {
			t.Fatalf("every: bad line %q", sc.Text())
		}
		r, err := strconv.Atoi(f[len(f)-1])
		if err != nil {
			t.Fatalf("every: bad result in %q", sc.Text())
		}
		switch f[0] {
		case "lookup":
			want = append(want, callKey{"cuGetProcAddress", int32(r)})
			vias["lookups"]++
		case "link", "dlsym", "gpa":
			vias[f[0]]++
			apis[f[2]] = true
			// cuProfilerStart and cuProfilerStop open and close
			// capture ranges instead of being recorded as calls.
			if f[2] == "cuProfilerStart" || f[2] == "cuProfilerStop" {
				gates++
				continue
			}
			want = append(want, callKey{f[2], int32(r)})
		default:
			t.Fatalf("every: bad line %q", sc.Text())
		}
	}
	return want, vias, apis, gates
}
