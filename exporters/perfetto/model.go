// Package perfetto writes cuprof traces as timelines: Perfetto TrackEvent
// protobuf (the format to use; open it at ui.perfetto.dev) and the legacy
// Chrome trace event JSON for small traces.
//
// Both show, per traced process: one track per thread with its API calls,
// NVTX push/pop ranges, cudawrap spans and Python frames as nested slices;
// NVTX start/end ranges on their own tracks; object lifetimes on one track
// group per object kind, overlapping lifetimes on sibling tracks so they
// never mis-nest; counters of bytes in use per device and per pool; and flows
// from the call that made an allocation to the call that freed it.
//
// What those are comes from one replay of the trace through package
// analysis (devices, lifetimes, nesting, the Python frames' self times),
// and the timeline is written as the replay goes: a Writer keeps what is
// open (the ranges and frames of each thread, the live objects, the lanes,
// the counters) and never the events, so a trace of any length is drawn in
// bounded memory. Where two goroutines can run at once (GOMAXPROCS), the
// Writer's records are put in their thread tracks' time order (queue.go)
// and encoded on a second goroutine and the output's blocks written on a
// third while the replay goes on (pipe.go): the same records in the same
// order through the same encoder, so the same bytes; Close waits for them. A slice begins when it opens and ends when the analysis
// says it ended (Perfetto's TYPE_SLICE_BEGIN and TYPE_SLICE_END, Chrome
// JSON's B and E): what is known only at its end (how a frame ended, its
// self time) is an argument of its end, which viewers merge into the
// slice. The format nests slices strictly by time: a range whose children
// outlast it (a push range popped while a cudawrap span or Python frame
// inside it runs on) is drawn to the end of its last child, with its
// recorded end as recorded_end_ns.
package perfetto

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

type trackKind uint8

const (
	trackProcess trackKind = iota
	trackThread
	trackGroup   // parent of lane tracks: one per object kind per process
	trackLane    // lifetimes or start/end ranges that overlap go on sibling lanes
	trackCounter // bytes in use
)

// track is one timeline row, declared to the format once, before its first
// record.
type track struct {
	uuid   uint64
	parent uint64 // 0: top level
	up     *track // the parent, whose uuid parent is once they are numbered
	kind   trackKind
	name   string
	pid    uint32
	tid    uint32   // thread tracks
	cmd    []string // process tracks
	order  int      // rank among its siblings
	jsonID uint64   // Chrome JSON: the tid its records carry
}

type argKind uint8

const (
	argStr argKind = iota
	argInt
	argHex // num written as 0x... text
)

// argKey names an annotation.
type argKey uint8

const (
	keyResult argKey = iota
	keyHandle
	keyStream
	keyBytes
	keyDevice
	keyDomain
	keyUnterminated
	keyRecordedEnd
	keyModule
	keyFile
	keyLine
	keyNative
	keyEnd
	keySelfNs
	keyPool
	keyCaller
	numKeys
)

var keyNames = [numKeys]string{"result", "handle", "stream", "bytes", "device", "domain", "unterminated",
	"recorded_end_ns", "module", "file", "line", "native", "end", "self_ns", "pool", "caller"}

func (k argKey) String() string { return keyNames[k] }

// arg is one annotation shown with a slice.
type arg struct {
	key  argKey
	kind argKind
	str  string
	num  int64
}

// category is a slice's category: a call's API category, or one of the
// categories after them.
type category uint8

const (
	catRange category = 200 + iota
	catPython
	catLifetime
)

func (c category) String() string {
	switch c {
	case catRange:
		return "range"
	case catPython:
		return "python"
	case catLifetime:
		return "lifetime"
	}
	return trace.Category(c).String()
}

type nameKind uint8

const (
	nameText   nameKind = iota // only s
	nameAPI                    // a call's API: id
	nameString                 // a string of the trace's table: id
	nameCode                   // a Python frame's code: id
	nameObject                 // a lifetime: b and obj
)

// sliceName is a slice's name, with what it stands for so that a writer
// can look up what it keeps per name without hashing the text.
type sliceName struct {
	s    string
	kind nameKind
	id   uint32
	b    []byte  // nameObject: the text, valid during the call
	obj  objName // nameObject
}

// objName is what a lifetime's name says: the object's kind and handle,
// and the name it was given (0 none). Its fields leave no padding, so that
// a map hashes it as 16 bytes, not field by field.
type objName struct {
	handle uint64
	kind   uint32 // a trace.Object
	label  trace.StringID
}

// sink renders the timeline's records in one format. Records of one track
// come in time order; tracks are declared before their first record.
type sink interface {
	// declare writes a track's description.
	declare(tr *track)
	// begin opens a slice at t. dur is a call's length (its slice is
	// complete: its end follows with call set), -1 for a range or frame.
	begin(t int64, tr *track, name sliceName, cat category, args []arg, flowOut, flowIn uint64, dur int64)
	// call is begin of a call's slice, dur long, with c's arguments:
	// its result when not success, handle, stream, bytes and device, those
	// it has (not 0, NoDevice).
	// The name and c are valid during the call.
	call(t int64, tr *track, name *sliceName, cat category, c *callFields, flowOut, flowIn uint64, dur int64)
	// end closes the innermost open slice of tr at t, adding args to it.
	end(t int64, tr *track, args []arg, call bool)
	// complete writes a slice known whole (lifetimes, start/end ranges).
	complete(tr *track, start, end int64, name sliceName, cat category, args []arg)
	instant(t int64, tr *track, name string)
	counter(t int64, tr *track, v int64)
	// finish ends the output; it returns the first write error.
	finish() error
	// size returns the bytes rendered so far.
	size() int64
}

// flow ids are derived from what a flow stands for: FNV-1a of its parts,
// 8 bytes each, least significant first, never 0 (flowID).
const fnvOffset = 1469598103934665603

func fnvAdd(h, p uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= p & 0xff
		h *= 1099511628211
		p >>= 8
	}
	return h
}

// what a lane group or a flow id stands for
const (
	uuidGroup = 3
	uuidFlow  = 7
	// uuidRangeGroup ranks the start/end ranges' group after the lifetimes'
	uuidRangeGroup = 8
)

type threadKey struct{ pid, tid uint32 }

// flowID names the flow from the call that made an allocation (the event
// at index create) to the call that freed it.
// Its parts are uuidFlow and create; the hash's state after the first is
// made once.
func flowID(create int) uint64 {
	if h := fnvAdd(flowSeed, uint64(create)); h != 0 {
		return h
	}
	return 1
}

var flowSeed = fnvAdd(fnvOffset, uuidFlow)

// openScope is a push/pop range, span or Python frame open on a thread:
// the analysis's stack of that thread, as slices begun and not yet ended.
type openScope struct {
	opener int   // the event that opened it
	start  int64 // its begin
	ext    int64 // the latest end of the slices directly inside it
	hasExt bool
}

// threadState is a thread's track and its open scopes (its records
// waiting for their time wait where they are rendered: threadQueues).
type threadState struct {
	tr   *track
	open []openScope
	pid  uint32
	tid  uint32
}

// laneGroup places intervals on the lanes of one group track: each takes
// the lowest lane whose last interval ended by its start.
type laneGroup struct {
	tr    *track
	lanes []*track
	busy  []laneEnd // lanes whose interval has ended, by end (a heap)
	free  []int     // lanes free, a heap
}

type laneEnd struct {
	end  int64
	lane int
}

// memCounter is one bytes-in-use counter of analysis.MemoryKey, and the
// device-and-kind sum it adds to.
type memCounter struct {
	key   analysis.MemoryKey
	cur   int64
	tr    *track // pool counters (Pool or DefaultPool); nil otherwise
	dev   *devCounter
	dirty bool
}

type devKey struct {
	pid  uint32
	dev  int32
	kind trace.Object
}

type devCounter struct {
	key   devKey
	sum   int64
	tr    *track
	proc  *track // its process's
	dirty bool
}

// delta is a change of a counter waiting for its time: an allocation's
// bytes from its create call's Start, taken back at its End. Changes at
// one time apply in the order of the objects' creation, adds first.
type delta struct {
	t     int64
	order int // the creating event's index, times two, +1 for the take-back
	c     *memCounter
	bytes int64
}

func (d *delta) before(e *delta) bool {
	if d.t != e.t {
		return d.t < e.t
	}
	return d.order < e.order
}

// groupKey names a lane group: its process, what it holds (uuidGroup or
// uuidRangeGroup) and the object kind (0 for ranges), in one integer.
type groupKey uint64

func laneGroupKey(pid uint32, kind, g uint64) groupKey {
	return groupKey(uint64(pid)<<32 | kind<<16 | g)
}

// Writer writes a trace's timeline as package analysis replays it: pass
// Options to analysis.NewTracker (or analysis.Run, analysis.Of), then call
// Close once the replay finished. It keeps what is open, never the events.
// Close it even when the replay failed: from its first few thousand
// records on, the encoding and the writes run on goroutines that Close ends.
type Writer struct {
	t     *trace.Trace
	out   *pipe
	procs map[uint32]*track
	// thread tracks and state, by thread; last is the one of the last event
	threads  map[threadKey]*threadState
	last     *threadState
	tableThs map[uint32][]trace.Thread // threads of the table, by process
	groups   map[groupKey]*laneGroup
	lanesOf  map[int]laneSpot // live object (creating event) or open start/end range (opener) -> lane
	nextJSON uint64           // Chrome JSON tids of lanes
	lastProc *track

	// the flow into the call being replayed: the allocation it freed
	flowEvent, flowCreate int

	// owed is the thread track whose flush to owedAt goes before the
	// Writer's next record: the flush of the slice being begun, which the
	// timeline does with the slice's begin (timeline.call, timeline.open)
	// unless a record came first (paid: it was flushed before that one)
	owed   *track
	owedAt int64
	paid   bool

	args []arg      // scratch
	apis []apiSlice // by API: its calls' name and category

	// callEnds says the sink writes calls' ends: Chrome JSON's writes a
	// call whole at its begin (a complete event) and nothing at its end,
	// which is then neither queued on its thread nor handed to the sink.
	callEnds bool
}

// apiSlice is what a call's slice is named and filed under, by its API.
type apiSlice struct {
	name string
	cat  category
}

type laneSpot struct {
	g    *laneGroup
	lane int
}

func newWriter(t *trace.Trace, out sink) *Writer {
	w := &Writer{t: t, out: pipeline(t, out), procs: map[uint32]*track{}, threads: map[threadKey]*threadState{},
		tableThs: map[uint32][]trace.Thread{}, groups: map[groupKey]*laneGroup{}, lanesOf: map[int]laneSpot{},
		nextJSON: 1_000_000_000, flowEvent: -1, callEnds: true}
	for _, th := range t.Threads {
		w.tableThs[th.PID] = append(w.tableThs[th.PID], th)
	}
	w.apis = make([]apiSlice, len(trace.APIs())+1)
	for i := range w.apis {
		info := trace.API(i).Info()
		w.apis[i] = apiSlice{info.Name, category(info.Category)}
	}
	// the processes of the table, by PID, each with the threads the table
	// lists for it; processes and threads met only in events follow
	pids := make([]uint32, 0, len(t.Processes))
	for _, p := range t.Processes {
		pids = append(pids, p.PID)
	}
	slices.Sort(pids)
	for _, pid := range slices.Compact(pids) {
		w.process(pid)
	}
	return w
}

// Options returns the analysis options that feed the writer (Forget
// among them: the writer needs no table of what ended).
func (w *Writer) Options() []analysis.Option {
	return []analysis.Option{analysis.Forget(), analysis.OnEvent(w.event), analysis.OnRangeEnd(w.rangeEnd),
		analysis.OnFrameEnd(w.frameEnd), analysis.OnObjectEnd(w.objectEnd)}
}

// Size returns the bytes of timeline written so far (buffered included).
func (w *Writer) Size() int64 { return w.out.size() }

// Close writes what is still waiting (the records of the last times, the
// counters) and ends the output. Call it after the replay's Finish.
func (w *Writer) Close() error {
	keys := make([]threadKey, 0, len(w.threads))
	for k := range w.threads {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b threadKey) int {
		if a.pid != b.pid {
			return int(int64(a.pid) - int64(b.pid))
		}
		return int(int64(a.tid) - int64(b.tid))
	})
	for _, k := range keys {
		th := w.threads[k]
		for len(th.open) > 0 { // the analysis ends every scope at Finish: only a broken replay leaves one
			w.endScope(th, len(th.open)-1, max(th.open[len(th.open)-1].start, th.open[len(th.open)-1].ext), nil)
		}
		if th.tr != nil {
			w.out.flush(math.MaxInt64, th.tr, true)
		}
	}
	w.out.tick(math.MaxInt64)
	return w.out.finish()
}

// declare describes a track (numbered where it is rendered: pipe.number).
func (w *Writer) declare(tr *track) {
	w.pay()
	w.out.declare(tr)
}

// owe starts a slice's record on tr at t: a flush of tr to t is owed.
func (w *Writer) owe(tr *track, t int64) { w.owed, w.owedAt, w.paid = tr, t, false }

// pay flushes the track a flush is owed to, before another record.
func (w *Writer) pay() {
	if w.owed != nil {
		w.out.flush(w.owedAt, w.owed, false)
		w.owed, w.paid = nil, true
	}
}

// settle ends the slice's record owe started: it says whether the flush
// was paid, else it is the timeline's to do.
func (w *Writer) settle() bool {
	w.owed = nil
	return w.paid
}

// process returns the track of pid, declaring it (and the threads the
// table lists for it) the first time.
func (w *Writer) process(pid uint32) *track {
	if tr := w.lastProc; tr != nil && tr.pid == pid {
		return tr // inlined: most events are of the last one's process
	}
	return w.newProcess(pid)
}

// newProcess is process for a pid not the last one's.
func (w *Writer) newProcess(pid uint32) *track {
	if tr := w.procs[pid]; tr != nil {
		w.lastProc = tr
		return tr
	}
	name := "process " + strconv.FormatUint(uint64(pid), 10)
	var cmd []string
	if p := w.t.Process(pid); p != nil {
		cmd = p.Cmdline
		if len(cmd) > 0 {
			name = filepath.Base(cmd[0])
		}
		// Ranks of a job, or a process a merge moved: its rank, host and
		// own pid (analysis.IdentityOf).
		if id := analysis.IdentityOf(w.t, p); id.HasRank() || id.PID != pid {
			name += " " + id.Label()
		}
	}
	tr := &track{kind: trackProcess, name: name, pid: pid, cmd: cmd}
	w.procs[pid] = tr
	w.declare(tr)
	for _, th := range w.tableThs[pid] {
		w.thread(th.PID, th.TID).ensureTrack(w)
	}
	return tr
}

// thread returns the state of a thread (its track declared on first use).
func (w *Writer) thread(pid, tid uint32) *threadState {
	if th := w.last; th != nil && th.pid == pid && th.tid == tid {
		return th
	}
	k := threadKey{pid, tid}
	th := w.threads[k]
	if th == nil {
		th = &threadState{pid: pid, tid: tid}
		w.threads[k] = th
	}
	w.last = th
	return th
}

func (th *threadState) ensureTrack(w *Writer) *track {
	if th.tr != nil {
		return th.tr // inlined: declared once
	}
	return th.declareTrack(w)
}

// declareTrack declares the thread's track.
func (th *threadState) declareTrack(w *Writer) *track {
	name := ""
	for _, t := range w.tableThs[th.pid] {
		if t.TID == th.tid {
			name = t.Name
			break
		}
	}
	if name == "" {
		name = "thread " + strconv.FormatUint(uint64(th.tid), 10)
	}
	p := w.process(th.pid)
	th.tr = &track{up: p, kind: trackThread,
		name: name, pid: th.pid, tid: th.tid, order: int(th.tid), jsonID: uint64(th.tid)}
	w.declare(th.tr)
	return th.tr
}

func (w *Writer) event(ev *analysis.Event) {
	w.out.tick(ev.Start)
	w.process(ev.PID)
	switch ev.Kind {
	case trace.KindCall:
		th := w.thread(ev.PID, ev.TID)
		tr := th.ensureTrack(w)
		w.owe(tr, ev.Start)
		if th.stray(ev.Outer) {
			w.parentCheck(th, ev.Outer)
		}
		var flowOut, flowIn uint64
		a := ev.Analysis()
		if ev.Object != analysis.NoObject && ev.Created() {
			o := &a.Objects[ev.Object]
			w.created(o)
			if analysis.IsAllocation(o.Kind) {
				flowOut = flowID(o.Create)
			}
		}
		if w.flowEvent == ev.Index {
			flowIn = flowID(w.flowCreate)
		}
		var api *apiSlice
		if int(ev.API) < len(w.apis) {
			api = &w.apis[ev.API]
		} else {
			info := ev.API.Info()
			api = &apiSlice{info.Name, category(info.Category)}
		}
		w.out.call(ev, tr, api, flowOut, flowIn, w.callEnds, w.settle())
		if n := len(th.open); n > 0 {
			th.open[n-1].child(max(ev.End, ev.Start))
		}
	case trace.KindRangePush, trace.KindSpan:
		th := w.thread(ev.PID, ev.TID)
		tr := th.ensureTrack(w)
		w.owe(tr, ev.Start)
		if th.stray(ev.Outer) {
			w.parentCheck(th, ev.Outer)
		}
		args := w.args[:0]
		if d := w.t.String(ev.Domain); d != "" {
			args = append(args, arg{key: keyDomain, str: d})
		}
		w.args = args
		w.out.open(ev.Start, tr, sliceName{s: w.t.String(ev.Name), kind: nameString, id: uint32(ev.Name)}, catRange, args, w.settle())
		th.open = append(th.open, openScope{opener: ev.Index, start: ev.Start})
	case trace.KindFrame:
		th := w.thread(ev.PID, ev.TID)
		tr := th.ensureTrack(w)
		w.owe(tr, ev.Start)
		if th.stray(ev.Outer) {
			w.parentCheck(th, ev.Outer)
		}
		var c trace.Code
		if int(ev.Code) < len(w.t.Code) {
			c = w.t.Code[ev.Code]
		}
		name := sliceName{s: analysis.CodeName(w.t, ev.Code), kind: nameCode, id: uint32(ev.Code)}
		args := w.args[:0]
		if m := w.t.String(c.Module); m != "" {
			args = append(args, arg{key: keyModule, str: m})
		}
		if file := w.t.String(c.File); file != "" {
			args = append(args, arg{key: keyFile, str: file})
		}
		if c.Line > 0 {
			args = append(args, arg{key: keyLine, kind: argInt, num: int64(c.Line)})
		}
		if c.Kind == trace.CodeNative {
			args = append(args, arg{key: keyNative, str: "true"})
		}
		w.args = args
		w.out.open(ev.Start, tr, name, catPython, args, w.settle())
		th.open = append(th.open, openScope{opener: ev.Index, start: ev.Start})
	case trace.KindMark:
		w.out.mark(ev.Start, w.thread(ev.PID, ev.TID).ensureTrack(w), w.t.String(ev.Name))
	case trace.KindRangeStart:
		if r := ev.Opened(); r >= 0 {
			w.lanesOf[ev.Index] = w.place(ev.PID, uuidRangeGroup, 0, ev.Start)
		}
	}
}

// parentCheck makes sure the innermost open scope of th is the one the
// analysis says encloses the next slice (outer, the event that opened it):
// the analysis closes its scopes through OnRangeEnd and OnFrameEnd before
// the next event of their thread, so they are. Should a replay hand out
// something else, the scopes it did not close are ended where their last
// child ended, so that the slices still balance.
func (w *Writer) parentCheck(th *threadState, outer int) {
	for n := len(th.open); n > 0 && th.open[n-1].opener != outer; n = len(th.open) {
		s := &th.open[n-1]
		w.endScope(th, n-1, max(s.start, s.ext), nil)
	}
}

// stray says whether the innermost open scope of th is not outer's, which
// parentCheck then ends: an inlined test before it, as none are.
func (th *threadState) stray(outer int) bool {
	n := len(th.open)
	return n > 0 && th.open[n-1].opener != outer
}

// child records that a slice directly inside s ends at end.
func (s *openScope) child(end int64) {
	if !s.hasExt || end > s.ext {
		s.ext, s.hasExt = end, true
	}
}

// endScope ends th's open scope i (and what is above it) whose recorded end
// is recorded: it is drawn to its last child's end if that is later, with
// its recorded end as recorded_end_ns, then args.
func (w *Writer) endScope(th *threadState, i int, recorded int64, args []arg) {
	for len(th.open) > i+1 {
		s := th.open[len(th.open)-1]
		w.endScope(th, len(th.open)-1, max(s.start, s.ext), nil)
	}
	s := th.open[i]
	th.open = th.open[:i]
	end := recorded
	if s.hasExt && s.ext > end {
		end = s.ext
		args = append(args, arg{key: keyRecordedEnd, kind: argInt, num: recorded})
	}
	end = max(end, s.start)
	w.pay()
	w.out.close(end, th.tr, args)
	if n := len(th.open); n > 0 {
		th.open[n-1].child(end)
	}
}

// findOpen returns the index of the open scope opened by event opener, -1.
func (th *threadState) findOpen(opener int) int {
	for i := len(th.open) - 1; i >= 0; i-- {
		if th.open[i].opener == opener {
			return i
		}
	}
	return -1
}

func (w *Writer) rangeEnd(r *analysis.Range) {
	if r.Origin == trace.KindRangeStart {
		spot, ok := w.lanesOf[r.Open]
		if !ok {
			return
		}
		delete(w.lanesOf, r.Open)
		args := w.args[:0]
		if d := w.t.String(r.Domain); d != "" {
			args = append(args, arg{key: keyDomain, str: d})
		}
		w.args = args
		tr, end := w.finishOnLane(spot, r.Start, r.End)
		w.out.complete(tr, r.Start, end, sliceName{s: w.t.String(r.Name), kind: nameString, id: uint32(r.Name)}, catRange, args)
		return
	}
	th := w.thread(r.PID, r.TID)
	i := th.findOpen(r.Open)
	if i < 0 {
		return
	}
	args := w.args[:0]
	if r.Unterminated {
		args = append(args, arg{key: keyUnterminated, str: "true"})
	}
	w.endScope(th, i, r.End, args)
	w.args = args[:0]
}

func (w *Writer) frameEnd(f *analysis.Frame) {
	th := w.thread(f.PID, f.TID)
	i := th.findOpen(f.Open)
	if i < 0 {
		return
	}
	args := w.args[:0]
	if end := f.Ending(); end != "returned" {
		args = append(args, arg{key: keyEnd, str: end})
	}
	args = append(args, arg{key: keySelfNs, kind: argInt, num: f.SelfNs})
	w.endScope(th, i, f.End, args)
	w.args = args[:0]
}

// callFields are what a call's arguments say, handed to the sink as they
// are: it writes the arguments from them where the call is rendered.
type callFields struct {
	handle, stream, size uint64
	device               int32
	result               trace.Result
	caller               string // the call site's name (analysis.CallSite.Name), "" when not recorded
}

// keys returns the keys of the call's arguments, a bit each.
func (c *callFields) keys() uint64 {
	var k uint64
	if !c.result.OK() {
		k |= 1 << keyResult
	}
	if c.handle != 0 {
		k |= 1 << keyHandle
	}
	if c.stream != 0 {
		k |= 1 << keyStream
	}
	if c.size != 0 {
		k |= 1 << keyBytes
	}
	if c.device != trace.NoDevice {
		k |= 1 << keyDevice
	}
	if c.caller != "" {
		k |= 1 << keyCaller
	}
	return k
}

// created starts an object's lifetime: its lane, and its bytes in use.
func (w *Writer) created(o *analysis.Object) {
	w.lanesOf[o.Create] = w.place(o.PID, uuidGroup, uint64(o.Kind), o.Start)
	if !analysis.IsAllocation(o.Kind) {
		return
	}
	w.out.delta(w.process(o.PID), o, o.Start, 2*o.Create, int64(o.Bytes))
}

func (w *Writer) objectEnd(o *analysis.Object) {
	if analysis.IsAllocation(o.Kind) {
		if o.Reason != analysis.EndAlive {
			w.out.delta(w.process(o.PID), o, o.End, 2*o.Create+1, -int64(o.Bytes))
		}
		// the call that freed it gets the flow's end; of several
		// allocations one call freed, the last made
		if o.Create >= 0 && o.Destroy >= 0 && (w.flowEvent != o.Destroy || o.Create > w.flowCreate) {
			w.flowEvent, w.flowCreate = o.Destroy, o.Create
		}
	}
	spot, ok := w.lanesOf[o.Create]
	if !ok {
		return
	}
	delete(w.lanesOf, o.Create)
	// the name it was given while it lived, if any: the lifetime's slice
	// is named and its arguments made where it is rendered (pipe.lifetime)
	label := o.Name // the analysis's rule (analysis.Analysis.ObjectName)
	if label != 0 && w.t.String(label) == "" {
		label = 0
	}
	tr, end := w.finishOnLane(spot, o.Start, o.End)
	w.out.lifetime(tr, o, end, label)
}

// place returns the lane of an interval starting at start in the group
// (pid, kind, g), declaring the group and lane tracks it needs.
func (w *Writer) place(pid uint32, kind, g uint64, start int64) laneSpot {
	k := laneGroupKey(pid, kind, g)
	lg := w.groups[k]
	if lg == nil {
		name := "NVTX start/end ranges"
		if kind == uuidGroup {
			name = trace.Object(g).String() + " lifetimes"
		}
		p := w.process(pid)
		lg = &laneGroup{tr: &track{up: p, kind: trackGroup, name: name, pid: pid,
			order: 1_000_000 + int(kind)*1000 + int(g)}}
		w.groups[k] = lg
		w.declare(lg.tr)
	}
	for len(lg.busy) > 0 && lg.busy[0].end <= start {
		heapPush(&lg.free, heapPop(&lg.busy, laneEndLess).lane, intLess)
	}
	if len(lg.free) > 0 {
		return laneSpot{lg, heapPop(&lg.free, intLess)}
	}
	lane := len(lg.lanes)
	tr := &track{up: lg.tr, kind: trackLane,
		name: lg.tr.name + " #" + strconv.Itoa(lane), pid: pid, order: lane, jsonID: w.nextJSON}
	w.nextJSON++
	lg.lanes = append(lg.lanes, tr)
	w.declare(tr)
	return laneSpot{lg, lane}
}

// finishOnLane frees the lane of an interval whose end is known from its
// end on (its start if later) and returns the lane's track and that end:
// the caller writes the interval there next.
func (w *Writer) finishOnLane(s laneSpot, start, end int64) (*track, int64) {
	end = max(end, start)
	w.pay()
	heapPush(&s.g.busy, laneEnd{end, s.lane}, laneEndLess)
	return s.g.lanes[s.lane], end
}

func laneEndLess(a, b laneEnd) bool { return a.end < b.end }
func intLess(a, b int) bool         { return a < b }

func heapPush[T any](h *[]T, x T, less func(a, b T) bool) {
	*h = append(*h, x)
	heapUp(*h, less)
}

// heapUp restores the heap s whose last element was added.
func heapUp[T any](s []T, less func(a, b T) bool) {
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !less(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func heapPop[T any](h *[]T, less func(a, b T) bool) T {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && less(s[l], s[m]) {
			m = l
		}
		if r := l + 1; r < n && less(s[r], s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// Estimate returns the size the timeline will have once all total events
// are replayed, when read of them have been: what it took per event so
// far, times total. Lifetimes and ranges are written when they end, so the
// first events of a trace weigh a little less than the rest; the command
// asks after a sixteenth of the events.
func (w *Writer) Estimate(read, total int64) int64 {
	if read <= 0 {
		return 0
	}
	return int64(float64(w.Size()) / float64(read) * float64(total))
}
