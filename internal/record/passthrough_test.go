package record

import (
	"sort"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// TestPassThrough runs the every-function program with three APIs passed
// through: none of their calls is recorded, however it was reached (by
// link, dlsym or cuGetProcAddress), each API's count event says how many
// calls the program made of it, and every other call is recorded exactly
// once, in order, as without the option.
func TestPassThrough(t *testing.T) {
	names := []string{"cuCtxGetStreamPriorityRange", "cuStreamIsCapturing", "cuGetErrorName"}
	apis, err := ParsePassThrough(strings.Join(names, ","))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildProgram(t, "../../cudawrap/sim/testdata/every_gen.c", "every", "-lcuda")
	res, out := record(t, []string{bin}, WithPassThrough(apis))
	made, _, _, _ := everyCalls(t, out)
	passed := map[string]bool{}
	for _, n := range names {
		passed[n] = true
	}
	wantCounts := map[string]uint64{}
	var want []callKey
	for _, c := range made {
		if passed[c.api] {
			wantCounts[c.api]++
		} else {
			want = append(want, c)
		}
	}
	for _, n := range names {
		if wantCounts[n] < 3 {
			t.Fatalf("the program called %s %d times, want it reached by link, dlsym and cuGetProcAddress", n, wantCounts[n])
		}
	}
	evs := append([]trace.Event(nil), res.Trace.Events...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Start < evs[j].Start })
	var got []callKey
	counts := map[string]uint64{}
	for _, ev := range evs {
		switch ev.Kind {
		case trace.KindCall:
			got = append(got, callKey{ev.API.String(), int32(ev.Result)})
		case trace.KindCount:
			name := res.Trace.String(ev.Name)
			if _, ok := trace.CountedAPI(name); !ok {
				t.Errorf("count event for %q, which is no API of the table", name)
			}
			counts[name] += ev.Size
		}
	}
	for _, n := range names {
		if counts[n] != wantCounts[n] {
			t.Errorf("%s: counted %d calls passed through, the program made %d", n, counts[n], wantCounts[n])
		}
	}
	if len(counts) != len(names) {
		t.Errorf("count events for %v, want only %v", counts, names)
	}
	if len(got) != len(want) {
		t.Errorf("recorded %d calls, want the program's %d less the %d passed through", len(got), len(want), len(made)-len(want))
	}
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			t.Fatalf("call %d: recorded %v, the program made %v", i, got[i], want[i])
		}
	}
}

func TestParsePassThrough(t *testing.T) {
	apis, err := ParsePassThrough(" cuCtxGetDevice, cuStreamIsCapturing,cuCtxGetDevice ")
	if err != nil {
		t.Fatal(err)
	}
	if len(apis) != 2 || apis[0] != trace.APICtxGetDevice || apis[1].String() != "cuStreamIsCapturing" {
		t.Errorf("parsed %v, want cuCtxGetDevice and cuStreamIsCapturing once each", apis)
	}
	for list, want := range map[string]string{
		"cuNoSuchCall":              `no driver API named "cuNoSuchCall"`,
		"cuCtxGetDevice,cuMemAlloc": "cuMemAlloc changes what cuprof knows",
		"cuCtxSetCurrent":           "cuCtxSetCurrent changes what cuprof knows",
		" , ":                       "name at least one driver API",
	} {
		if _, err := ParsePassThrough(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePassThrough(%q) = %v, want an error saying %q", list, err, want)
		}
	}
}
