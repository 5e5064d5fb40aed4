package flame

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/trace"
)

// Sample value slots; which are used depends on the view.
const (
	vCalls = 0 // api: calls/count
	vTime  = 1 // api: time/nanoseconds

	vAllocObjects = 0 // memory
	vAllocSpace   = 1
	vInuseObjects = 2
	vInuseSpace   = 3

	vObjects  = 0 // lifetime
	vLifetime = 1
)

// frameKind says what a location stands for.
type frameKind uint8

const (
	frameProcess frameKind = iota
	frameThread
	frameRange
	frameCaller
	frameAPI
)

// loc is one deduplicated location: a frame of some stack.
type loc struct {
	name    string
	file    string
	kind    frameKind
	addr    uint64
	mapping int // index into builder.mappings, or -1
}

// node is a node of the stack trie: a location under a parent node.
type node struct {
	parent uint32 // 0 is the empty stack
	loc    uint32
	// cache of the last child looked up, which is the usual next one
	lastLoc, lastChild uint32
}

type edge struct{ parent, loc uint32 }

// sampleKey is what samples are aggregated by: the stack and label values.
type sampleKey struct {
	node   uint32
	thread uint32 // index into builder.threadNames; 0: unnamed
	api    trace.API
	object trace.Object // lifetime view
	live   bool         // lifetime view: never destroyed
	dev    int32
	result trace.Result
	size   uint64 // bytes label; 0: none
}

type sample struct {
	key sampleKey
	v   [4]int64
}

// openFrame is a range open on a thread.
type openFrame struct {
	node    uint32
	start   int64
	end     int64 // known end (spans, same-thread start/end ranges), or -1
	child   int64 // time spent in frames and calls directly inside
	push    bool  // closed by a pop
	event   int
	name    trace.StringID
	dev     int32
	started bool // an NVTX start/end range (closed at its end event's time)
}

type threadState struct {
	pid, tid uint32
	base     uint32 // trie node of the roots
	name     uint32 // index into threadNames
	stack    []openFrame
	last     int64
}

type objectKey struct {
	pid    uint32
	family trace.Object
	handle uint64
}

type liveObject struct {
	sample  int // index into samples (memory view)
	key     sampleKey
	size    uint64
	created int64
}

type callerKey struct {
	pid  uint32
	addr uint64
}

type builder struct {
	cfg    config
	tr     *trace.Trace
	inside int64

	locs      []loc
	rangeLocs map[[2]trace.StringID]uint32
	apiLocs   []uint32 // by API; 0: not yet made
	callers   map[callerKey]uint32
	rootLocs  map[string]uint32
	nodes     []node
	children  map[edge]uint32

	samples  []sample
	sampleIx map[sampleKey]int

	threads      map[uint64]*threadState
	names        map[uint64]string // thread names by pid<<32|tid
	lastThread   *threadState
	threadNames  []string
	threadNameIx map[string]uint32

	live map[objectKey]liveObject

	// start/end ranges: start event index -> end event index, for those that
	// end on the thread they started on
	sameThreadEnd map[int]int64
	crossThread   int

	sym *symbolizer

	warnings     []Warning
	moreWarnings int
}

// Build converts t into a profile. Events must be in trace.SortEvents order.
// The warnings report events that could not be placed in a stack as recorded.
func Build(t *trace.Trace, opts ...Option) (*profile.Profile, []Warning, error) {
	if t == nil {
		return nil, nil, ErrNoTrace
	}
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	if int(cfg.view) >= len(viewNames) {
		return nil, nil, fmt.Errorf("build profile: unknown view %d", cfg.view)
	}
	for i := 1; i < len(t.Events); i++ {
		if t.Events[i].Start < t.Events[i-1].Start {
			return nil, nil, fmt.Errorf("build profile: event %d starts before event %d: %w (sort them with trace.SortEvents)", i, i-1, ErrUnsorted)
		}
	}
	b := &builder{
		cfg:          cfg,
		tr:           t,
		rangeLocs:    map[[2]trace.StringID]uint32{},
		apiLocs:      make([]uint32, len(trace.APIs())+1),
		callers:      map[callerKey]uint32{},
		rootLocs:     map[string]uint32{},
		nodes:        []node{{}},
		locs:         []loc{{}},
		children:     map[edge]uint32{},
		sampleIx:     map[sampleKey]int{},
		threads:      map[uint64]*threadState{},
		threadNames:  []string{""},
		threadNameIx: map[string]uint32{"": 0},
		live:         map[objectKey]liveObject{},
	}
	if in := t.Meta.Overhead.InsideNs; in > 0 { // NaN fails this too
		b.inside = int64(math.Round(min(in, 1<<62)))
	}
	b.pairStartEnd()
	b.walk()
	b.finish()
	p := b.profile()
	w := b.warnings
	sort.SliceStable(w, func(i, j int) bool { return w[i].Event < w[j].Event })
	if b.moreWarnings > 0 {
		w = append(w, Warning{Event: -1, Reason: fmt.Sprintf("%d more warnings left out", b.moreWarnings)})
	}
	return p, w, nil
}

func (b *builder) warn(event int, format string, args ...any) {
	if len(b.warnings) >= MaxWarnings {
		b.moreWarnings++
		return
	}
	b.warnings = append(b.warnings, Warning{Event: event, Reason: fmt.Sprintf(format, args...)})
}

// pairStartEnd finds the NVTX start/end ranges that end on the thread they
// started on, and reports ends of unknown ranges.
func (b *builder) pairStartEnd() {
	type idKey struct {
		pid uint32
		id  uint64
	}
	var started map[idKey]int
	for i := range b.tr.Events {
		e := &b.tr.Events[i]
		switch e.Kind {
		case trace.KindRangeStart:
			if started == nil {
				started = map[idKey]int{}
				b.sameThreadEnd = map[int]int64{}
			}
			k := idKey{e.PID, e.ID}
			if j, dup := started[k]; dup {
				b.warn(i, "range id %d started again before its start at event %d ended; the first is left open", e.ID, j)
			}
			started[k] = i
		case trace.KindRangeEnd:
			k := idKey{e.PID, e.ID}
			j, ok := started[k]
			if !ok {
				b.warn(i, "end of range id %d that was never started: ignored", e.ID)
				continue
			}
			delete(started, k)
			if b.tr.Events[j].TID == e.TID {
				b.sameThreadEnd[j] = e.Start
			} else {
				b.crossThread++
			}
		}
	}
}

func (b *builder) walk() {
	for i := range b.tr.Events {
		e := &b.tr.Events[i]
		th := b.thread(e.PID, e.TID)
		b.expire(th, e.Start)
		switch e.Kind {
		case trace.KindCall:
			b.call(th, e)
		case trace.KindRangePush:
			b.open(th, e, i, -1, true, false)
		case trace.KindSpan:
			b.open(th, e, i, e.End, false, false)
		case trace.KindRangeStart:
			if end, ok := b.sameThreadEnd[i]; ok {
				b.open(th, e, i, end, false, true)
			}
		case trace.KindRangePop:
			b.pop(th, e, i)
		case trace.KindRangeEnd, trace.KindMark, trace.KindObjectName:
		default:
			b.warn(i, "unknown event kind %d: ignored", e.Kind)
		}
		if e.Start > th.last {
			th.last = e.Start
		}
		if e.End > th.last {
			th.last = e.End
		}
	}
}

func (b *builder) thread(pid, tid uint32) *threadState {
	if th := b.lastThread; th != nil && th.pid == pid && th.tid == tid {
		return th
	}
	k := uint64(pid)<<32 | uint64(tid)
	th := b.threads[k]
	if th == nil {
		th = &threadState{pid: pid, tid: tid}
		if b.names == nil {
			b.names = make(map[uint64]string, len(b.tr.Threads))
			for _, x := range b.tr.Threads {
				if _, dup := b.names[uint64(x.PID)<<32|uint64(x.TID)]; !dup {
					b.names[uint64(x.PID)<<32|uint64(x.TID)] = x.Name
				}
			}
		}
		name := b.names[k]
		th.name = b.threadName(name)
		if b.cfg.processRoot {
			exe := ""
			if p := b.tr.Process(pid); p != nil {
				exe = filepath.Base(p.Exe)
				if p.Exe == "" && len(p.Cmdline) > 0 {
					exe = filepath.Base(p.Cmdline[0])
				}
			}
			th.base = b.child(0, b.rootLoc(frameProcess, fmt.Sprintf("[process %d] %s", pid, exe)))
		}
		if b.cfg.threadRoot {
			th.base = b.child(th.base, b.rootLoc(frameThread, fmt.Sprintf("[thread %d] %s", tid, name)))
		}
		b.threads[k] = th
	}
	b.lastThread = th
	return th
}

func (b *builder) threadName(s string) uint32 {
	if id, ok := b.threadNameIx[s]; ok {
		return id
	}
	id := uint32(len(b.threadNames))
	b.threadNames = append(b.threadNames, s)
	b.threadNameIx[s] = id
	return id
}

func (b *builder) rootLoc(kind frameKind, name string) uint32 {
	if id, ok := b.rootLocs[name]; ok {
		return id
	}
	id := b.addLoc(loc{name: name, kind: kind, mapping: -1})
	b.rootLocs[name] = id
	return id
}

func (b *builder) addLoc(l loc) uint32 {
	b.locs = append(b.locs, l)
	return uint32(len(b.locs) - 1)
}

// child returns the trie node for location l under parent.
func (b *builder) child(parent, l uint32) uint32 {
	n := &b.nodes[parent]
	if n.lastLoc == l && n.lastChild != 0 {
		return n.lastChild
	}
	id, ok := b.children[edge{parent, l}]
	if !ok {
		id = uint32(len(b.nodes))
		b.nodes = append(b.nodes, node{parent: parent, loc: l})
		b.children[edge{parent, l}] = id
		n = &b.nodes[parent]
	}
	n.lastLoc, n.lastChild = l, id
	return id
}

func (b *builder) top(th *threadState) uint32 {
	if len(th.stack) == 0 {
		return th.base
	}
	return th.stack[len(th.stack)-1].node
}

// expire closes the ranges of known end on top of th's stack that ended by t.
func (b *builder) expire(th *threadState, t int64) {
	for len(th.stack) > 0 {
		f := &th.stack[len(th.stack)-1]
		if f.end < 0 || f.end > t {
			return
		}
		b.close(th, f.end)
	}
}

func (b *builder) open(th *threadState, e *trace.Event, i int, end int64, push, started bool) {
	key := [2]trace.StringID{e.Name, e.Domain}
	l, ok := b.rangeLocs[key]
	if !ok {
		name := b.tr.String(e.Name)
		if name == "" {
			name = "(unnamed range)"
		}
		file := b.tr.String(e.Domain)
		l = b.addLoc(loc{name: name, file: file, kind: frameRange, mapping: -1})
		b.rangeLocs[key] = l
	}
	th.stack = append(th.stack, openFrame{
		node: b.child(b.top(th), l), start: e.Start, end: end, push: push,
		event: i, name: e.Name, dev: e.Device, started: started,
	})
}

func (b *builder) pop(th *threadState, e *trace.Event, i int) {
	j := len(th.stack) - 1
	for j >= 0 && !th.stack[j].push {
		j--
	}
	if j < 0 {
		b.warn(i, "pop with no open push range on thread %d: ignored", e.TID)
		return
	}
	for len(th.stack)-1 > j {
		f := &th.stack[len(th.stack)-1]
		b.warn(f.event, "range %q still open when the push range %q around it popped at %d: closed there",
			b.tr.String(f.name), b.tr.String(th.stack[j].name), e.Start)
		b.close(th, e.Start)
	}
	b.close(th, e.Start)
}

// close ends the innermost open frame of th at time end.
func (b *builder) close(th *threadState, end int64) {
	f := th.stack[len(th.stack)-1]
	th.stack = th.stack[:len(th.stack)-1]
	dur := end - f.start
	if dur < 0 {
		dur = 0
	}
	if len(th.stack) > 0 {
		p := &th.stack[len(th.stack)-1]
		p.child += dur
		if p.end >= 0 && end > p.end {
			b.warn(f.event, "range %q ends at %d, after the range %q around it ended at %d: not properly nested",
				b.tr.String(f.name), end, b.tr.String(p.name), p.end)
		}
	}
	if b.cfg.view != ViewAPI {
		return
	}
	self := dur - f.child
	if self < 0 {
		self = 0
	}
	s := b.sample(sampleKey{node: f.node, thread: th.name, dev: trace.NoDevice})
	s.v[vTime] += self
}

func (b *builder) sample(k sampleKey) *sample {
	i, ok := b.sampleIx[k]
	if !ok {
		i = len(b.samples)
		b.samples = append(b.samples, sample{key: k})
		b.sampleIx[k] = i
	}
	return &b.samples[i]
}

func (b *builder) apiLoc(a trace.API) uint32 {
	if int(a) < len(b.apiLocs) {
		if l := b.apiLocs[a]; l != 0 {
			return l
		}
	}
	l := b.addLoc(loc{name: a.String(), kind: frameAPI, mapping: -1})
	if int(a) < len(b.apiLocs) {
		b.apiLocs[a] = l
	}
	return l
}

// sizeLabel reports whether an API's Size is a byte count worth a label.
func sizeLabel(info *trace.APIInfo) bool {
	switch {
	case info.Category == trace.CategoryMemcpy:
		return true
	case info.Role == trace.RoleCreate:
		return family(info.Object) != trace.ObjectNone
	}
	return false
}

// family maps allocation kinds freed by the same call to one kind.
func family(o trace.Object) trace.Object {
	switch o {
	case trace.ObjectAllocation, trace.ObjectManagedAllocation:
		return trace.ObjectAllocation
	case trace.ObjectHostAllocation:
		return trace.ObjectHostAllocation
	}
	return trace.ObjectNone
}

func (b *builder) call(th *threadState, e *trace.Event) {
	dur := e.Duration()
	if len(th.stack) > 0 {
		th.stack[len(th.stack)-1].child += dur
	}
	info := e.API.Info()
	if b.cfg.view != ViewAPI && (!e.Result.OK() || (info.Role != trace.RoleCreate && info.Role != trace.RoleDestroy)) {
		return
	}
	n := b.top(th)
	if e.Caller != 0 {
		n = b.child(n, b.callerLoc(e.PID, e.Caller))
	}
	n = b.child(n, b.apiLoc(e.API))
	k := sampleKey{node: n, thread: th.name, api: e.API, dev: e.Device, result: e.Result}
	if sizeLabel(&info) {
		k.size = e.Size
	}
	switch b.cfg.view {
	case ViewAPI:
		t := dur - b.inside
		if t < 0 {
			t = 0
		}
		s := b.sample(k)
		s.v[vCalls]++
		s.v[vTime] += t
	case ViewMemory:
		fam := family(info.Object)
		if fam == trace.ObjectNone {
			return
		}
		ok := objectKey{e.PID, fam, e.Handle}
		if info.Role == trace.RoleDestroy {
			delete(b.live, ok)
			return
		}
		s := b.sample(k)
		s.v[vAllocObjects]++
		s.v[vAllocSpace] += int64(e.Size)
		if e.Handle != 0 {
			b.live[ok] = liveObject{sample: b.sampleIx[k], size: e.Size}
		}
	case ViewLifetime:
		if info.Object == trace.ObjectNone || e.Handle == 0 {
			return
		}
		fam := family(info.Object)
		if fam == trace.ObjectNone {
			fam = info.Object
		}
		ok := objectKey{e.PID, fam, e.Handle}
		if info.Role == trace.RoleDestroy {
			if o, found := b.live[ok]; found {
				delete(b.live, ok)
				b.lifetime(o, e.Start, false)
			}
			return
		}
		k.object = info.Object
		if o, found := b.live[ok]; found {
			// created again without a destroy seen: the first one's life
			// ended no later than this
			b.lifetime(o, e.Start, false)
		}
		b.live[ok] = liveObject{key: k, created: e.End}
	}
}

func (b *builder) lifetime(o liveObject, end int64, live bool) {
	k := o.key
	k.live = live
	s := b.sample(k)
	s.v[vObjects]++
	if d := end - o.created; d > 0 {
		s.v[vLifetime] += d
	}
}

// finish closes what the trace left open.
func (b *builder) finish() {
	ths := make([]*threadState, 0, len(b.threads))
	var last int64
	for _, th := range b.threads {
		ths = append(ths, th)
		if th.last > last {
			last = th.last
		}
	}
	sort.Slice(ths, func(i, j int) bool {
		if ths[i].pid != ths[j].pid {
			return ths[i].pid < ths[j].pid
		}
		return ths[i].tid < ths[j].tid
	})
	for _, th := range ths {
		b.expire(th, math.MaxInt64)
		for len(th.stack) > 0 {
			f := &th.stack[len(th.stack)-1]
			end := th.last
			if f.end >= 0 {
				end = f.end
			} else {
				b.warn(f.event, "range %q never closed on thread %d: ends at the thread's last event (%d)",
					b.tr.String(f.name), th.tid, end)
			}
			b.close(th, end)
		}
	}
	switch b.cfg.view {
	case ViewMemory:
		for _, o := range b.live {
			s := &b.samples[o.sample]
			s.v[vInuseObjects]++
			s.v[vInuseSpace] += int64(o.size)
		}
	case ViewLifetime:
		// in key order, so that the samples come out the same every time
		keys := make([]objectKey, 0, len(b.live))
		for k := range b.live {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, c := keys[i], keys[j]
			if a.pid != c.pid {
				return a.pid < c.pid
			}
			if a.family != c.family {
				return a.family < c.family
			}
			return a.handle < c.handle
		})
		for _, k := range keys {
			b.lifetime(b.live[k], last, true)
		}
	}
}

// sampleTypes returns the view's sample types and its default.
func sampleTypes(v View) ([]*profile.ValueType, string) {
	switch v {
	case ViewMemory:
		return []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"},
			{Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"},
			{Type: "inuse_space", Unit: "bytes"},
		}, "alloc_space"
	case ViewLifetime:
		return []*profile.ValueType{
			{Type: "objects", Unit: "count"},
			{Type: "lifetime", Unit: "nanoseconds"},
		}, "lifetime"
	}
	return []*profile.ValueType{
		{Type: "calls", Unit: "count"},
		{Type: "time", Unit: "nanoseconds"},
	}, "time"
}

// profile assembles the pprof profile from the aggregated samples.
func (b *builder) profile() *profile.Profile {
	st, def := sampleTypes(b.cfg.view)
	p := &profile.Profile{
		SampleType:        st,
		DefaultSampleType: def,
		TimeNanos:         b.tr.Meta.WallStart,
	}
	if b.cfg.view == ViewAPI {
		p.PeriodType = &profile.ValueType{Type: "time", Unit: "nanoseconds"}
		p.Period = 1
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, th := range b.threads {
		if th.last > last {
			last = th.last
		}
	}
	if len(b.tr.Events) > 0 {
		first = b.tr.Events[0].Start
		if last > first {
			p.DurationNanos = last - first
		}
	}
	p.Comments = b.comments()

	// keep only samples whose stack matches the focus
	keep := b.focusNodes()

	// mappings, functions and locations, made as samples need them
	mappings := make([]*profile.Mapping, len(b.sym.mappingList()))
	funcs := map[[2]string]*profile.Function{}
	locs := make([]*profile.Location, len(b.locs))
	location := func(id uint32) *profile.Location {
		if l := locs[id]; l != nil {
			return l
		}
		l := b.locs[id]
		fk := [2]string{l.name, l.file}
		fn := funcs[fk]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: l.name, SystemName: l.name, Filename: l.file}
			funcs[fk] = fn
			p.Function = append(p.Function, fn)
		}
		pl := &profile.Location{ID: uint64(len(p.Location) + 1), Address: l.addr, Line: []profile.Line{{Function: fn}}}
		if l.mapping >= 0 {
			m := mappings[l.mapping]
			if m == nil {
				tm := b.sym.mappingList()[l.mapping]
				m = &profile.Mapping{
					ID: uint64(len(p.Mapping) + 1), Start: tm.Start, Limit: tm.Limit, Offset: tm.Offset,
					File: tm.File, BuildID: tm.BuildID, HasFunctions: true,
				}
				mappings[l.mapping] = m
				p.Mapping = append(p.Mapping, m)
			}
			pl.Mapping = m
		}
		locs[id] = pl
		p.Location = append(p.Location, pl)
		return pl
	}
	stacks := make([][]*profile.Location, len(b.nodes))
	var stack func(n uint32) []*profile.Location
	stack = func(n uint32) []*profile.Location {
		if n == 0 {
			return nil
		}
		if s := stacks[n]; s != nil {
			return s
		}
		nd := b.nodes[n]
		parent := stack(nd.parent)
		s := make([]*profile.Location, 0, len(parent)+1)
		s = append(s, location(nd.loc))
		s = append(s, parent...)
		stacks[n] = s
		return s
	}
	for i := range b.samples {
		s := &b.samples[i]
		if keep != nil && !keep[s.key.node] {
			continue
		}
		zero := true
		for _, v := range s.v[:len(st)] {
			if v != 0 {
				zero = false
			}
		}
		if zero {
			continue
		}
		ps := &profile.Sample{Location: stack(s.key.node), Value: append([]int64(nil), s.v[:len(st)]...)}
		ps.Label = b.labels(s.key)
		if s.key.size != 0 {
			ps.NumLabel = map[string][]int64{"bytes": {int64(s.key.size)}}
			ps.NumUnit = map[string][]string{"bytes": {"bytes"}}
		}
		p.Sample = append(p.Sample, ps)
	}
	return p
}

func (b *builder) labels(k sampleKey) map[string][]string {
	l := map[string][]string{}
	if k.api != trace.APIUnknown {
		l["api"] = []string{k.api.String()}
		l["category"] = []string{k.api.Info().Category.String()}
	}
	if k.dev >= 0 {
		l["device"] = []string{strconv.Itoa(int(k.dev))}
	}
	if !k.result.OK() {
		l["result"] = []string{k.result.String()}
	}
	if k.thread != 0 {
		l["thread"] = []string{b.threadNames[k.thread]}
	}
	if b.cfg.view == ViewLifetime && k.api != trace.APIUnknown {
		l["object"] = []string{k.object.String()}
		if k.live {
			l["state"] = []string{"live"}
		} else {
			l["state"] = []string{"destroyed"}
		}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// focusNodes returns which trie nodes have a frame matching the focus, or nil
// when there is no focus.
func (b *builder) focusNodes() []bool {
	if b.cfg.focus == nil {
		return nil
	}
	match := make([]bool, len(b.locs))
	for i := 1; i < len(b.locs); i++ {
		match[i] = b.cfg.focus.MatchString(b.locs[i].name)
	}
	keep := make([]bool, len(b.nodes))
	for i := 1; i < len(b.nodes); i++ { // parents come before children
		keep[i] = match[b.nodes[i].loc] || keep[b.nodes[i].parent]
	}
	return keep
}

func (b *builder) comments() []string {
	var c []string
	c = append(c, fmt.Sprintf("cuprof %s view of a %s trace", b.cfg.view, orDash(b.tr.Meta.Capture)))
	if b.cfg.view == ViewAPI {
		if b.inside > 0 {
			c = append(c, fmt.Sprintf("the calibrated capture cost of %d ns per call (Meta.Overhead.InsideNs) was subtracted from each driver call's time, clamped at 0", b.inside))
		} else {
			c = append(c, "no calibrated capture cost per call in the trace: driver call times are as recorded")
		}
	}
	if b.crossThread > 0 {
		c = append(c, fmt.Sprintf("%d NVTX start/end ranges ending on another thread were left out of the stacks", b.crossThread))
	}
	if d := b.tr.TotalDrops(); d > 0 {
		c = append(c, fmt.Sprintf("the trace lost %d events (drops): totals are low", d))
	}
	if b.cfg.focus != nil {
		c = append(c, fmt.Sprintf("focus: only stacks with a frame matching %q", b.cfg.focus.String()))
	}
	return c
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
