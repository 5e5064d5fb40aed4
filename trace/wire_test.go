package trace

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var appendWire = flag.Bool("append-wire", false, "append new wire numbers to testdata/wire_numbers.txt")

// wireNumbers lists every number this package puts on the wire, as
// "group name" -> number: API ids, event kinds, object kinds, event field
// bits, section kinds, code kinds, frame flag bits.
func wireNumbers() map[string]uint64 {
	m := map[string]uint64{}
	for a := API(1); a.Valid(); a++ {
		m["api "+a.String()] = uint64(a)
	}
	for k := Kind(1); k < kindLimit; k++ {
		m["kind "+k.String()] = uint64(k)
	}
	for o := ObjectNone; o < objectLimit; o++ {
		m["object "+o.String()] = uint64(o)
	}
	for f := field(0); f < fieldCount; f++ {
		m["field "+eventFields[f].key] = uint64(f)
	}
	for _, k := range []sectionKind{secStrings, secMeta, secGPU, secProcess, secThread, secMapping,
		secSymbol, secDrop, secCode, secEvents, secFooter} {
		m["section "+strings.ReplaceAll(k.String(), " ", "-")] = uint64(k)
	}
	m["code-kind python"] = uint64(CodePython)
	m["code-kind native"] = uint64(CodeNative)
	m["frame-flag unwound"] = FrameUnwound
	m["frame-flag yielded"] = FrameYielded
	m["frame-flag open"] = FrameOpen
	return m
}

// TestWireNumbersAppendOnly: every number in testdata/wire_numbers.txt (the
// numbers traces already hold) must keep its name and value; numbers added
// since must be appended to it (go test ./trace -run WireNumbers
// -append-wire), which never rewrites a line that is there.
func TestWireNumbersAppendOnly(t *testing.T) {
	const path = "testdata/wire_numbers.txt"
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	committed := map[string]uint64{}
	byValue := map[string]string{} // "group value" -> name
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		w := strings.Fields(line)
		if len(w) != 3 {
			t.Fatalf("%s:%d: want \"group name number\", got %q", path, n, line)
		}
		v, err := strconv.ParseUint(w[2], 0, 64)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		key := w[0] + " " + w[1]
		if _, dup := committed[key]; dup {
			t.Fatalf("%s:%d: %s listed twice", path, n, key)
		}
		if other, dup := byValue[w[0]+" "+w[2]]; dup && w[0] != "frame-flag" {
			t.Fatalf("%s:%d: %s %s has the number of %s", path, n, w[0], w[1], other)
		}
		committed[key], byValue[w[0]+" "+w[2]] = v, w[1]
	}
	f.Close()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	current := wireNumbers()
	for key, v := range committed {
		got, ok := current[key]
		switch {
		case !ok:
			t.Errorf("%s (wire number %d) is gone: wire numbers are never removed or renamed (traces hold them)", key, v)
		case got != v:
			t.Errorf("%s is %d, was %d: wire numbers never change (traces hold them); give a new one the next free number", key, got, v)
		}
	}
	var added []string
	for key, v := range current {
		if _, ok := committed[key]; ok {
			continue
		}
		group := strings.Fields(key)[0]
		if other, taken := byValue[fmt.Sprintf("%s %d", group, v)]; taken && group != "frame-flag" {
			t.Errorf("%s takes number %d, which was %s's: numbers are never reused", key, v, other)
			continue
		}
		added = append(added, key)
	}
	if len(added) == 0 {
		return
	}
	if !*appendWire {
		t.Errorf("wire numbers not in %s: %s; append them (go test ./trace -run WireNumbers -append-wire)",
			path, strings.Join(added, ", "))
		return
	}
	sort.Slice(added, func(i, j int) bool {
		gi, gj := strings.Fields(added[i])[0], strings.Fields(added[j])[0]
		if gi != gj {
			return gi < gj
		}
		return current[added[i]] < current[added[j]]
	})
	out, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, key := range added {
		if _, err := fmt.Fprintf(out, "%s %d\n", key, current[key]); err != nil {
			t.Fatal(err)
		}
	}
}
