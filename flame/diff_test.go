package flame

import (
	"bytes"
	"testing"
)

func TestDiffGolden(t *testing.T) {
	base, _, err := Build(readFixture(t, "diff_base.txt"))
	if err != nil {
		t.Fatal(err)
	}
	newp, _, err := Build(readFixture(t, "diff_new.txt"))
	if err != nil {
		t.Fatal(err)
	}
	before := render(t, base, nil)
	d, err := Diff(base, newp)
	if err != nil {
		t.Fatal(err)
	}
	if render(t, base, nil) != before {
		t.Error("Diff changed its base argument")
	}
	checkProfile(t, d)
	var sawBase bool
	for _, s := range d.Sample {
		if l := s.Label["pprof::base"]; len(l) == 1 && l[0] == "true" {
			sawBase = true
			for _, v := range s.Value {
				if v > 0 {
					t.Errorf("base sample with a positive value: %v", s.Value)
				}
			}
		}
	}
	if !sawBase {
		t.Error("no sample labelled pprof::base=true")
	}
	checkGolden(t, "diff.profile.golden", render(t, d, nil))

	changes, err := CompareAPIs(base, newp)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := WriteAPIChanges(&table, changes); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "diff.table.golden", table.String())
	if changes[0].API != "cuMemAllocAsync" {
		t.Errorf("largest change = %s, want cuMemAllocAsync (-200 ns)", changes[0].API)
	}
}

func TestDiffIncompatible(t *testing.T) {
	tr := readFixture(t, "memory.txt")
	api, _, _ := Build(tr)
	mem, _, _ := Build(tr, WithView(ViewMemory))
	if _, err := Diff(api, mem); err == nil {
		t.Error("Diff of an api and a memory profile: no error")
	}
	if _, err := CompareAPIs(mem, api); err == nil {
		t.Error("CompareAPIs on a memory profile: no error")
	}
}
