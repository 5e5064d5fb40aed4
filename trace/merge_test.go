package trace

import (
	"bytes"
	"testing"

	"github.com/cuprof/cuprof/internal/golden"
)

// splitByProcess returns one trace per process of t, each with its own
// string table (interned in reverse order, so IDs differ from t's).
func splitByProcess(t *Trace) []*Trace {
	var out []*Trace
	for _, p := range t.Processes {
		part := &Trace{Meta: t.Meta, Processes: []Process{p}}
		st := NewStringTable()
		for i := len(t.Strings) - 1; i > 0; i-- {
			st.ID(t.Strings[i])
		}
		// Code entries in reverse order too.
		codes := make([]CodeID, len(t.Code))
		if len(t.Code) > 0 {
			part.Code = []Code{{}}
		}
		for i := len(t.Code) - 1; i > 0; i-- {
			c := t.Code[i]
			c.Name, c.Module, c.File = st.ID(t.String(c.Name)), st.ID(t.String(c.Module)), st.ID(t.String(c.File))
			codes[i] = CodeID(len(part.Code))
			part.Code = append(part.Code, c)
		}
		for _, th := range t.Threads {
			if th.PID == p.PID {
				part.Threads = append(part.Threads, th)
			}
		}
		for _, m := range t.Mappings {
			if m.PID == p.PID {
				part.Mappings = append(part.Mappings, m)
			}
		}
		for _, s := range t.Symbols {
			if s.PID == p.PID {
				part.Symbols = append(part.Symbols, s)
			}
		}
		for _, d := range t.Drops {
			if d.PID == p.PID {
				part.Drops = append(part.Drops, d)
			}
		}
		for _, e := range t.Events {
			if e.PID == p.PID {
				e.Name = st.ID(t.String(e.Name))
				e.Domain = st.ID(t.String(e.Domain))
				if int(e.Code) < len(codes) {
					e.Code = codes[e.Code]
				}
				part.Events = append(part.Events, e)
			}
		}
		part.Strings = st.Strings
		out = append(out, part)
	}
	return out
}

func canonicalText(t *testing.T, tr *Trace) string {
	t.Helper()
	c := *tr
	c.Events = canonical(tr.Events)
	var buf bytes.Buffer
	if err := WriteText(&buf, &c); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestMergeProcesses(t *testing.T) {
	tr := genTrace(t, 30_000, 3, 2, 11)
	parts := splitByProcess(tr)
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	// Merging through files: each part written and read back.
	for i, p := range parts {
		var buf bytes.Buffer
		if err := WriteBinary(&buf, p); err != nil {
			t.Fatal(err)
		}
		back, err := ReadBinary(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = back
	}
	got := Merge(parts[2], parts[0], parts[1])
	if !eventsSorted(got.Events) {
		t.Error("merged events not sorted")
	}
	if got.Processes[0].PID != tr.Processes[2].PID {
		t.Errorf("tables not in input order: %+v", got.Processes)
	}
	// In the original order, the merge is the whole trace again.
	got2 := Merge(parts...)
	if a, b := canonicalText(t, got2), canonicalText(t, tr); a != b {
		t.Errorf("merge of the parts differs from the whole:\n%s", golden.Diff(b, a))
	}
	if len(got.Events) != len(tr.Events) || len(got.Strings) != len(tr.Strings) {
		t.Errorf("merged %d events %d strings, want %d %d", len(got.Events), len(got.Strings), len(tr.Events), len(tr.Strings))
	}
}

func TestMergeMeta(t *testing.T) {
	a := &Trace{Meta: Meta{Host: "a", Capture: "shim", WallStart: 1000, MonoStart: 100,
		Overhead: Overhead{InsideNs: 10, AddedNs: 20, InPlaceNs: 6, InPlaceCalls: 100}, GPUs: []GPU{{Ordinal: 0, Name: "H200"}}},
		Strings:   []string{"", "x"},
		Processes: []Process{{PID: 1, Start: 100, End: 200}},
		Drops:     []Drop{{PID: 1, TID: 1, Events: 2, Reason: "buffer full"}},
		Events:    []Event{{Kind: KindCall, PID: 1, TID: 1, Start: 150, End: 160, Device: NoDevice}},
		Loss:      &Loss{Offset: 10, Bytes: 5, Reason: "cut"},
	}
	b := &Trace{Meta: Meta{Host: "b", DriverVersion: 13000, WallStart: 5000, MonoStart: 50,
		Overhead: Overhead{InsideNs: 30, AddedNs: 40, InPlaceNs: -2, InPlaceCalls: 50}, GPUs: []GPU{{Ordinal: 0, Name: "H200"}, {Ordinal: 1, Name: "H200"}}},
		Strings:   []string{"", "y", "x"},
		Processes: []Process{{PID: 2, Start: 60, End: 70}},
		Drops:     []Drop{{PID: 1, TID: 1, Events: 3, Reason: "buffer full"}},
		Events: []Event{{Kind: KindMark, PID: 2, TID: 2, Start: 60, End: 60, Name: 2, Device: NoDevice},
			{Kind: KindCall, PID: 2, TID: 2, Start: 61, End: 65, Device: NoDevice}},
	}
	m := Merge(a, b)
	if m.Meta.Host != "a,b" || m.Meta.Capture != "shim" || m.Meta.DriverVersion != 13000 || len(m.Meta.GPUs) != 2 {
		t.Errorf("meta = %+v", m.Meta)
	}
	// one call each: the mean of the two; the calls measured in place add up
	if m.Meta.Overhead != (Overhead{InsideNs: 20, AddedNs: 30, InPlaceNs: 2, InPlaceCalls: 150}) {
		t.Errorf("overhead = %+v", m.Meta.Overhead)
	}
	if m.TotalDrops() != 5 || len(m.Drops) != 1 {
		t.Errorf("drops = %+v", m.Drops)
	}
	if m.Loss == nil || m.Loss.Bytes != 5 || m.Loss.Reason != "input 0: cut" {
		t.Errorf("loss = %+v", m.Loss)
	}
	// b's clock: wall 5000 at mono 50, a's: wall 1000 at mono 100; b's times
	// move by (5000-50)-(1000-100) = 4050.
	var mark *Event
	for i := range m.Events {
		if m.Events[i].Kind == KindMark {
			mark = &m.Events[i]
		}
	}
	if mark == nil || mark.Start != 60+4050 || m.String(mark.Name) != "x" {
		t.Errorf("mark = %+v", mark)
	}
	if p := m.Process(2); p == nil || p.Start != 60+4050 {
		t.Errorf("process 2 = %+v", p)
	}
	if a.Events[0].Start != 150 || b.Events[0].Start != 60 {
		t.Error("Merge modified its inputs")
	}
	if !eventsSorted(m.Events) {
		t.Error("not sorted")
	}
}
