package record

import (
	"fmt"
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

// TestPassThroughSwitch changes the pass-through set from the program
// (testdata/passswitch.c, through the shim's cuprof_pass_through): the
// calls are recorded exactly in the stretches where their API did not pass
// through, a refused name (not in the table, or an API that creates
// objects) leaves the set as it was, and each change writes the calls
// passed through since the last as a count event at its time, so the trace
// says how many passed through in each stretch. Started with
// --pass-through cuStreamQuery the program sees that set first, and
// without --pass-through it sees none.
func TestPassThroughSwitch(t *testing.T) {
	bin := buildProgram(t, "testdata/passswitch.c", "passswitch", "-lcuda")
	for _, start := range []string{"", "cuStreamQuery"} {
		t.Run("start="+start, func(t *testing.T) {
			var opts []Option
			if start != "" {
				apis, err := ParsePassThrough(start)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, WithPassThrough(apis))
			}
			res, out := record(t, []string{bin}, opts...)
			n := 0
			if start != "" {
				n = 1
			}
			want := fmt.Sprintf("list %d %s\nset 1\nlist 1 cuGetErrorName\nsmall -5\nset -2\nset -3\nset 0\nset 2\nset 0\n", n, start)
			if out != want {
				t.Fatalf("the program printed\n%s\nwant\n%s", out, want)
			}
			tr := res.Trace
			if got := fmt.Sprint(seqs(tr)); got != "[0 1 2 3 4 11 12 13 16]" {
				t.Errorf("recorded cuGetErrorName calls %s, want [0 1 2 3 4 11 12 13 16]", got)
			}
			at := map[int]int64{} // seq: start
			var counts []trace.Event
			for _, e := range tr.Events {
				switch {
				case e.Kind == trace.KindCall && e.API == trace.APIGetErrorName:
					at[int(e.Flags)] = e.Start
				case e.Kind == trace.KindCount:
					if name := tr.String(e.Name); name != "cuGetErrorName" {
						t.Errorf("count event for %s, want only cuGetErrorName's", name)
						continue
					}
					counts = append(counts, e)
				}
			}
			sort.Slice(counts, func(i, j int) bool { return counts[i].Start < counts[j].Start })
			if len(counts) != 2 || counts[0].Size != 6 || counts[1].Size != 2 {
				t.Fatalf("count events %v, want 6 calls then 2", counts)
			}
			// seq 5-10 counted at the change after seq 10, before seq 11;
			// seq 14-15 at the last change, before seq 16
			if c := counts[0].Start; c < at[4] || c > at[11] {
				t.Errorf("the first count at %d, want between seq 4 (%d) and seq 11 (%d)", c, at[4], at[11])
			}
			if c := counts[1].Start; c < at[13] || c > at[16] {
				t.Errorf("the second count at %d, want between seq 13 (%d) and seq 16 (%d)", c, at[13], at[16])
			}
		})
	}
}
