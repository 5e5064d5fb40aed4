package perfetto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/exporters/perfetto/internal/legacy"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// The streaming writer is checked against the in-memory writer it
// replaced (package legacy): both outputs are decoded and resolved the way
// a viewer resolves them (a slice's arguments are its begin's and its
// end's, a flow joins the slice that starts it to the one that ends it and
// a flow nothing ends is not drawn), and what they resolve to must be the
// same, on every fixture trace of the repository and on random traces.

// resolvedSlice is a slice as a viewer shows it.
type resolvedSlice struct {
	name, cat  string
	start, end int64 // ns
	depth      int
	args       string // key=value, sorted
	flowOut    string // the slice the flow starting here ends at, "" none
}

func argString(m map[string]string) string {
	var kv []string
	for k, v := range m {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// resolvePerfetto returns, per track (named by its description and its
// parents'), what the track shows: slices with their flows, instants,
// counter values; in the order of the track's records.
func resolvePerfetto(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	d, slices := decodeAndCheck(t, data)
	desc := func(u uint64) string {
		var parts []string
		for ; u != 0; u = d.tracks[u].Parent {
			td := d.tracks[u]
			s := fmt.Sprintf("name=%q rank=%d order=%v/%d", td.Name, td.SiblingRank, td.hasChildOrder, td.ChildOrder)
			switch {
			case td.Process != nil:
				s += fmt.Sprintf(" process=%+v", *td.Process)
			case td.Thread != nil:
				s += fmt.Sprintf(" thread=%+v", *td.Thread)
			case td.Counter != nil:
				s += fmt.Sprintf(" counter=%+v", *td.Counter)
			}
			parts = append([]string{s}, parts...)
		}
		return strings.Join(parts, " / ")
	}
	// flows: where each id starts and where it is terminated
	type at struct {
		track uint64
		i     int
	}
	starts, ends := map[uint64]at{}, map[uint64]at{}
	for u, ss := range slices {
		for i, s := range ss {
			for _, f := range s.ev.FlowIDs {
				starts[f] = at{u, i}
			}
			for _, f := range s.ev.TermFlowIDs {
				ends[f] = at{u, i}
			}
		}
	}
	flowTo := map[at]string{}
	for id, from := range starts {
		if to, ok := ends[id]; ok {
			s := slices[to.track][to.i]
			flowTo[from] = fmt.Sprintf("%s@%d on %s", s.name, s.start, d.tracks[to.track].Name)
		}
	}
	byDesc := map[string][][]string{}
	for _, u := range d.order {
		key := desc(u)
		var recs []string
		si := 0
		for _, te := range d.events[u] {
			switch te.e.Type {
			case typeSliceBegin:
				s := slices[u][si]
				recs = append(recs, fmt.Sprintf("%+v", resolvedSlice{name: s.name, cat: s.cat, start: int64(s.start),
					end: int64(s.end), depth: s.depth, args: argString(s.args()), flowOut: flowTo[at{u, si}]}))
				si++
			case typeInstant:
				recs = append(recs, fmt.Sprintf("instant %q @%d", te.e.Name, te.t))
			case typeCounter:
				recs = append(recs, fmt.Sprintf("counter %d @%d", te.e.CounterValue, te.t))
			}
		}
		byDesc[key] = append(byDesc[key], recs)
	}
	// tracks described alike (the counters of one pool handle on two
	// devices) are told apart by what they show
	out := map[string][]string{}
	for key, tracks := range byDesc {
		sort.Slice(tracks, func(i, j int) bool { return strings.Join(tracks[i], "\n") < strings.Join(tracks[j], "\n") })
		for i, recs := range tracks {
			k := key
			if len(tracks) > 1 {
				k = fmt.Sprintf("%s (%d of %d alike)", key, i+1, len(tracks))
			}
			out[k] = append([]string{}, recs...)
		}
	}
	return out
}

// chromeSlice is a slice of a Chrome JSON timeline: a complete event or a
// begin and its end, with both their arguments.
type chromeSlice struct {
	pid        uint32
	tid        uint64
	name, cat  string
	start, end int64 // ns
	args       map[string]string
}

func ns(us float64) int64 { return int64(math.Round(us * 1000)) }

// chromeSlices pairs the begins and ends of each thread (in time order,
// the order of the file at equal times) and returns every slice.
func chromeSlices(ct *ChromeTrace) ([]chromeSlice, error) {
	type tk struct {
		pid uint32
		tid uint64
	}
	argMap := func(m map[string]any, into map[string]string) {
		for k, v := range m {
			into[k] = fmt.Sprint(v)
		}
	}
	evs := make([]ChromeEvent, len(ct.TraceEvents))
	copy(evs, ct.TraceEvents)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Ts < evs[j].Ts })
	var out []chromeSlice
	open := map[tk][]int{}
	for _, e := range evs {
		k := tk{e.PID, e.TID}
		switch e.Ph {
		case "X":
			s := chromeSlice{pid: e.PID, tid: e.TID, name: e.Name, cat: e.Cat, start: ns(e.Ts), end: ns(e.Ts + *e.Dur),
				args: map[string]string{}}
			argMap(e.Args, s.args)
			out = append(out, s)
		case "B":
			s := chromeSlice{pid: e.PID, tid: e.TID, name: e.Name, cat: e.Cat, start: ns(e.Ts), args: map[string]string{}}
			argMap(e.Args, s.args)
			open[k] = append(open[k], len(out))
			out = append(out, s)
		case "E":
			st := open[k]
			if len(st) == 0 {
				return nil, fmt.Errorf("E at %v on %d/%d ends nothing", e.Ts, e.PID, e.TID)
			}
			s := &out[st[len(st)-1]]
			open[k] = st[:len(st)-1]
			s.end = ns(e.Ts)
			argMap(e.Args, s.args)
		}
	}
	for k, st := range open {
		if len(st) > 0 {
			return nil, fmt.Errorf("%d slices of %d/%d never end", len(st), k.pid, k.tid)
		}
	}
	return out, nil
}

// resolveChrome returns per process what a Chrome JSON timeline shows:
// the names of its threads (lanes by name: their TIDs are only labels),
// each thread's slices with durations in ns (complete or begin and end
// alike), flows joined, instants and counters; as sorted lists.
func resolveChrome(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ct ChromeTrace
	if err := dec.Decode(&ct); err != nil {
		t.Fatal(err)
	}
	type tk struct {
		pid uint32
		tid uint64
	}
	names := map[tk]string{}
	procs := map[uint32]string{}
	for _, e := range ct.TraceEvents {
		if e.Ph == "M" {
			switch e.Name {
			case "process_name":
				procs[e.PID] = fmt.Sprint(e.Args["name"])
			case "thread_name":
				names[tk{e.PID, e.TID}] = fmt.Sprint(e.Args["name"])
			}
		}
	}
	thread := func(pid uint32, tid uint64) string {
		if tid >= 1_000_000_000 {
			return fmt.Sprintf("pid %d lane %q", pid, names[tk{pid, tid}])
		}
		return fmt.Sprintf("pid %d tid %d %q", pid, tid, names[tk{pid, tid}])
	}
	out := map[string][]string{}
	add := func(k, v string) { out[k] = append(out[k], v) }
	for pid, n := range procs {
		add("processes", fmt.Sprintf("%d %q", pid, n))
	}
	for k := range names {
		add("threads", thread(k.pid, k.tid))
	}
	sl, err := chromeSlices(&ct)
	if err != nil {
		t.Fatal(err)
	}
	// flows: the start of an id on a thread at a time, its finish
	type at struct {
		where string
		ts    int64
	}
	starts, fins := map[string]at{}, map[string]at{}
	for _, e := range ct.TraceEvents {
		switch e.Ph {
		case "s":
			starts[e.ID] = at{thread(e.PID, e.TID), ns(e.Ts)}
		case "f":
			fins[e.ID] = at{thread(e.PID, e.TID), ns(e.Ts)}
		case "i":
			add(thread(e.PID, e.TID), fmt.Sprintf("instant %q @%d", e.Name, ns(e.Ts)))
		case "C":
			add(fmt.Sprintf("pid %d counter %q", e.PID, e.Name), fmt.Sprintf("%v @%d", e.Args["bytes"], ns(e.Ts)))
		}
	}
	for id, s := range starts {
		if f, ok := fins[id]; ok {
			add("flows", fmt.Sprintf("%s@%d -> %s@%d", s.where, s.ts, f.where, f.ts))
		}
	}
	for _, s := range sl {
		add(thread(s.pid, s.tid), fmt.Sprintf("%q cat=%q [%d, %d] %s", s.name, s.cat, s.start, s.end, argString(s.args)))
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// comparisonTraces are every fixture trace of the repository (the text
// traces under any testdata), the package's own synthetic ones and random
// traces.
func comparisonTraces(t *testing.T) map[string]*trace.Trace {
	traces := map[string]*trace.Trace{"python": tracetest.PythonTrace(), "loop": tracetest.LoopTrace(300),
		"pairs": tracetest.AllocFreePairs(200), "synthetic": synthetic(200)}
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "fuzz") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".txt") || !strings.Contains(path, "testdata") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.HasPrefix(data, []byte(trace.TextHeader)) {
			return nil
		}
		if tr, err := trace.ReadText(bytes.NewReader(data)); err == nil {
			traces[path] = tr
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 16; seed++ {
		traces[fmt.Sprintf("random-%d", seed)] = tracetest.Random(seed, 2000)
	}
	return traces
}

func diffResolved(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("%s: missing in the streamed output (%d records)", k, len(w)))
			continue
		}
		for i := 0; i < max(len(g), len(w)); i++ {
			var gi, wi string
			if i < len(g) {
				gi = g[i]
			}
			if i < len(w) {
				wi = w[i]
			}
			if gi != wi {
				diffs = append(diffs, fmt.Sprintf("%s record %d:\n  streamed %s\n  in memory %s", k, i, gi, wi))
				break
			}
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: only in the streamed output", k))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 6 {
		diffs = append(diffs[:6], fmt.Sprintf("... %d more", len(diffs)-6))
	}
	if len(diffs) > 0 {
		t.Errorf("%s: the streamed timeline shows something else than the in-memory one:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// TestStreamedMatchesInMemory: on every fixture and random trace, the
// streamed Perfetto and Chrome JSON timelines resolve to what the old
// in-memory writer's did: the same tracks (uuids, names, order ranks,
// parents, processes and threads), the same slices on each in the same
// order with the same times, depths, arguments and flows, the same
// instants and counter values.
func TestStreamedMatchesInMemory(t *testing.T) {
	traces := comparisonTraces(t)
	if len(traces) < 40 {
		t.Fatalf("only %d traces to compare", len(traces))
	}
	for name, tr := range traces {
		t.Run(name, func(t *testing.T) {
			var old, cur bytes.Buffer
			if err := legacy.Write(&old, tr); err != nil {
				t.Fatal(err)
			}
			if err := Write(&cur, tr); err != nil {
				t.Fatal(err)
			}
			diffResolved(t, "Perfetto", resolvePerfetto(t, cur.Bytes()), resolvePerfetto(t, old.Bytes()))
			old.Reset()
			cur.Reset()
			if err := legacy.WriteChromeJSON(&old, tr); err != nil {
				t.Fatal(err)
			}
			if err := WriteChromeJSON(&cur, tr); err != nil {
				t.Fatal(err)
			}
			diffResolved(t, "Chrome JSON", resolveChrome(t, cur.Bytes()), resolveChrome(t, old.Bytes()))
		})
	}
}
