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

// TestMergeKeepsRanksApart: two hosts' ranks with the same pid (PID
// namespaces, containers) stay two processes with their own events,
// threads and drops; the second gets a PID of its own and keeps its id in
// OSPID. The same process in two files of one host is still one.
func TestMergeKeepsRanksApart(t *testing.T) {
	rank := func(host, r string, start int64) *Trace {
		return &Trace{Meta: Meta{Host: host}, Strings: []string{""},
			Processes: []Process{{PID: 13, Env: map[string]string{"SLURM_PROCID": r}, Start: start}},
			Threads:   []Thread{{PID: 13, TID: 13, Name: "main"}},
			Drops:     []Drop{{PID: 13, TID: 13, Events: 1, Reason: "buffer full"}},
			Events: []Event{{Kind: KindCall, API: APIInit, PID: 13, TID: 13, Start: start, End: start + 5},
				{Kind: KindCall, API: APIInit, PID: 13, TID: 13, Start: start + 10, End: start + 15}}}
	}
	// Colliding host names too: the hosts differ in their namespaces only.
	a, b := rank("node", "0", 100), rank("node", "1", 100)
	a.Processes[0].HostNS, b.Processes[0].HostNS = "uts:1", "uts:2"
	m := Merge(a, b)
	if len(m.Processes) != 2 {
		t.Fatalf("%d processes, want 2: %+v", len(m.Processes), m.Processes)
	}
	p0, p1 := m.Processes[0], m.Processes[1]
	if p0.PID != 13 || p0.OSPID != 0 || p1.PID == 13 || p1.OSPID != 13 || p1.Env["SLURM_PROCID"] != "1" {
		t.Errorf("processes: %+v", m.Processes)
	}
	calls := map[uint32]int{}
	for _, e := range m.Events {
		calls[e.PID]++
	}
	if calls[p0.PID] != 2 || calls[p1.PID] != 2 {
		t.Errorf("calls per process: %v", calls)
	}
	if len(m.Threads) != 2 || len(m.Drops) != 2 || m.Drops[1].PID != p1.PID {
		t.Errorf("threads %+v drops %+v", m.Threads, m.Drops)
	}
	// Hosts told apart only by name: the name is kept per process.
	m = Merge(rank("node0", "0", 100), rank("node1", "1", 100))
	if len(m.Processes) != 2 || m.Processes[0].Host != "node0" || m.Processes[1].Host != "node1" {
		t.Errorf("processes of two hosts: %+v", m.Processes)
	}
	// One process recorded in two files is still one.
	m = Merge(rank("node0", "0", 100), rank("node0", "0", 200))
	if len(m.Processes) != 1 || len(m.Events) != 4 || m.Processes[0].Start != 100 {
		t.Errorf("one process in two files: %+v, %d events", m.Processes, len(m.Events))
	}
}
