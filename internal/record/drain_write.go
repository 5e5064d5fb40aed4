package record

import (
	"bufio"
	"github.com/cuprof/cuprof/internal/hostid"
	"io"
	"math"
	"sort"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// The final pass: the trace is written from the spill files once the
// program is gone and the clock calibrated. write runs it in order: the
// metadata (traceMeta), the recording's strings, each ring's events
// (eventWriter, ringPass), then the tables gathered meanwhile (processes,
// threads, drops: tables) and the mappings and symbols of call sites
// (writeSymbols).

// write writes the trace to f: the spilled records converted to events
// on the trace clock, processes, threads, drops, and the mappings and
// symbols of call sites. Memory holds at most maxBuffered events.
func (d *drainer) write(f io.Writer, meta trace.Meta, clk clock, childPID int, res *Result) error {
	// What a write adds to res starts over: a failed write is followed by
	// another, of the same recording (writeTrace's rescue).
	res.SpillDrops, res.BadRecords, res.OtherDrops, res.Python, res.outOfOrder = 0, 0, nil, nil, 0
	bw := bufio.NewWriterSize(f, 256<<10)
	sort.Slice(d.rings, func(i, j int) bool { return d.rings[i].mono0 < d.rings[j].mono0 })
	meta = d.traceMeta(meta, clk)
	w := trace.NewWriter(bw, meta)
	for _, s := range d.st.Strings {
		w.String(s) // the recording's strings first, in the order they were read
	}
	tb := newTables()
	ew := &eventWriter{w: w, clk: clk, res: res, codeIDs: map[codeKey]trace.CodeID{}}
	for _, r := range d.rings {
		p := tb.process(r)
		if err := ew.ring(r, p, tb.callersOf(r.pid)); err != nil {
			return err
		}
		tb.addCounts(r)
	}
	tb.writeProcesses(w, childPID, res)
	tb.writeThreads(w)
	dropped := tb.writeDrops(w, res)
	res.RinglessChildren = tb.children
	d.writeSymbols(w, tb.callers)
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	res.Events, res.Processes, res.Drops = ew.written, len(tb.procs), dropped
	res.FullWaits, res.FullWait = meta.FullWaits, time.Duration(meta.FullWaitNs)
	return nil
}

// traceMeta adds to meta what the rings know of the recording: the clock,
// the waits for a full ring, the driver's version and the calibrated cost
// of a Python event.
func (d *drainer) traceMeta(meta trace.Meta, clk clock) trace.Meta {
	meta.Clock = trace.Clock{Source: clk.source}
	for _, r := range d.rings {
		meta.FullWaits += r.waits
		meta.FullWaitNs += int64(r.waitNs)
	}
	if clk.tsc {
		meta.Clock.TSCHz = clk.hz
	}
	for _, r := range d.rings {
		if r.driver != 0 {
			meta.DriverVersion = r.driver
		}
	}
	var pyCost [7]float64 // PyEventNs, then as ring.pyCosts
	var pyRings int
	for _, r := range d.rings {
		if r.pyEvent > 0 {
			pyCost[0] += clk.ticksToNs(float64(r.pyEvent) / 1000)
			for i, v := range r.pyCosts {
				pyCost[i+1] += clk.ticksToNs(float64(v) / 1000)
			}
			pyRings++
		}
	}
	if pyRings > 0 {
		o := &meta.Overhead
		for i, f := range []*float64{&o.PyEventNs, &o.PyCEventNs, &o.PyInsideNs, &o.PyCInsideNs, &o.PyHiddenNs,
			&o.PyCHiddenNs, &o.PyLoneNs} {
			*f = math.Round(pyCost[i]/float64(pyRings)*10) / 10
		}
	}
	meta.Overhead = d.inPlace(meta.Overhead, clk)
	return meta
}

// minInPlaceCalls is the fewest shadow calls of each kind, cold and warm
// (one recorded call in 64 of each thread's takes one at first, fewer
// later, the kinds alternating; inplace.c), that correct the calibration.
// Each counts the intervals of 64 calls it stands for; a thread's first 32
// of a kind count one each, so this many are this many shadows.
const minInPlaceCalls = 32

// inPlace corrects the calibrated cost per call o by what the program's
// own calls measured in place: the shadow call (the calibrator's measured
// body on a no-op) cost so much more before a recorded call, on the caches
// as the program left them, than after it, once the wrapper had touched
// the same lines; less the same difference in the calibrator's tight loop,
// where both are warm. Without enough shadow calls of either kind, or
// without the calibrator's, o is returned as it is.
func (d *drainer) inPlace(o trace.Overhead, clk clock) trace.Overhead {
	if !d.calibShadowOK || o.AddedNs == 0 {
		return o
	}
	var cold, warm, coldN, warmN uint64
	for _, r := range d.rings {
		cold += r.inPlaceCold
		warm += r.inPlaceWarm
		coldN += r.inPlaceColdN
		warmN += r.inPlaceWarmN
	}
	prog, ok := shadowDiff(clk, cold, coldN, warm, warmN)
	if !ok {
		return o
	}
	diff := prog - d.calibShadowNs
	o.InPlaceNs = math.Round(diff*10) / 10
	o.InPlaceCalls = int64(coldN + warmN)
	o.AddedNs = math.Max(o.InsideNs, math.Round((o.AddedNs+diff)*10)/10)
	return o
}

// codeKey is a Python frame's code entry by content: entries are interned
// across the rings' spill files as frames use them.
type codeKey struct {
	kind               trace.CodeKind
	name, module, file string
	line               uint32
}

// eventWriter writes the rings' spilled events to the trace, one ring
// after another, on the trace clock.
type eventWriter struct {
	w                 *trace.Writer
	clk               clock
	res               *Result
	codeIDs           map[codeKey]trace.CodeID
	buffered, written int // events held over all threads of the ring, and written
}

// ring writes r's events, which belong to process p; cs gathers the call
// sites of p's events.
func (ew *eventWriter) ring(r *ring, p *trace.Process, cs map[uint64]bool) error {
	rp := &ringPass{eventWriter: ew, r: r, bufs: map[uint32][]trace.Event{}, last: map[uint32]int64{}}
	err := r.replay(func(e *trace.Event, spill *trace.Trace) error {
		return rp.add(e, spill, p, cs)
	})
	if err == nil {
		err = rp.flushAll()
	}
	return err
}

// ringPass is the writing of one ring's events: they come thread after
// thread in batches, each thread's about in time order; a thread's events
// are buffered, sorted, and written in halves.
type ringPass struct {
	*eventWriter
	r          *ring
	bufs       map[uint32][]trace.Event // by thread
	last       map[uint32]int64         // start of the last event written, by thread
	spillIDs   []trace.StringID         // the spill's string IDs -> the trace's, filled as used
	spillCodes []trace.CodeID           // the spill's code IDs -> the trace's, filled as used
}

// add puts one spilled event on the trace clock and in the trace's string
// and code tables, notes its process's end and call site, and buffers it.
func (rp *ringPass) add(e *trace.Event, spill *trace.Trace, p *trace.Process, cs map[uint64]bool) error {
	names := spill.Strings
	tid := e.TID
	ev := *e
	ev.Start = rp.clk.ns(ev.Start, rp.r.clock)
	ev.End = rp.clk.ns(ev.End, rp.r.clock)
	ev.Name, ev.Domain = rp.stringID(ev.Name, names), rp.stringID(ev.Domain, names)
	ev.Code = rp.codeID(ev.Code, spill)
	if ev.End > p.End {
		p.End = ev.End
	}
	if ev.Caller != 0 {
		cs[ev.Caller] = true
	}
	b := append(rp.bufs[tid], ev)
	rp.bufs[tid] = b
	rp.buffered++
	rp.res.peakBuffered = max(rp.res.peakBuffered, rp.buffered)
	if len(b) >= threadBatch {
		if err := rp.flush(tid, false); err != nil {
			return err
		}
	}
	if rp.buffered >= maxBuffered {
		return rp.flushAll()
	}
	return nil
}

// flush sorts tid's buffer and writes all of it, or its earlier half
// (later records of the thread may still sort before the rest).
func (rp *ringPass) flush(tid uint32, all bool) error {
	ev := rp.bufs[tid]
	trace.SortEvents(ev)
	n := len(ev)
	if !all {
		n /= 2
	}
	if n == 0 {
		return nil
	}
	if l, ok := rp.last[tid]; ok && ev[0].Start < l {
		rp.res.outOfOrder++ // the reader sorts such a thread after merging
	}
	rp.last[tid] = ev[n-1].Start
	if err := rp.w.WriteBatch(rp.r.pid, tid, ev[:n]); err != nil {
		return err
	}
	rp.bufs[tid] = ev[:copy(ev, ev[n:])]
	rp.buffered -= n
	rp.written += n
	return nil
}

// flushAll writes every buffer and lets go of them (with many threads,
// their capacity adds up).
func (rp *ringPass) flushAll() error {
	for _, tid := range sortedKeys(rp.bufs) {
		if err := rp.flush(tid, true); err != nil {
			return err
		}
		rp.bufs[tid] = nil
	}
	return nil
}

// stringID is the trace's ID of the spill's string id (names: the
// spill's strings), interned on first use.
func (rp *ringPass) stringID(id trace.StringID, names []string) trace.StringID {
	if id == 0 || int(id) >= len(names) {
		return 0
	}
	if len(rp.spillIDs) < len(names) {
		rp.spillIDs = append(rp.spillIDs, make([]trace.StringID, len(names)-len(rp.spillIDs))...)
	}
	if rp.spillIDs[id] == 0 {
		rp.spillIDs[id] = rp.w.String(names[id])
	}
	return rp.spillIDs[id]
}

// codeID is the trace's ID of the spill's code entry id, the same for
// entries of the same content from any ring.
func (rp *ringPass) codeID(id trace.CodeID, spill *trace.Trace) trace.CodeID {
	if id == 0 || int(id) >= len(spill.Code) {
		return 0
	}
	if len(rp.spillCodes) < len(spill.Code) {
		rp.spillCodes = append(rp.spillCodes, make([]trace.CodeID, len(spill.Code)-len(rp.spillCodes))...)
	}
	if rp.spillCodes[id] == 0 {
		c := spill.Code[id]
		k := codeKey{c.Kind, spill.String(c.Name), spill.String(c.Module), spill.String(c.File), c.Line}
		tc, ok := rp.codeIDs[k]
		if !ok {
			tc = rp.w.AddCode(trace.Code{Kind: c.Kind, Name: rp.w.String(k.name), Module: rp.w.String(k.module),
				File: rp.w.String(k.file), Line: c.Line})
			rp.codeIDs[k] = tc
		}
		rp.spillCodes[id] = tc
	}
	return rp.spillCodes[id]
}

// tables gathers from the rings the trace's processes, thread names, drop
// counts (by reason) and call sites, written after the events.
type tables struct {
	procs       map[uint32]*trace.Process
	threads     map[tkey]string
	drops       map[tkey]uint64 // buffer full
	spillDrops  map[tkey]uint64 // records a full disk kept out of the spill
	badDrops    map[tkey]uint64 // records of an unknown kind (a torn or bogus ring record)
	pyDrops     map[tkey]uint64 // Python frames: buffer full
	pyCodeDrops map[tkey]uint64 // Python frames whose code was not interned
	growDrops   map[tkey]uint64 // every chunk held by a thread, no room to grow
	stallDrops  map[tkey]uint64 // a wait found the recorder gone
	nestedDrops map[tkey]uint64 // driver calls inside a wrapped call
	nameDrops   map[tkey]uint64 // names the string area had no room for
	nameCuts    map[tkey]uint64 // names cut to their first stringMax bytes
	lostChild   map[tkey]uint64 // events of fork children that could make no ring
	children    uint64          // those children
	callers     map[uint32]map[uint64]bool
}

func newTables() *tables {
	return &tables{procs: map[uint32]*trace.Process{}, threads: map[tkey]string{}, drops: map[tkey]uint64{},
		spillDrops: map[tkey]uint64{}, badDrops: map[tkey]uint64{}, pyDrops: map[tkey]uint64{},
		pyCodeDrops: map[tkey]uint64{}, growDrops: map[tkey]uint64{}, stallDrops: map[tkey]uint64{},
		nestedDrops: map[tkey]uint64{}, nameDrops: map[tkey]uint64{}, nameCuts: map[tkey]uint64{}, lostChild: map[tkey]uint64{}, callers: map[uint32]map[uint64]bool{}}
}

// process returns the process r's image belongs to, updated from r: the
// newest image of a pid (rings come in the order they were opened) names
// it, after exec, and says how it exited.
func (tb *tables) process(r *ring) *trace.Process {
	p := tb.procs[r.pid]
	if p == nil {
		p = &trace.Process{PID: r.pid, PPID: r.ppid, ExitCode: -1, Start: int64(r.mono0)}
		tb.procs[r.pid] = p
	}
	p.Exe, p.Cmdline = r.exe, r.cmdline
	if r.exitKnown {
		p.ExitCode = r.exitCode
	}
	if r.env != nil {
		p.Env = r.env
	}
	if r.pyStatus != "" {
		p.Python = r.pyStatus
	}
	if int64(r.mono0) > p.End {
		p.End = int64(r.mono0)
	}
	return p
}

// callersOf is the set of call sites of pid's events.
func (tb *tables) callersOf(pid uint32) map[uint64]bool {
	cs := tb.callers[pid]
	if cs == nil {
		cs = map[uint64]bool{}
		tb.callers[pid] = cs
	}
	return cs
}

// addCounts adds r's thread names and drop counts.
func (tb *tables) addCounts(r *ring) {
	for tid, name := range r.threads {
		tb.threads[tkey{r.pid, tid}] = name
	}
	for tid, n := range r.drops {
		tb.drops[tkey{r.pid, tid}] += n
	}
	for tid, n := range r.pyDrops {
		tb.pyDrops[tkey{r.pid, tid}] += n
	}
	tb.pyCodeDrops[tkey{r.pid, 0}] += r.pyCodeDrops + r.pyLostCode
	if r.overflow > 0 {
		tb.drops[tkey{r.pid, 0}] += r.overflow
	}
	tb.growDrops[tkey{r.pid, 0}] += r.growDrops
	tb.stallDrops[tkey{r.pid, 0}] += r.stallDrops
	tb.nestedDrops[tkey{r.pid, 0}] += r.nestedDrops
	tb.nameDrops[tkey{r.pid, 0}] += r.strDrops
	tb.nameCuts[tkey{r.pid, 0}] += uint64(r.strCuts)
	tb.lostChild[tkey{r.pid, 0}] += r.lostChildEvents
	tb.children += r.lostChildren
	if r.sf != nil {
		for tid, n := range r.sf.dropped {
			tb.spillDrops[tkey{r.pid, tid}] += n
		}
		for tid, n := range r.sf.bad {
			tb.badDrops[tkey{r.pid, tid}] += n
		}
	}
}

// writeProcesses writes the processes by pid, the program's (childPID)
// with the exit status it was waited for with, and adds each one's Python
// status to res.
func (tb *tables) writeProcesses(w *trace.Writer, childPID int, res *Result) {
	for _, pid := range sortedKeys(tb.procs) {
		p := tb.procs[pid]
		res.Python = append(res.Python, PythonStatus{PID: pid, Exe: p.Exe, Status: p.Python})
		if int(pid) == childPID {
			p.ExitCode = int32(res.ExitCode)
			p.Signal = int32(res.Signal)
			if res.Signal != 0 {
				p.ExitCode = -1
			}
		}
		thisHost().Stamp(p)
		w.AddProcess(*p)
	}
}

// thisHost is the host the recorder stamps on the processes it wrote (a
// variable: the golden tests stamp a fixed one, not the machine's).
var thisHost = hostid.Self

// writeThreads writes the thread names by process and thread.
func (tb *tables) writeThreads(w *trace.Writer) {
	for _, k := range sortedTKeys(tb.threads) {
		w.AddThread(trace.Thread{PID: k.pid, TID: k.tid, Name: tb.threads[k]})
	}
}

// writeDrops writes the drop counts, full buffers first, then each other
// reason; it returns their sum and adds the disk's and bad records' to res.
func (tb *tables) writeDrops(w *trace.Writer, res *Result) uint64 {
	var dropped uint64
	for _, k := range sortedTKeys(tb.drops) {
		dropped += tb.drops[k]
		w.AddDrop(trace.Drop{PID: k.pid, TID: k.tid, Events: tb.drops[k], Reason: "buffer full"})
	}
	for _, extra := range []struct {
		m      map[tkey]uint64
		reason string
		count  *uint64 // the Result's count of them; nil: in OtherDrops by reason
	}{{tb.spillDrops, "spill failed (disk full)", &res.SpillDrops}, {tb.badDrops, "bad record", &res.BadRecords},
		{tb.pyDrops, DropPythonBuffer, nil}, {tb.pyCodeDrops, DropPythonCode, nil},
		{tb.growDrops, DropRingHeld, nil}, {tb.stallDrops, DropRecorderGone, nil}, {tb.nestedDrops, DropNestedCall, nil},
		{tb.nameDrops, DropNameNoRoom, nil}, {tb.nameCuts, DropNameCut, nil},
		{tb.lostChild, DropChildNoRing, nil}} {
		for _, k := range sortedTKeys(extra.m) {
			if extra.m[k] == 0 {
				continue
			}
			dropped += extra.m[k]
			if extra.count != nil {
				*extra.count += extra.m[k]
			} else {
				if res.OtherDrops == nil {
					res.OtherDrops = map[string]uint64{}
				}
				res.OtherDrops[extra.reason] += extra.m[k]
			}
			w.AddDrop(trace.Drop{PID: k.pid, TID: k.tid, Events: extra.m[k], Reason: extra.reason})
		}
	}
	return dropped
}

// writeSymbols writes the mappings of each process image and the symbols
// containing its call sites (callers, by pid).
func (d *drainer) writeSymbols(w *trace.Writer, callers map[uint32]map[uint64]bool) {
	sym := newSymbolizer()
	var mappings []trace.Mapping
	var symbols []trace.Symbol
	for _, r := range d.rings {
		if r.path == "" {
			continue // a recovered spill: its process is gone
		}
		if !r.finished {
			d.savedMaps(r)
		}
		text := d.maps[r]
		if text == "" {
			continue
		}
		maps, syms := sym.symbolize(r.pid, r.uid, text, callers[r.pid])
		mappings = append(mappings, maps...)
		symbols = append(symbols, syms...)
	}
	sym.note(d.cfg.note())
	for _, m := range dedupMappings(mappings) {
		w.AddMapping(m)
	}
	for _, s := range dedupSymbols(symbols) {
		w.AddSymbol(s)
	}
}
