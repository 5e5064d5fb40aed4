package perfetto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/golden"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

var update = golden.NewFlag("update", "rewrite golden files")

func readFixture(t testing.TB, name string) *trace.Trace {
	t.Helper()
	return tracetest.ReadFile(t, "testdata/"+name)
}

// decoded is a Perfetto trace checked for the invariants the UI relies on,
// its events' times, tracks and names resolved.
type decoded struct {
	tracks map[uint64]*pTrackDesc
	order  []uint64
	events map[uint64][]tsEvent // per track, in file order
}

type tsEvent struct {
	t uint64  // absolute, ns on the trace's clock
	e *pEvent // its Track and a begin's Name resolved
}

type sliceRec struct {
	name       string
	cat        string
	start, end uint64
	depth      int
	ev         *pEvent
	endEv      *pEvent // its end: arguments known when it ended
}

// args returns the slice's arguments, its begin's then its end's.
func (s *sliceRec) args() map[string]string {
	m := map[string]string{}
	for _, e := range []*pEvent{s.ev, s.endEv} {
		if e == nil {
			continue
		}
		for _, a := range e.Annots {
			if a.isInt {
				m[a.Name] = fmt.Sprint(a.Int)
			} else {
				m[a.Name] = a.Str
			}
		}
	}
	return m
}

// seqState is what a packet sequence set up: its interned names, its
// defaults and the sequence-scoped clocks of its clock snapshot.
type seqState struct {
	valid               bool // a packet cleared its incremental state
	names, cats, annots map[uint64]string
	defaults            *pDefaults
	clocks              map[uint64]*seqClock
}

// seqClock is a sequence-scoped clock: the time base on it was boot on
// BOOTTIME; last is, for an incremental one, its time at the sequence's
// last packet on it.
type seqClock struct {
	base, boot, last uint64
	incremental      bool
}

// decodeAndCheck decodes a Perfetto trace as Perfetto's trace processor
// reads it (per packet sequence: interned names, TracePacketDefaults,
// clock snapshots and incremental timestamps), resolves each event's
// absolute time, track and names, and checks what the UI relies on.
func decodeAndCheck(t *testing.T, data []byte) (*decoded, map[uint64][]sliceRec) {
	t.Helper()
	pkts, err := decodeTrace(data)
	if err != nil {
		t.Fatal(err)
	}
	d := &decoded{tracks: map[uint64]*pTrackDesc{}, events: map[uint64][]tsEvent{}}
	seqs := map[uint64]*seqState{}
	for i, p := range pkts {
		if p.SeqID == 0 {
			t.Fatalf("packet %d: no sequence id", i)
		}
		sq := seqs[p.SeqID]
		if sq == nil {
			sq = &seqState{}
			seqs[p.SeqID] = sq
		}
		needs := p.SeqFlags&seqNeedsIncrementalState != 0
		if p.SeqFlags&^(seqIncrementalStateCleared|seqNeedsIncrementalState) != 0 {
			t.Fatalf("packet %d: sequence flags %d", i, p.SeqFlags)
		}
		// every packet after a sequence's defaults needs its incremental state
		if sq.defaults != nil && !needs {
			t.Fatalf("packet %d: sequence %d has defaults, the packet does not say it needs them", i, p.SeqID)
		}
		if p.SeqFlags&seqIncrementalStateCleared != 0 {
			*sq = seqState{valid: true, names: map[uint64]string{}, cats: map[uint64]string{}, annots: map[uint64]string{},
				clocks: map[uint64]*seqClock{}}
		}
		if (needs || p.Defaults != nil || p.EventNames != nil || p.Snapshot != nil) && !sq.valid {
			t.Fatalf("packet %d: sequence %d's incremental state used before it was cleared", i, p.SeqID)
		}
		if p.Defaults != nil {
			sq.defaults = p.Defaults
		}
		for _, tab := range []struct{ in, into map[uint64]string }{{p.EventNames, sq.names},
			{p.Categories, sq.cats}, {p.AnnotNames, sq.annots}} {
			for iid, n := range tab.in {
				if _, ok := tab.into[iid]; ok {
					t.Fatalf("packet %d: iid %d interned twice on sequence %d", i, iid, p.SeqID)
				}
				tab.into[iid] = n
			}
		}
		if sn := p.Snapshot; sn != nil {
			// the trace processor reads nothing else of a snapshot's packet
			if p.Track != nil || p.Event != nil || p.EventNames != nil {
				t.Fatalf("packet %d: clock snapshot with other contents", i)
			}
			if sn.Primary != 0 && sn.Primary != clockBoottime {
				t.Fatalf("packet %d: primary trace clock %d", i, sn.Primary)
			}
			boot, hasBoot := uint64(0), false
			for _, c := range sn.Clocks {
				if c.ID == clockBoottime {
					boot, hasBoot = c.Timestamp, true
				}
			}
			for _, c := range sn.Clocks {
				switch {
				case c.ID == clockBoottime:
					if c.Incremental {
						t.Fatalf("packet %d: BOOTTIME incremental", i)
					}
				case c.ID >= 64 && c.ID < 128 && hasBoot:
					sq.clocks[c.ID] = &seqClock{base: c.Timestamp, boot: boot, last: c.Timestamp, incremental: c.Incremental}
				default:
					t.Fatalf("packet %d: clock %d not tied to BOOTTIME", i, c.ID)
				}
			}
			continue
		}
		switch {
		case p.Track != nil:
			td := p.Track
			if _, dup := d.tracks[td.UUID]; dup || td.UUID == 0 {
				t.Fatalf("track uuid %d reused or zero", td.UUID)
			}
			if td.Parent != 0 && d.tracks[td.Parent] == nil {
				t.Fatalf("track %q: parent declared later or never", td.Name)
			}
			d.tracks[td.UUID] = td
			d.order = append(d.order, td.UUID)
		case p.Event != nil:
			// the time: on the packet's clock, else the sequence's
			// default one, else BOOTTIME (the trace's)
			if !p.hasTS {
				t.Fatalf("packet %d: event without timestamp", i)
			}
			clock := p.ClockID
			if clock == 0 && sq.defaults != nil {
				clock = sq.defaults.ClockID
			}
			ts := p.Timestamp
			switch c := sq.clocks[clock]; {
			case clock == 0 || clock == clockBoottime:
			case c == nil:
				t.Fatalf("packet %d: clock %d not in a snapshot of sequence %d", i, clock, p.SeqID)
			case c.incremental:
				c.last += p.Timestamp
				ts = c.boot + (c.last - c.base)
			default:
				ts = c.boot + (p.Timestamp - c.base)
			}
			if p.Event.Track == 0 && sq.defaults != nil {
				p.Event.Track = sq.defaults.TrackUUID
			}
			// an event naming interned names says it needs the
			// sequence's incremental state (ends without arguments,
			// counters and instants name none and need not, unless the
			// sequence has defaults)
			usesIIDs := p.Event.NameIID != 0 || len(p.Event.CategoryIIDs) > 0 || len(p.Event.Annots) > 0
			if usesIIDs && !needs {
				t.Fatalf("packet %d: event with interned names and sequence flags %d", i, p.SeqFlags)
			}
			if d.tracks[p.Event.Track] == nil {
				t.Fatalf("packet %d: event on undeclared track", i)
			}
			if p.Event.Type == typeSliceBegin {
				// a name given in full (a lifetime's past maxObjectNames)
				// or an interned one
				if p.Event.Name == "" || p.Event.NameIID != 0 {
					n, ok := sq.names[p.Event.NameIID]
					if !ok {
						t.Fatalf("packet %d: name iid %d not interned on sequence %d", i, p.Event.NameIID, p.SeqID)
					}
					p.Event.Name = n
				}
				for _, c := range p.Event.CategoryIIDs {
					cat, ok := sq.cats[c]
					if !ok {
						t.Fatalf("packet %d: category iid %d not interned", i, c)
					}
					p.Event.Categories = append(p.Event.Categories, cat)
				}
			}
			for j := range p.Event.Annots {
				a := &p.Event.Annots[j]
				n, ok := sq.annots[a.NameIID]
				if !ok {
					t.Fatalf("packet %d: annotation name iid %d not interned", i, a.NameIID)
				}
				a.Name = n
			}
			d.events[p.Event.Track] = append(d.events[p.Event.Track], tsEvent{ts, p.Event})
		default:
			t.Fatalf("packet %d: neither track nor event", i)
		}
	}
	// slices nest per track, timestamps never go back on a track
	slices := map[uint64][]sliceRec{}
	for tr, evs := range d.events {
		var stack []int
		var last uint64
		for _, te := range evs {
			if te.t < last {
				t.Fatalf("track %q: time goes back", d.tracks[tr].Name)
			}
			last = te.t
			switch te.e.Type {
			case typeSliceBegin:
				slices[tr] = append(slices[tr], sliceRec{name: te.e.Name, start: te.t, depth: len(stack),
					ev: te.e, cat: strings.Join(te.e.Categories, ",")})
				stack = append(stack, len(slices[tr])-1)
			case typeSliceEnd:
				if len(stack) == 0 {
					t.Fatalf("track %q: end without begin", d.tracks[tr].Name)
				}
				s := &slices[tr][stack[len(stack)-1]]
				s.end, s.endEv = te.t, te.e
				stack = stack[:len(stack)-1]
			case typeCounter:
				if d.tracks[tr].Counter == nil {
					t.Fatalf("counter value on a non-counter track")
				}
			}
		}
		if len(stack) != 0 {
			t.Fatalf("track %q: %d slices never end", d.tracks[tr].Name, len(stack))
		}
	}
	return d, slices
}

func TestPerfettoDecodesNestsAndPairs(t *testing.T) {
	tr := readFixture(t, "small.txt")
	var buf bytes.Buffer
	if err := Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	d, slices := decodeAndCheck(t, buf.Bytes())
	calls := 0
	for i := range tr.Events {
		if tr.Events[i].Kind == trace.KindCall {
			calls++
		}
	}
	an := analysis.Of(tr)
	byCat := map[string]int{}
	flowsOut, flowsIn := map[uint64]string{}, map[uint64]string{}
	for u, ss := range slices {
		td := d.tracks[u]
		for _, s := range ss {
			switch s.cat {
			case "lifetime":
				byCat["lifetime"]++
				if s.depth != 0 {
					t.Errorf("lifetime %s nested on lane %q", s.name, td.Name)
				}
				if td.Parent == 0 || d.tracks[td.Parent].hasChildOrder == false {
					t.Errorf("lifetime lane %q not under a kind group", td.Name)
				}
			case "range":
				byCat["range"]++
			default:
				byCat["call"]++
				if td.Thread == nil {
					t.Errorf("call %s not on a thread track", s.name)
				}
			}
			for _, f := range s.ev.FlowIDs {
				flowsOut[f] = s.name
			}
			for _, f := range s.ev.TermFlowIDs {
				flowsIn[f] = s.name
			}
		}
	}
	ranges := analysis.Of(tr).Ranges
	if byCat["call"] != calls || byCat["lifetime"] != len(an.Objects) || byCat["range"] != len(ranges) {
		t.Errorf("slices %v; want %d calls, %d lifetimes, %d ranges", byCat, calls, len(an.Objects), len(ranges))
	}
	// every freed allocation has one flow from its allocating call to its
	// free (an allocation never freed starts one that nothing ends: viewers
	// draw flows with both ends)
	if len(flowsIn) != 1 {
		t.Errorf("flows out %v in %v", flowsOut, flowsIn)
	}
	for id, to := range flowsIn {
		if flowsOut[id] != "cuMemAllocAsync" || to != "cuMemFreeAsync" {
			t.Errorf("flow %x: %s -> %s", id, flowsOut[id], to)
		}
	}
	allocs := 0
	for _, o := range an.Objects {
		if analysis.IsAllocation(o.Kind) {
			allocs++
		}
	}
	if len(flowsOut) != allocs {
		t.Errorf("%d flows start, want one per allocation (%d)", len(flowsOut), allocs)
	}
	// the device 0 memory counter peaks at both allocations and returns to 0
	found := false
	for u, td := range d.tracks {
		if td.Counter == nil || !strings.HasPrefix(td.Name, "device 0 memory") {
			continue
		}
		if d.tracks[td.Parent].Process.PID != 100 {
			continue
		}
		found = true
		if td.Counter.Unit != counterUnitBytes {
			t.Errorf("counter unit %d", td.Counter.Unit)
		}
		var peak, last int64
		for _, te := range d.events[u] {
			if te.e.CounterValue > peak {
				peak = te.e.CounterValue
			}
			last = te.e.CounterValue
		}
		if peak != 1048576+4096 || last != 0 {
			t.Errorf("device 0 bytes: peak %d, last %d", peak, last)
		}
	}
	if !found {
		t.Error("no device 0 bytes-in-use counter")
	}
}

// overlapping lifetimes go on sibling lanes and never mis-nest
func TestOverlappingLifetimesUseSiblingLanes(t *testing.T) {
	tr := &trace.Trace{Strings: []string{""}, Processes: []trace.Process{{PID: 1}}}
	// a: [10, 100], b: [20, 50], c: [60, 200] (crosses a's end), d: [150, 160]
	for _, iv := range [][3]int64{{0xa, 10, 100}, {0xb, 20, 50}, {0xc, 60, 200}, {0xd, 150, 160}} {
		tr.Events = append(tr.Events,
			trace.Event{Kind: trace.KindCall, API: trace.APIStreamCreate, PID: 1, TID: 1, Device: 0, Start: iv[1], End: iv[1] + 1, Handle: uint64(iv[0])},
			trace.Event{Kind: trace.KindCall, API: trace.APIStreamDestroy, PID: 1, TID: 1, Device: 0, Start: iv[2] - 1, End: iv[2], Handle: uint64(iv[0])})
	}
	trace.SortEvents(tr.Events)
	var buf bytes.Buffer
	if err := Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	d, slices := decodeAndCheck(t, buf.Bytes())
	lanes := map[string][]string{}
	for u, ss := range slices {
		for _, s := range ss {
			if s.cat == "lifetime" {
				lanes[d.tracks[u].Name] = append(lanes[d.tracks[u].Name], s.name)
			}
		}
	}
	want := map[string][]string{
		"stream lifetimes #0": {"stream 0xa", "stream 0xd"},
		"stream lifetimes #1": {"stream 0xb", "stream 0xc"},
	}
	if fmt.Sprint(lanes) != fmt.Sprint(want) {
		t.Errorf("lanes %v, want %v", lanes, want)
	}
}

// dump renders a decoded trace as text: the track tree, then each track's
// events.
func dump(d *decoded) string {
	var b strings.Builder
	children := map[uint64][]uint64{}
	var roots []uint64
	for _, u := range d.order {
		if p := d.tracks[u].Parent; p != 0 {
			children[p] = append(children[p], u)
		} else {
			roots = append(roots, u)
		}
	}
	var walk func(u uint64, depth int)
	walk = func(u uint64, depth int) {
		td := d.tracks[u]
		ind := strings.Repeat("  ", depth)
		switch {
		case td.Process != nil:
			fmt.Fprintf(&b, "%sprocess pid=%d name=%q cmd=%q\n", ind, td.Process.PID, td.Process.Name, td.Process.Cmdline)
		case td.Thread != nil:
			fmt.Fprintf(&b, "%sthread tid=%d name=%q\n", ind, td.Thread.TID, td.Thread.Name)
		case td.Counter != nil:
			fmt.Fprintf(&b, "%scounter %q unit=%d rank=%d\n", ind, td.Name, td.Counter.Unit, td.SiblingRank)
		default:
			fmt.Fprintf(&b, "%strack %q rank=%d\n", ind, td.Name, td.SiblingRank)
		}
		for _, te := range d.events[u] {
			e := te.e
			fmt.Fprintf(&b, "%s  @%d ", ind, te.t)
			switch e.Type {
			case typeSliceBegin:
				fmt.Fprintf(&b, "B %q cat=%q", e.Name, strings.Join(e.Categories, ","))
				for _, a := range e.Annots {
					if a.isInt {
						fmt.Fprintf(&b, " %s=%d", a.Name, a.Int)
					} else {
						fmt.Fprintf(&b, " %s=%s", a.Name, a.Str)
					}
				}
				for _, f := range e.FlowIDs {
					fmt.Fprintf(&b, " flow-out=%x", f)
				}
				for _, f := range e.TermFlowIDs {
					fmt.Fprintf(&b, " flow-in=%x", f)
				}
			case typeSliceEnd:
				b.WriteString("E")
				for _, a := range e.Annots {
					if a.isInt {
						fmt.Fprintf(&b, " %s=%d", a.Name, a.Int)
					} else {
						fmt.Fprintf(&b, " %s=%s", a.Name, a.Str)
					}
				}
			case typeInstant:
				fmt.Fprintf(&b, "I %q", e.Name)
			case typeCounter:
				fmt.Fprintf(&b, "C %d", e.CounterValue)
			}
			b.WriteByte('\n')
		}
		kids := children[u]
		sort.SliceStable(kids, func(i, j int) bool { return d.tracks[kids[i]].SiblingRank < d.tracks[kids[j]].SiblingRank })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

func TestPerfettoGolden(t *testing.T) {
	tr := readFixture(t, "small.txt")
	var buf bytes.Buffer
	if err := Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	d, _ := decodeAndCheck(t, buf.Bytes())
	update.Check(t, "testdata/small.perfetto.txt", []byte(dump(d)))
	update.Check(t, "testdata/small.pftrace", buf.Bytes())
}

func TestChromeJSONStrict(t *testing.T) {
	tr := readFixture(t, "small.txt")
	var buf bytes.Buffer
	if err := WriteChromeJSON(&buf, tr); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.DisallowUnknownFields()
	var ct ChromeTrace
	if err := dec.Decode(&ct); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Fatal("trailing data after the JSON object")
	}
	count := map[string]int{}
	flows := map[string]string{}
	depth := map[uint64]int{}
	for _, e := range ct.TraceEvents {
		count[e.Ph]++
		switch e.Ph {
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Errorf("X event %s without duration", e.Name)
			}
		case "s", "f":
			flows[e.ID] += e.Ph
		case "C":
			if _, ok := e.Args["bytes"].(float64); !ok {
				t.Errorf("counter %s without bytes", e.Name)
			}
		case "B":
			depth[e.TID]++
		case "E":
			if depth[e.TID]--; depth[e.TID] < 0 {
				t.Errorf("E event at %v on thread %d ends nothing", e.Ts, e.TID)
			}
		case "M", "i":
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}
	calls := 0
	for i := range tr.Events {
		if tr.Events[i].Kind == trace.KindCall {
			calls++
		}
	}
	an := analysis.Of(tr)
	loose := 0
	for _, r := range an.Ranges {
		if r.Origin == trace.KindRangeStart {
			loose++
		}
	}
	scopes := len(an.Ranges) - loose // push/pop ranges and spans; frames too, but small.txt has none
	if count["X"] != calls+loose+len(an.Objects) || count["B"] != scopes || count["E"] != scopes {
		t.Errorf("%d X, %d B, %d E events; want %d X (calls, start/end ranges, lifetimes), %d B and E (push/pop ranges)",
			count["X"], count["B"], count["E"], calls+loose+len(an.Objects), scopes)
	}
	// every allocation's call starts a flow; the one freed ends at its free
	paired := 0
	for id, ph := range flows {
		switch ph {
		case "sf":
			paired++
		case "s":
		default:
			t.Errorf("flow %s: %q, want a start, then a finish if freed", id, ph)
		}
	}
	if count["C"] == 0 || paired != 1 {
		t.Errorf("counters %d, flows %v", count["C"], flows)
	}
	update.Check(t, "testdata/small.chrome.json", buf.Bytes())
}

// FuzzTimeline writes timelines of arbitrary text traces: whatever the
// events, the Perfetto output decodes, slices nest and end, tracks resolve,
// and the Chrome JSON parses strictly.
func FuzzTimeline(f *testing.F) {
	seed, err := os.ReadFile("testdata/small.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.ReadText(bytes.NewReader(data))
		if err != nil || len(tr.Events) > 2000 {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, tr); err != nil {
			t.Fatal(err)
		}
		decodeAndCheck(t, buf.Bytes())
		buf.Reset()
		if err := WriteChromeJSON(&buf, tr); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(&buf)
		dec.DisallowUnknownFields()
		var ct ChromeTrace
		if err := dec.Decode(&ct); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEstimate: the size said early in a write (from the first sixteenth of
// the events, as the command asks) is within 10% of what is written, on synthetic, loop, pairs
// and random traces, in both formats.
func TestEstimate(t *testing.T) {
	traces := map[string]*trace.Trace{"synthetic": synthetic(8000), "loop": tracetest.LoopTrace(16000),
		"pairs": tracetest.AllocFreePairs(8000)}
	for seed := uint64(1); seed <= 4; seed++ {
		traces[fmt.Sprintf("random-%d", seed)] = tracetest.Random(seed, 32000)
	}
	for name, tr := range traces {
		for _, format := range []string{"perfetto", "chrome-json"} {
			var w countWriter
			tw := NewWriter(&w, tr)
			if format == "chrome-json" {
				tw = NewChromeJSONWriter(&w, tr)
			}
			total := int64(len(tr.Events))
			var est int64
			tk := analysis.NewTracker(tr, tw.Options()...)
			for i := range tr.Events {
				tk.Step(&tr.Events[i])
				if int64(i+1) == total/16 {
					est = tw.Estimate(total/16, total)
				}
			}
			tk.Finish()
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: estimate %d, written %d (%+.1f%%)", name, format, est, w.n, 100*float64(est-w.n)/float64(w.n))
			if est < w.n*90/100 || est > w.n*110/100 {
				t.Errorf("%s %s: estimate %d bytes, written %d", name, format, est, w.n)
			}
		}
	}
}

// TestPythonFrames checks that Python frames are slices on their thread's
// track, nested with ranges and the driver calls they made, in both formats.
func TestPythonFrames(t *testing.T) {
	tr := tracetest.PythonTrace()
	var buf bytes.Buffer
	if err := Write(&buf, tr); err != nil {
		t.Fatal(err)
	}
	d, slices := decodeAndCheck(t, buf.Bytes())
	update.Check(t, "testdata/python.perfetto.txt", []byte(dump(d)))
	depth := map[string]int{}
	var frame *sliceRec
	for u, ss := range slices {
		if th := d.tracks[u].Thread; th == nil || th.TID != 100 {
			continue
		}
		for i := range ss {
			s := &ss[i]
			if _, ok := depth[s.name]; !ok {
				depth[s.name] = s.depth
			}
			if s.name == "Device.create_stream" {
				frame = s
			}
		}
	}
	for name, want := range map[string]int{"<module>": 0, "main": 1, "step": 2, "Device.create_stream": 3,
		"CFuncPtr cuStreamCreate": 4, "cuStreamCreate": 5, "cuStreamDestroy": 1} {
		if got, ok := depth[name]; !ok || got != want {
			t.Errorf("slice %s at depth %d (found %v), want %d", name, got, ok, want)
		}
	}
	if frame == nil {
		t.Fatal("no Device.create_stream slice")
	}
	args := frame.args()
	if frame.cat != "python" || args["file"] != "cuda/core/_device.py" || args["line"] != "120" ||
		args["module"] != "cuda.core._device" || args["self_ns"] != "7340" {
		t.Errorf("frame slice cat %q args %v", frame.cat, args)
	}

	buf.Reset()
	if err := WriteChromeJSON(&buf, tr); err != nil {
		t.Fatal(err)
	}
	var ct ChromeTrace
	if err := json.Unmarshal(buf.Bytes(), &ct); err != nil {
		t.Fatal(err)
	}
	ends := map[string]string{}
	sl, err := chromeSlices(&ct)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sl {
		if e.cat == "python" && e.tid == 100 {
			if end, ok := e.args["end"]; ok {
				ends[e.name] += end + " "
			}
		}
		if e.cat == "python" && e.name == "worker" && e.args["end"] != "open" {
			t.Errorf("worker frame end %v, want open", e.args["end"])
		}
	}
	if ends["Buffer.allocate"] != "unwound " || ends["gen"] != "yielded " {
		t.Errorf("frame ends %v: want Buffer.allocate unwound, the first gen yielded", ends)
	}
}

// TestNestingAgreesWithAnalysis checks, on the protobuf's explicit begins
// and ends, that each call's slice sits in the slices of exactly the ranges
// and Python frames the analysis nests around it (its scope), over every
// fixture of this package, the Python trace and random traces.
func TestNestingAgreesWithAnalysis(t *testing.T) {
	traces := map[string]*trace.Trace{"python": tracetest.PythonTrace(), "loop": tracetest.LoopTrace(20)}
	names, _ := filepath.Glob("testdata/*.txt")
	for _, n := range names {
		if data, err := os.ReadFile(n); err == nil && strings.HasPrefix(string(data), trace.TextHeader) {
			traces[n] = tracetest.ReadText(t, n)
		}
	}
	for seed := uint64(1); seed <= 8; seed++ {
		traces[fmt.Sprintf("random-%d", seed)] = tracetest.Random(seed, 1500)
	}
	for name, tr := range traces {
		t.Run(name, func(t *testing.T) {
			// the analysis: each call's scope, outermost first
			scopes := map[int]analysis.ScopeID{}
			a := analysis.Of(tr, analysis.OnEvent(func(e *analysis.Event) {
				if e.Kind == trace.KindCall {
					scopes[e.Index] = e.Scope
				}
			}))
			type key struct {
				api   string
				start uint64
				stack string
			}
			want := map[key]int{}
			for i, sc := range scopes {
				var names []string
				for ; sc != analysis.NoScope; sc = a.ScopeParent(sc) {
					frame, code, n, _ := a.ScopeFrame(sc)
					if frame {
						names = append([]string{tr.String(tr.Code[code].Name)}, names...)
					} else {
						names = append([]string{tr.String(n)}, names...)
					}
				}
				e := &tr.Events[i]
				want[key{e.API.String(), uint64(e.Start), strings.Join(names, ";")}]++
			}
			var buf bytes.Buffer
			if err := Write(&buf, tr); err != nil {
				t.Fatal(err)
			}
			d, _ := decodeAndCheck(t, buf.Bytes())
			got := map[key]int{}
			for u, evs := range d.events {
				if d.tracks[u].Thread == nil {
					continue
				}
				var stack []string
				for _, te := range evs {
					switch te.e.Type {
					case typeSliceBegin:
						name := te.e.Name
						cat := strings.Join(te.e.Categories, ",")
						if cat != "range" && cat != "python" {
							got[key{name, te.t, strings.Join(stack, ";")}]++
						}
						stack = append(stack, name)
					case typeSliceEnd:
						stack = stack[:len(stack)-1]
					}
				}
			}
			if !reflect.DeepEqual(got, want) {
				var diff []string
				for k, v := range want {
					if got[k] != v {
						diff = append(diff, fmt.Sprintf("%+v: got %d, analysis %d", k, got[k], v))
					}
				}
				for k, v := range got {
					if _, ok := want[k]; !ok {
						diff = append(diff, fmt.Sprintf("%+v: got %d, analysis none", k, v))
					}
				}
				sort.Strings(diff)
				if len(diff) > 8 {
					diff = diff[:8]
				}
				t.Errorf("calls and the slices around them differ:\n%s", strings.Join(diff, "\n"))
			}
		})
	}
}

// TestHexText: the annotations' hex text is strconv's, with 0x.
func TestHexText(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0x7f0000001000, 1<<63 | 5, ^uint64(0)} {
		if got, want := string(appendHexText(nil, v)), "0x"+strconv.FormatUint(v, 16); got != want {
			t.Errorf("%d: %q, want %q", v, got, want)
		}
	}
}

// TestTrackSequences: a thread track's records are on a sequence of its own
// that starts with its defaults and a clock snapshot at its first time, each
// later packet carrying the time since the one before; a record earlier than
// the one before it (the Writer makes none) carries its absolute time on
// BOOTTIME and leaves the deltas after it counted from the record before it.
func TestTrackSequences(t *testing.T) {
	var buf bytes.Buffer
	pw := newProtoWriter(&buf, &trace.Trace{Strings: []string{""}})
	proc := &track{uuid: 1, kind: trackProcess, name: "p", pid: 1}
	th := &track{uuid: 2, parent: 1, kind: trackThread, name: "t", pid: 1, tid: 1}
	pw.declare(proc)
	pw.declare(th)
	for _, at := range []int64{1000, 1300, 1250, 1400} {
		pw.instant(at, th, "i")
	}
	if err := pw.finish(); err != nil {
		t.Fatal(err)
	}
	pkts, err := decodeTrace(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pkts {
		switch {
		case p.Snapshot != nil:
			got = append(got, fmt.Sprintf("seq %d flags %d defaults %+v snapshot %+v", p.SeqID, p.SeqFlags, *p.Defaults, *p.Snapshot))
		case p.Event != nil:
			got = append(got, fmt.Sprintf("seq %d flags %d ts %d clock %d track %d", p.SeqID, p.SeqFlags, p.Timestamp, p.ClockID, p.Event.Track))
		}
	}
	want := []string{
		"seq 2 flags 1 defaults {ClockID:64 TrackUUID:2} snapshot {Clocks:[{ID:6 Timestamp:1000 Incremental:false} {ID:64 Timestamp:1000 Incremental:true}] Primary:6}",
		"seq 2 flags 2 ts 0 clock 0 track 0",
		"seq 2 flags 2 ts 300 clock 0 track 0",
		"seq 2 flags 2 ts 1250 clock 6 track 0",
		"seq 2 flags 2 ts 100 clock 0 track 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("packets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLifetimeNamesPastTheInternedOnes: a trace making more streams than
// maxObjectNames, each at a handle of its own, names every lifetime (those
// past the interned ones in full), while the writer interns at most
// maxObjectNames of them.
func TestLifetimeNamesPastTheInternedOnes(t *testing.T) {
	const n = maxObjectNames + 300
	tr := &trace.Trace{Strings: []string{""}, Processes: []trace.Process{{PID: 1}}}
	for i := range n {
		ts := int64(10 * i)
		tr.Events = append(tr.Events,
			trace.Event{Kind: trace.KindCall, API: trace.APIStreamCreate, PID: 1, TID: 1, Device: 0, Start: ts, End: ts + 1, Handle: uint64(0x1000 + i)},
			trace.Event{Kind: trace.KindCall, API: trace.APIStreamDestroy, PID: 1, TID: 1, Device: 0, Start: ts + 5, End: ts + 6, Handle: uint64(0x1000 + i)})
	}
	var buf bytes.Buffer
	pw := newProtoWriter(&buf, tr)
	tw := newWriter(tr, pw)
	analysis.Of(tr, tw.Options()...)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if len(pw.objIID) > maxObjectNames {
		t.Errorf("the writer interned %d lifetimes' names, more than %d", len(pw.objIID), maxObjectNames)
	}
	_, slices := decodeAndCheck(t, buf.Bytes())
	names := map[string]bool{}
	for _, ss := range slices {
		for _, s := range ss {
			if s.cat == "lifetime" {
				names[s.name] = true
			}
		}
	}
	for i := range n {
		if name := fmt.Sprintf("stream 0x%x", 0x1000+i); !names[name] {
			t.Fatalf("no lifetime named %q (%d names)", name, len(names))
		}
	}
}
