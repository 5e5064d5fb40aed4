// Package legacy is the timeline writer cuprof had before it streamed:
// it holds every slice of the trace in memory and sorts them before
// writing. It is kept, unchanged in what it writes, as the reference the
// streaming writer of package perfetto is checked against (its tests
// decode both outputs and compare what they resolve to); nothing else
// uses it.
package legacy

import (
	"container/heap"
	"fmt"
	"path/filepath"
	"sort"
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

// track is one timeline row.
type track struct {
	uuid   uint64
	parent uint64 // 0: top level
	kind   trackKind
	name   string
	pid    uint32
	tid    uint32   // thread tracks
	cmd    []string // process tracks
	order  int      // rank among its siblings
}

// arg is one annotation shown with a slice.
type arg struct {
	key  string
	str  string
	num  int64
	isNo bool // num holds the value
}

// slice is a named interval on a track.
type slice struct {
	track      int // index into timeline.tracks
	start, end int64
	name       string
	cat        string
	args       []arg
	flowOut    uint64 // flow starting at this slice, 0 none
	flowIn     uint64 // flow terminating at this slice, 0 none
	seq        int    // generation order, keeps equal timestamps in a valid order
	// up is 1 + the index in timeline.slices of the slice this one is
	// nested in on a thread's track, 0 for a top-level one; nested is set on
	// thread tracks, whose nesting is the analysis' (lanes nest by time)
	up     int
	nested bool
}

// instant is a point event on a track.
type instant struct {
	track int
	t     int64
	name  string
}

// sample is one counter value from t on.
type sample struct {
	track int
	t     int64
	value int64
}

// timeline is what both writers render.
type timeline struct {
	tracks   []track
	slices   []slice // per track: properly nested, in begin order
	instants []instant
	samples  []sample
}

// uuids are derived from what a track stands for, so they are stable.
func uuid(parts ...uint64) uint64 {
	h := uint64(1469598103934665603)
	for _, p := range parts {
		for i := 0; i < 8; i++ {
			h ^= p & 0xff
			h *= 1099511628211
			p >>= 8
		}
	}
	if h == 0 {
		h = 1
	}
	return h
}

const (
	uuidProcess = 1 + iota
	uuidThread
	uuidGroup
	uuidLane
	uuidCounterDevice
	uuidCounterPool
	uuidFlow
	uuidRangeGroup
)

type threadKey struct{ pid, tid uint32 }

// threadSlice is a slice of a thread's track as the replay found it: a
// call, or a push/pop range, span or Python frame (its end and arguments
// filled in when it ends).
type threadSlice struct {
	slice
	th       threadKey
	event    int // the call or opening event
	parent   int // index of the slice of the activation around it, -1
	extended bool
	recorded int64 // the recorded end of an extended slice
}

// Timeline collects what one analysis replay of a trace resolved into the
// tracks Write and WriteChromeJSON render: NewTimeline, pass Options() to
// analysis.Of (or analysis.NewTracker), then WriteProto or WriteChromeJSON
// with the analysis. Write and WriteChromeJSON of a trace do all three.
type Timeline struct {
	t       *trace.Trace
	slices  []threadSlice
	open    map[int]int // opening event -> index into slices, while open
	seen    []threadKey // threads in order of first event
	seenIx  map[threadKey]bool
	pids    map[uint32]bool
	marks   []instant
	markTh  []threadKey
	loose   []int // indexes into Analysis.Ranges of start/end ranges, by end
	looseAt map[int]int
}

// NewTimeline returns a timeline of t, whose tables (Processes, Threads,
// Strings, Code) it reads; the events come from the analysis.
func NewTimeline(t *trace.Trace) *Timeline {
	return &Timeline{t: t, open: map[int]int{}, seenIx: map[threadKey]bool{}, pids: map[uint32]bool{},
		looseAt: map[int]int{}}
}

// Options returns the analysis visitors that feed the timeline.
func (tl *Timeline) Options() []analysis.Option {
	return []analysis.Option{analysis.OnEvent(tl.event), analysis.OnRangeEnd(tl.rangeEnd), analysis.OnFrameEnd(tl.frameEnd)}
}

// analyse replays t once into a new timeline.
func analyse(t *trace.Trace) (*Timeline, *analysis.Analysis) {
	tl := NewTimeline(t)
	return tl, analysis.Of(t, tl.Options()...)
}

func (tl *Timeline) thread(k threadKey) {
	if !tl.seenIx[k] {
		tl.seenIx[k] = true
		tl.seen = append(tl.seen, k)
	}
}

func (tl *Timeline) event(ev *analysis.Event) {
	k := threadKey{ev.PID, ev.TID}
	tl.pids[ev.PID] = true
	t := tl.t
	switch ev.Kind {
	case trace.KindCall:
		tl.thread(k)
		tl.add(ev, k, slice{start: ev.Start, end: ev.End, name: ev.API.String(), cat: ev.API.Info().Category.String(),
			args: callArgs(ev)})
	case trace.KindRangePush, trace.KindSpan, trace.KindFrame:
		tl.thread(k)
		tl.open[ev.Index] = len(tl.slices)
		tl.add(ev, k, slice{start: ev.Start, end: ev.End})
	case trace.KindMark:
		tl.thread(k)
		tl.marks = append(tl.marks, instant{t: ev.Start, name: t.String(ev.Name)})
		tl.markTh = append(tl.markTh, k)
	}
}

func (tl *Timeline) add(ev *analysis.Event, k threadKey, s slice) {
	parent := -1
	if ev.Outer >= 0 {
		if p, ok := tl.open[ev.Outer]; ok {
			parent = p
		}
	}
	tl.slices = append(tl.slices, threadSlice{slice: s, th: k, event: ev.Index, parent: parent})
}

func (tl *Timeline) rangeEnd(r *analysis.Range) {
	t := tl.t
	if r.Origin == trace.KindRangeStart {
		tl.loose = append(tl.loose, r.Open)
		return
	}
	i, ok := tl.open[r.Open]
	if !ok {
		return
	}
	delete(tl.open, r.Open)
	s := &tl.slices[i]
	s.end, s.name, s.cat = r.End, t.String(r.Name), "range"
	if d := t.String(r.Domain); d != "" {
		s.args = append(s.args, arg{key: "domain", str: d})
	}
	if r.Unterminated {
		s.args = append(s.args, arg{key: "unterminated", str: "true"})
	}
}

// frameEnd names a Python frame's slice: its qualified name, with the
// function's module, file and first line and its self time as arguments.
func (tl *Timeline) frameEnd(f *analysis.Frame) {
	i, ok := tl.open[f.Open]
	if !ok {
		return
	}
	delete(tl.open, f.Open)
	t := tl.t
	var c trace.Code
	if int(f.Code) < len(t.Code) {
		c = t.Code[f.Code]
	}
	s := &tl.slices[i]
	s.end, s.name, s.cat = f.End, analysis.CodeName(t, f.Code), "python"
	if m := t.String(c.Module); m != "" {
		s.args = append(s.args, arg{key: "module", str: m})
	}
	if file := t.String(c.File); file != "" {
		s.args = append(s.args, arg{key: "file", str: file})
	}
	if c.Line > 0 {
		s.args = append(s.args, arg{key: "line", num: int64(c.Line), isNo: true})
	}
	if c.Kind == trace.CodeNative {
		s.args = append(s.args, arg{key: "native", str: "true"})
	}
	if end := f.Ending(); end != "returned" {
		s.args = append(s.args, arg{key: "end", str: end})
	}
	s.args = append(s.args, arg{key: "self_ns", num: f.SelfNs, isNo: true})
}

// build turns what the replay collected into a timeline.
func (tl *Timeline) build(a *analysis.Analysis) *timeline {
	t := tl.t
	out := &timeline{}
	seq := 0
	addTrack := func(tr track) int {
		out.tracks = append(out.tracks, tr)
		return len(out.tracks) - 1
	}
	// processes and threads
	procs := map[uint32]int{}
	var pids []uint32
	cmdOf := map[uint32][]string{}
	for _, p := range t.Processes {
		cmdOf[p.PID] = p.Cmdline
	}
	threadName := map[threadKey]string{}
	for _, th := range t.Threads {
		threadName[threadKey{th.PID, th.TID}] = th.Name
	}
	seenPID := map[uint32]bool{}
	for _, p := range t.Processes {
		if !seenPID[p.PID] {
			seenPID[p.PID] = true
			pids = append(pids, p.PID)
		}
	}
	for _, k := range tl.seen {
		if !seenPID[k.pid] {
			seenPID[k.pid] = true
			pids = append(pids, k.pid)
		}
	}
	for pid := range tl.pids {
		if !seenPID[pid] {
			seenPID[pid] = true
			pids = append(pids, pid)
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		name := "process " + strconv.FormatUint(uint64(pid), 10)
		if c := cmdOf[pid]; len(c) > 0 {
			name = filepath.Base(c[0])
		}
		if id, ok := analysis.IdentityByPID(t, pid); ok && (id.HasRank() || id.PID != pid) {
			name += " " + id.Label()
		}
		procs[pid] = addTrack(track{uuid: uuid(uuidProcess, uint64(pid)), kind: trackProcess, name: name,
			pid: pid, cmd: cmdOf[pid]})
	}
	threads := map[threadKey]int{}
	threadTrack := func(k threadKey) int {
		if i, ok := threads[k]; ok {
			return i
		}
		name := threadName[k]
		if name == "" {
			name = "thread " + strconv.FormatUint(uint64(k.tid), 10)
		}
		i := addTrack(track{uuid: uuid(uuidThread, uint64(k.pid), uint64(k.tid)), parent: out.tracks[procs[k.pid]].uuid,
			kind: trackThread, name: name, pid: k.pid, tid: k.tid, order: int(k.tid)})
		threads[k] = i
		return i
	}
	for _, th := range t.Threads {
		if _, ok := procs[th.PID]; ok {
			threadTrack(threadKey{th.PID, th.TID})
		}
	}
	for _, k := range tl.seen {
		threadTrack(k)
	}

	// flows from the call that made an allocation to the call that freed it
	flowOut := map[int]uint64{} // event index -> flow id
	flowIn := map[int]uint64{}
	for i := range a.Objects {
		o := &a.Objects[i]
		if analysis.IsAllocation(o.Kind) && o.Create >= 0 && o.Destroy >= 0 {
			id := uuid(uuidFlow, uint64(o.Create), uint64(o.Destroy))
			flowOut[o.Create] = id
			flowIn[o.Destroy] = id
		}
	}

	// thread slices, in the order the replay opened them (parents first),
	// nested as the analysis nests them: a slice whose children outlast it
	// (a push range popped while a span or frame it encloses runs on) is
	// drawn to the end of its last child, its recorded end kept as an
	// argument, because the format nests slices strictly by time
	for i := len(tl.slices) - 1; i >= 0; i-- {
		s := &tl.slices[i]
		s.end = max(s.end, s.start)
		if p := s.parent; p >= 0 && s.end > tl.slices[p].end {
			ps := &tl.slices[p]
			if !ps.extended {
				ps.extended, ps.recorded = true, ps.end
			}
			ps.end = s.end
		}
	}
	for i := range tl.slices {
		s := &tl.slices[i]
		s.track, s.seq, s.up, s.nested = threadTrack(s.th), seq, s.parent+1, true
		seq++
		if s.cat != "range" && s.cat != "python" {
			s.flowOut, s.flowIn = flowOut[s.event], flowIn[s.event]
		}
		if s.extended {
			s.args = append(s.args, arg{key: "recorded_end_ns", num: s.recorded, isNo: true})
		}
		out.slices = append(out.slices, s.slice)
	}
	for i, m := range tl.marks {
		m.track = threadTrack(tl.markTh[i])
		out.instants = append(out.instants, m)
	}

	// NVTX start/end ranges: lanes under one group per process
	var rangeIvs []laneItem
	byOpen := map[int]int{}
	for i := range a.Ranges {
		if a.Ranges[i].Origin == trace.KindRangeStart {
			byOpen[a.Ranges[i].Open] = i
		}
	}
	for _, open := range tl.loose {
		i := byOpen[open]
		r := &a.Ranges[i]
		rangeIvs = append(rangeIvs, laneItem{pid: r.PID, start: r.Start, end: r.End, index: i})
	}
	sort.SliceStable(rangeIvs, func(i, j int) bool { return rangeIvs[i].index < rangeIvs[j].index })
	out.addLanes(rangeIvs, procs, uuidRangeGroup, func(pid uint32, _ uint64) (uint64, string) {
		return 0, "NVTX start/end ranges"
	}, func(it laneItem) slice {
		r := &a.Ranges[it.index]
		s := slice{name: t.String(r.Name), cat: "range", seq: seq}
		seq++
		if d := t.String(r.Domain); d != "" {
			s.args = append(s.args, arg{key: "domain", str: d})
		}
		return s
	})

	// lifetimes: lanes under one group per object kind per process
	var objIvs []laneItem
	for i := range a.Objects {
		o := &a.Objects[i]
		objIvs = append(objIvs, laneItem{pid: o.PID, group: uint64(o.Kind), start: o.Start, end: o.End, index: i})
	}
	out.addLanes(objIvs, procs, uuidGroup, func(pid uint32, g uint64) (uint64, string) {
		return g, trace.Object(g).String() + " lifetimes"
	}, func(it laneItem) slice {
		o := &a.Objects[it.index]
		s := slice{cat: "lifetime", seq: seq}
		seq++
		s.name = o.Kind.String() + " " + hexStr(o.Handle)
		if n := a.ObjectName(o); n != "" {
			s.name = n + " (" + s.name + ")"
		}
		s.args = append(s.args, arg{key: "handle", str: hexStr(o.Handle)}, arg{key: "end", str: o.Reason.String()})
		if o.Bytes != 0 {
			s.args = append(s.args, arg{key: "bytes", num: int64(o.Bytes), isNo: true})
		}
		if o.Device != trace.NoDevice {
			s.args = append(s.args, arg{key: "device", num: int64(o.Device), isNo: true})
		}
		if o.Pool != 0 {
			s.args = append(s.args, arg{key: "pool", str: hexStr(o.Pool)})
		}
		return s
	})

	// counters: bytes in use per device (and allocation kind), and per pool
	out.addCounters(a, procs)
	return out
}

func hexStr(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

func callArgs(e *analysis.Event) []arg {
	var a []arg
	if !e.Result.OK() {
		a = append(a, arg{key: "result", str: e.Result.String()})
	}
	if e.Handle != 0 {
		a = append(a, arg{key: "handle", str: hexStr(e.Handle)})
	}
	if e.Stream != 0 {
		a = append(a, arg{key: "stream", str: hexStr(e.Stream)})
	}
	if e.Size != 0 {
		a = append(a, arg{key: "bytes", num: int64(e.Size), isNo: true})
	}
	if e.Device != trace.NoDevice {
		a = append(a, arg{key: "device", num: int64(e.Device), isNo: true})
	}
	if e.Caller != 0 {
		a = append(a, arg{key: "caller", str: e.CallSite().Name()})
	}
	return a
}

// laneItem is an interval to place on the first free lane of its group.
type laneItem struct {
	pid        uint32
	group      uint64
	start, end int64
	index      int
}

type laneEnd struct {
	end  int64
	lane int
}

type endHeap []laneEnd

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(laneEnd)) }
func (h *endHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

// addLanes places items on lanes: per (process, group) a parent track, and
// under it lane tracks such that items on one lane never overlap; each item
// takes the lowest free lane.
func (tl *timeline) addLanes(items []laneItem, procs map[uint32]int, kind uint64,
	group func(pid uint32, g uint64) (uint64, string), mk func(laneItem) slice) {
	type gk struct {
		pid uint32
		g   uint64
	}
	byGroup := map[gk][]laneItem{}
	var keys []gk
	for _, it := range items {
		k := gk{it.pid, it.group}
		if _, ok := byGroup[k]; !ok {
			keys = append(keys, k)
		}
		byGroup[k] = append(byGroup[k], it)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].pid != keys[j].pid {
			return keys[i].pid < keys[j].pid
		}
		return keys[i].g < keys[j].g
	})
	for _, k := range keys {
		its := byGroup[k]
		sort.SliceStable(its, func(i, j int) bool { return its[i].start < its[j].start })
		order, name := group(k.pid, k.g)
		parent := tl.tracks[procs[k.pid]].uuid
		gu := uuid(kind, uint64(k.pid), k.g)
		tl.tracks = append(tl.tracks, track{uuid: gu, parent: parent, kind: trackGroup, name: name, pid: k.pid,
			order: 1_000_000 + int(kind)*1000 + int(order)})
		var lanes []int // track index per lane
		busy := &endHeap{}
		free := &intHeap{}
		for _, it := range its {
			for busy.Len() > 0 && (*busy)[0].end <= it.start {
				heap.Push(free, heap.Pop(busy).(laneEnd).lane)
			}
			var lane int
			if free.Len() > 0 {
				lane = heap.Pop(free).(int)
			} else {
				lane = len(lanes)
				tl.tracks = append(tl.tracks, track{uuid: uuid(uuidLane, gu, uint64(lane)), parent: gu, kind: trackLane,
					name: fmt.Sprintf("%s #%d", name, lane), pid: k.pid, order: lane})
				lanes = append(lanes, len(tl.tracks)-1)
			}
			end := it.end
			if end < it.start {
				end = it.start
			}
			heap.Push(busy, laneEnd{end, lane})
			s := mk(it)
			s.track, s.start, s.end = lanes[lane], it.start, end
			tl.slices = append(tl.slices, s)
		}
	}
}

// addCounters adds bytes-in-use counters: one per process, device and
// allocation kind (summing its pools), and one per pool.
func (tl *timeline) addCounters(an *analysis.Analysis, procs map[uint32]int) {
	type devKey struct {
		pid  uint32
		dev  int32
		kind trace.Object
	}
	type change struct {
		t       int64
		counter int
		value   uint64
	}
	byDev := map[devKey][]change{}
	var devKeys []devKey
	counters := an.BytesInUse()
	for ci, c := range counters {
		k := devKey{c.Key.PID, c.Key.Device, c.Key.Kind}
		if _, ok := byDev[k]; !ok {
			devKeys = append(devKeys, k)
		}
		for _, s := range c.Samples {
			byDev[k] = append(byDev[k], change{s.T, ci, s.Bytes})
		}
		if c.Key.Pool != 0 || c.Key.DefaultPool {
			name := "pool " + hexStr(c.Key.Pool) + " bytes in use"
			if c.Key.Pool == 0 {
				name = fmt.Sprintf("device %d default pool bytes in use", c.Key.Device)
			}
			tr := tl.counterTrack(procs, c.Key.PID, uuid(uuidCounterPool, uint64(c.Key.PID), uint64(c.Key.Device),
				c.Key.Pool, boolU(c.Key.DefaultPool)), name, 2_000_100)
			for _, s := range c.Samples {
				tl.samples = append(tl.samples, sample{tr, s.T, int64(s.Bytes)})
			}
		}
	}
	for _, k := range devKeys {
		chs := byDev[k]
		sort.SliceStable(chs, func(i, j int) bool { return chs[i].t < chs[j].t })
		dev := "device " + strconv.Itoa(int(k.dev))
		if k.dev == trace.NoDevice {
			dev = "unknown device"
		}
		what := map[trace.Object]string{trace.ObjectAllocation: "memory",
			trace.ObjectHostAllocation: "pinned host memory", trace.ObjectManagedAllocation: "managed memory",
			trace.ObjectMapping: "mapped memory"}[k.kind]
		tr := tl.counterTrack(procs, k.pid, uuid(uuidCounterDevice, uint64(k.pid), uint64(k.dev), uint64(k.kind)),
			dev+" "+what+" bytes in use", 2_000_000)
		cur := map[int]uint64{}
		var sum uint64
		for i, c := range chs {
			sum = sum - cur[c.counter] + c.value
			cur[c.counter] = c.value
			if i+1 < len(chs) && chs[i+1].t == c.t {
				continue // one sample per time
			}
			tl.samples = append(tl.samples, sample{tr, c.t, int64(sum)})
		}
	}
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (tl *timeline) counterTrack(procs map[uint32]int, pid uint32, u uint64, name string, order int) int {
	tl.tracks = append(tl.tracks, track{uuid: u, parent: tl.tracks[procs[pid]].uuid, kind: trackCounter,
		name: name, pid: pid, order: order})
	return len(tl.tracks) - 1
}
