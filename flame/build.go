package flame

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/analysis"
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
	framePython
	frameCaller
	frameAPI
)

// loc is one deduplicated location: a frame of some stack.
type loc struct {
	name    string
	system  string // pprof's system name, when it differs from name
	file    string
	line    int64
	kind    frameKind
	addr    uint64
	mapping int // index into the trace's Mappings, or -1
}

// sampleKey is what samples are aggregated by: the stack and label values.
// The stack is the thread's roots, the start/end range enclosing it (loose,
// when no push/pop range or span does), the analysis' scope (ranges and
// Python frames as they nest, as a node of the builder's stack tree), the
// caller and the API.
//
// The key has no padding and no strings, so that the map hashes it as one
// block of memory: hashing it field by field took a tenth of flame's time.
type sampleKey struct {
	size   uint64 // bytes label; 0: none
	thread uint32 // index into builder.threads
	loose  uint32 // location of the enclosing start/end range, 0: none
	stack  uint32 // node of the scope's stack tree (Builder.scopeStack), 0: none
	caller uint32 // caller location, 0: none
	dev    int32
	result trace.Result
	api    trace.API
	object trace.Object       // lifetime view
	state  analysis.EndReason // lifetime view: how the object's life ended (EndAlive: live)
	name   trace.StringID     // memory and lifetime views: the object's name (analysis.Object.Name), 0 none
}

type sample struct {
	key sampleKey
	v   [4]int64
}

// threadInfo is one thread's roots and name label.
type threadInfo struct {
	pid, tid uint32
	name     string
	// id is who its process was in its job (rank, host: labels).
	id *analysis.Identity
	// lastCall is, by API, the index+1 of the sample the thread's last
	// call of that API went to: the next call of the API from the same
	// thread mostly goes to the same one, found without the index's hash
	// and probes.
	lastCall []int32
}

// Builder turns one analysis replay of a trace into a profile. Pass
// Options() to analysis.Of (or analysis.NewTracker) and then give the
// result to Profile; Build does both.
type Builder struct {
	cfg config
	tr  *trace.Trace

	locs      []loc
	rangeLocs map[[2]trace.StringID]uint32
	codeLocs  map[trace.CodeID]uint32
	apiLocs   []uint32 // by API; 0: not yet made
	// caller locations by process and return address, and the last
	// process's
	callers     map[uint32]map[uint64]uint32
	lastCallers map[uint64]uint32
	lastPID     uint32
	callerCache [1 << callerCacheBits]callerHit
	rootLocs    map[string]uint32

	samples  []sample
	sampleIx sampleIndex

	threads    []threadInfo
	threadIx   map[uint64]uint32
	lastThread uint64 // pid<<32|tid of the thread looked up last, and its index
	lastIx     uint32
	names      map[uint64]string // thread names by pid<<32|tid
	ids        map[uint32]*analysis.Identity

	// the scopes' stacks as a tree of locations, outermost at the root:
	// node 0 is the empty stack; a scope's node is found once
	// (scopeStack, by ScopeID, node+1) and shared by every scope under it
	stackNodes []stackNode
	stackIx    map[stackNode]uint32
	scopeStack []uint32
	cutStacks  int // scopes deeper than MaxStackDepth, cut (cutLoc)
	cutLoc     uint32
	otherNames int    // scopes whose range or code got otherLoc (past MaxScopeNames)
	otherLoc   uint32 // the location of every range or code past MaxScopeNames
	scopeLocs  int    // range and code locations made

	// objects alive now: the sample key of their creation, by create event
	created  map[int]sampleKey
	crossEnd int // start/end ranges that ended on another thread

	sites *analysis.Sites
	a     *analysis.Analysis // the replay feeding the builder (its scope trie), from its first event

	warnings     []Warning
	moreWarnings int
}

// Build analyses t once (package analysis) and converts it into a profile.
// Events must be in trace.SortEvents order. The warnings report range
// events that could not be paired and ranges never closed.
func Build(t *trace.Trace, opts ...Option) (*profile.Profile, []Warning, error) {
	b, err := NewBuilder(t, opts...)
	if err != nil {
		return nil, nil, err
	}
	for i := 1; i < len(t.Events); i++ {
		if t.Events[i].Start < t.Events[i-1].Start {
			return nil, nil, fmt.Errorf("build profile: event %d starts before event %d: %w (sort them with trace.SortEvents)", i, i-1, ErrUnsorted)
		}
	}
	p, w := b.Profile(analysis.Of(t, b.Options()...))
	return p, w, nil
}

// NewBuilder returns a builder for a profile of t (whose tables, Strings,
// Threads, Processes, Mappings, Symbols and Code, it reads; the events come
// from the analysis).
func NewBuilder(t *trace.Trace, opts ...Option) (*Builder, error) {
	if t == nil {
		return nil, ErrNoTrace
	}
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	if int(cfg.view) >= len(viewNames) {
		return nil, fmt.Errorf("build profile: unknown view %d", cfg.view)
	}
	b := &Builder{
		cfg:       cfg,
		tr:        t,
		rangeLocs: map[[2]trace.StringID]uint32{},
		codeLocs:  map[trace.CodeID]uint32{},
		apiLocs:   make([]uint32, len(trace.APIs())+1),
		callers:   map[uint32]map[uint64]uint32{},
		rootLocs:  map[string]uint32{},
		locs:      []loc{{}},
		threads:   []threadInfo{{}},
		threadIx:  map[uint64]uint32{},
		created:   map[int]sampleKey{},
	}
	return b, nil
}

// Options returns the analysis visitors that feed the builder. The samples
// are summed in the callbacks, so the tracker keeps no row of what ended
// (analysis.Forget): memory grows with the distinct stacks and what is open
// at one time.
func (b *Builder) Options() []analysis.Option {
	return []analysis.Option{
		analysis.Forget(),
		analysis.OnEvent(b.event),
		analysis.OnRangeEnd(b.rangeEnd),
		analysis.OnFrameEnd(b.frameEnd),
		analysis.OnObjectEnd(b.objectEnd),
	}
}

// Profile assembles the profile from what the replay that produced a fed
// the builder, with the warnings (at most MaxWarnings and a count).
func (b *Builder) Profile(a *analysis.Analysis) (*profile.Profile, []Warning) {
	b.a = a
	for _, rp := range a.RangeProblems {
		b.warn(rp.Event, "%s: ignored", rp.Reason)
	}
	p := b.profile(a)
	w := b.warnings
	sort.SliceStable(w, func(i, j int) bool { return w[i].Event < w[j].Event })
	if b.moreWarnings > 0 {
		w = append(w, Warning{Event: -1, Reason: fmt.Sprintf("%d more warnings left out", b.moreWarnings)})
	}
	return p, w
}

func (b *Builder) warn(event int, format string, args ...any) {
	if len(b.warnings) >= MaxWarnings {
		b.moreWarnings++
		return
	}
	b.warnings = append(b.warnings, Warning{Event: event, Reason: fmt.Sprintf(format, args...)})
}

// event places one resolved event: calls become samples, and a range or
// frame opened keeps the location of the start/end range around it in its
// analysis slot (Range.Slot, Frame.Slot) until it ends.
func (b *Builder) event(ev *analysis.Event) {
	if b.a == nil {
		b.a = ev.Analysis()
	}
	switch ev.Kind {
	case trace.KindCall:
		b.call(ev)
	case trace.KindRangePush, trace.KindSpan, trace.KindFrame:
		if l := b.looseOf(ev); l != 0 {
			ev.SetSlot(uint64(l))
		}
	}
}

// looseOf returns the location of the start/end range enclosing ev, 0 when
// none does (or a push/pop range or span does).
func (b *Builder) looseOf(ev *analysis.Event) uint32 {
	if r := ev.InRange(); r != nil && r.Origin == trace.KindRangeStart {
		return b.rangeLoc(r.Name, r.Domain)
	}
	return 0
}

func (b *Builder) rangeEnd(r *analysis.Range) {
	if r.Origin == trace.KindRangeStart {
		if r.EndTID != r.TID {
			b.crossEnd++
		}
	}
	if r.Unterminated {
		b.warn(r.Open, "range %q never closed on thread %d: ends at its process's last event (%d)",
			b.tr.String(r.Name), r.TID, r.End)
	}
	if r.Origin == trace.KindRangeStart || b.cfg.view != ViewAPI {
		return
	}
	k := sampleKey{thread: b.thread(r.PID, r.TID), loose: uint32(r.Slot), stack: b.stackOf(r.Scope), dev: trace.NoDevice}
	b.sample(&k).v[vTime] += r.SelfNs
}

func (b *Builder) frameEnd(f *analysis.Frame) {
	if b.cfg.view != ViewAPI {
		return
	}
	k := sampleKey{thread: b.thread(f.PID, f.TID), loose: uint32(f.Slot), stack: b.stackOf(f.Scope), dev: trace.NoDevice}
	b.sample(&k).v[vTime] += f.SelfNs
}

func (b *Builder) call(ev *analysis.Event) {
	// The key is filled field by field, never built as a literal and
	// copied: the copy's wide loads of its narrow stores stalled on store
	// forwarding (four fifths of call's own samples).
	var k sampleKey
	k.thread, k.loose, k.stack, k.api, k.dev, k.result = b.thread(ev.PID, ev.TID), b.looseOf(ev), b.stackOf(ev.Scope), ev.API,
		ev.Device, ev.Result
	if ev.Caller != 0 {
		k.caller = b.callerLoc(ev.PID, ev.Caller)
	}
	if int(ev.API) < len(sizeLabels) && sizeLabels[ev.API] {
		k.size = ev.Size
	}
	if b.cfg.view != ViewAPI && ev.Created() {
		b.created[ev.Index] = k
	}
	if b.cfg.view != ViewAPI {
		return
	}
	s := b.callSample(&k)
	s.v[vCalls]++
	s.v[vTime] += ev.Duration
}

// callSample is sample for a call's key: the thread's last sample of the
// call's API when that has the key.
func (b *Builder) callSample(k *sampleKey) *sample {
	th := &b.threads[k.thread]
	if int(k.api) < len(th.lastCall) {
		if j := th.lastCall[k.api]; j != 0 && b.samples[j-1].key.equal(k) {
			return &b.samples[j-1]
		}
	} else if int(k.api) < len(b.apiLocs) {
		th.lastCall = make([]int32, len(b.apiLocs))
	}
	i := b.sampleIndex(k)
	if int(k.api) < len(th.lastCall) {
		th.lastCall[k.api] = int32(i + 1)
	}
	return &b.samples[i]
}

// objectEnd adds an object to the memory and lifetime views at the end of
// its life, at the site that created it.
func (b *Builder) objectEnd(o *analysis.Object) {
	k, ok := b.created[o.Create]
	if !ok {
		return
	}
	delete(b.created, o.Create)
	k.name = o.Name
	switch b.cfg.view {
	case ViewMemory:
		if !analysis.IsAllocation(o.Kind) {
			return
		}
		s := b.sample(&k)
		s.v[vAllocObjects]++
		s.v[vAllocSpace] += int64(o.Bytes)
		if o.Alive() {
			s.v[vInuseObjects]++
			s.v[vInuseSpace] += int64(o.Bytes)
		}
	case ViewLifetime:
		k.object, k.state = o.Kind, o.Reason
		s := b.sample(&k)
		s.v[vObjects]++
		s.v[vLifetime] += o.Lifetime()
	}
}

func (b *Builder) thread(pid, tid uint32) uint32 {
	k := uint64(pid)<<32 | uint64(tid)
	if b.lastIx != 0 && k == b.lastThread {
		return b.lastIx
	}
	if i, ok := b.threadIx[k]; ok {
		b.lastThread, b.lastIx = k, i
		return i
	}
	if b.names == nil {
		b.names = make(map[uint64]string, len(b.tr.Threads))
		for _, x := range b.tr.Threads {
			if _, dup := b.names[uint64(x.PID)<<32|uint64(x.TID)]; !dup {
				b.names[uint64(x.PID)<<32|uint64(x.TID)] = x.Name
			}
		}
	}
	i := uint32(len(b.threads))
	id := b.ids[pid]
	if id == nil {
		if b.ids == nil {
			b.ids = map[uint32]*analysis.Identity{}
		}
		v, _ := analysis.IdentityByPID(b.tr, pid)
		id = &v
		b.ids[pid] = id
	}
	b.threads = append(b.threads, threadInfo{pid: pid, tid: tid, name: b.names[k], id: id})
	b.threadIx[k] = i
	b.lastThread, b.lastIx = k, i
	return i
}

func (b *Builder) rootLoc(kind frameKind, name string) uint32 {
	if id, ok := b.rootLocs[name]; ok {
		return id
	}
	id := b.addLoc(loc{name: name, kind: kind, mapping: -1})
	b.rootLocs[name] = id
	return id
}

func (b *Builder) addLoc(l loc) uint32 {
	b.locs = append(b.locs, l)
	return uint32(len(b.locs) - 1)
}

func rangeName(t *trace.Trace, name trace.StringID) string {
	if s := t.String(name); s != "" {
		return s
	}
	return "(unnamed range)"
}

func (b *Builder) rangeLoc(name, domain trace.StringID) uint32 {
	key := [2]trace.StringID{name, domain}
	l, ok := b.rangeLocs[key]
	if !ok {
		if b.scopeLocs >= MaxScopeNames {
			return b.other()
		}
		b.scopeLocs++
		l = b.addLoc(loc{name: rangeName(b.tr, name), file: b.tr.String(domain), kind: frameRange, mapping: -1})
		b.rangeLocs[key] = l
	}
	return l
}

// other returns the location of the ranges and code past MaxScopeNames
// and counts one more place it stands in for.
func (b *Builder) other() uint32 {
	if b.otherLoc == 0 {
		b.otherLoc = b.addLoc(loc{name: OtherNames, kind: frameRange, mapping: -1})
	}
	b.otherNames++
	return b.otherLoc
}

// codeLoc returns the location of a Python frame: its name
// (analysis.CodeName), with the module in the system name
// (analysis.CodeFunction), and its file and first line.
func (b *Builder) codeLoc(id trace.CodeID) uint32 {
	if l, ok := b.codeLocs[id]; ok {
		return l
	}
	if b.scopeLocs >= MaxScopeNames {
		return b.other()
	}
	b.scopeLocs++
	var c trace.Code
	if int(id) < len(b.tr.Code) {
		c = b.tr.Code[id]
	}
	l := loc{name: analysis.CodeName(b.tr, id), system: analysis.CodeFunction(b.tr, id), file: b.tr.String(c.File),
		line: int64(c.Line), kind: framePython, mapping: -1}
	if m := b.tr.String(c.Module); m != "" && l.file == "" {
		l.file = m // C callables have no source file: show their module
	}
	id2 := b.addLoc(l)
	b.codeLocs[id] = id2
	return id2
}

func (b *Builder) sample(k *sampleKey) *sample { return &b.samples[b.sampleIndex(k)] }

// sampleIndex returns the index of k's sample in b.samples, made when new.
func (b *Builder) sampleIndex(k *sampleKey) int {
	i, slot := b.sampleIx.find(k, b.samples)
	if i < 0 {
		i = len(b.samples)
		b.samples = append(b.samples, sample{key: *k})
		b.sampleIx.insert(slot, b.samples)
	}
	return i
}

func (b *Builder) apiLoc(a trace.API) uint32 {
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

// sizeLabels says by API whether its Size is a byte count worth a label
// (sizeLabel), read once a call: API.Info copies the whole description.
var sizeLabels = func() []bool {
	l := make([]bool, len(trace.APIs())+1)
	for i := range l {
		info := trace.API(i).Info()
		l[i] = sizeLabel(&info)
	}
	return l
}()

// sizeLabel reports whether an API's Size is a byte count worth a label.
func sizeLabel(info *trace.APIInfo) bool {
	switch {
	case info.Category == trace.CategoryMemcpy:
		return true
	case info.Role == trace.RoleCreate:
		return analysis.IsAllocation(info.Object)
	}
	return false
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

// stackNode is a node of the builder's stack tree: a location inside the
// stack of its parent node.
type stackNode struct {
	parent uint32
	loc    uint32
	depth  uint32 // locations from the root, this one's included
}

// stackOf returns the stack tree node of scope s (0 for none), made the
// first time s is asked for: its parent's node and the location of the
// range or Python frame it adds. The nodes are shared, so a stack costs
// one node per distinct scope, however deep: a scope deeper than
// MaxStackDepth goes to its ancestor's cut node (cutLoc) at that depth,
// which stands for every scope under it.
func (b *Builder) stackOf(s analysis.ScopeID) uint32 {
	if s == analysis.NoScope {
		return 0
	}
	if int(s) < len(b.scopeStack) {
		if n := b.scopeStack[s]; n != 0 {
			return n - 1
		}
	}
	// The scopes not known yet, innermost first, up to the first known one
	// (no recursion: a trace may nest scopes a million deep).
	var todo []analysis.ScopeID
	parent := uint32(0)
	for q := s; q != analysis.NoScope; q = b.a.ScopeParent(q) {
		if int(q) < len(b.scopeStack) && b.scopeStack[q] != 0 {
			parent = b.scopeStack[q] - 1
			break
		}
		todo = append(todo, q)
	}
	for i := len(todo) - 1; i >= 0; i-- {
		parent = b.stackChild(parent, todo[i])
		q := todo[i]
		if int(q) >= len(b.scopeStack) {
			b.scopeStack = append(b.scopeStack, make([]uint32, int(q)+1-len(b.scopeStack))...)
		}
		b.scopeStack[q] = parent + 1
	}
	return parent
}

// stackChild returns the node of scope q inside the node parent.
func (b *Builder) stackChild(parent uint32, q analysis.ScopeID) uint32 {
	if b.stackNodes == nil {
		b.stackNodes = []stackNode{{}}
		b.stackIx = map[stackNode]uint32{}
	}
	p := b.stackNodes[parent]
	if p.depth >= MaxStackDepth {
		b.cutStacks++
		if p.loc == b.cutLoc && b.cutLoc != 0 {
			return parent // already the cut node: it stands for everything under it
		}
		if b.cutLoc == 0 {
			b.cutLoc = b.addLoc(loc{name: CutFrames, kind: frameRange, mapping: -1})
		}
		return b.node(stackNode{parent: parent, loc: b.cutLoc, depth: p.depth + 1})
	}
	frame, code, name, domain := b.a.ScopeFrame(q)
	var here uint32
	if frame {
		here = b.codeLoc(code)
	} else {
		here = b.rangeLoc(name, domain)
	}
	return b.node(stackNode{parent: parent, loc: here, depth: p.depth + 1})
}

// node returns the ID of the node n, made when new.
func (b *Builder) node(n stackNode) uint32 {
	if id, ok := b.stackIx[n]; ok {
		return id
	}
	id := uint32(len(b.stackNodes))
	b.stackNodes = append(b.stackNodes, n)
	b.stackIx[n] = id
	return id
}

// stacks builds sample stacks (leaf first) from the builder's stack tree.
type stacks struct {
	b     *Builder
	roots map[[2]uint32][]uint32 // by thread and loose range
}

// root returns the locations below the scope: the loose start/end range and
// the process and thread roots, innermost first.
func (st *stacks) root(thread, loose uint32) []uint32 {
	k := [2]uint32{thread, loose}
	if l, ok := st.roots[k]; ok {
		return l
	}
	b := st.b
	var l []uint32
	if loose != 0 {
		l = append(l, loose)
	}
	th := b.threads[thread]
	if b.cfg.threadRoot {
		l = append(l, b.rootLoc(frameThread, fmt.Sprintf("[thread %d] %s", th.tid, th.name)))
	}
	if b.cfg.processRoot {
		exe := ""
		if p := b.tr.Process(th.pid); p != nil {
			exe = filepath.Base(p.Exe)
			if p.Exe == "" && len(p.Cmdline) > 0 {
				exe = filepath.Base(p.Cmdline[0])
			}
		}
		name := fmt.Sprintf("[process %d] %s", th.id.PID, exe)
		if th.id.HasRank() {
			name = fmt.Sprintf("[rank %d %s pid %d] %s", th.id.Rank, th.id.Host, th.id.PID, exe)
		}
		l = append(l, b.rootLoc(frameProcess, name))
	}
	st.roots[k] = l
	return l
}

// of returns the whole stack of a sample, leaf first.
func (st *stacks) of(k sampleKey) []uint32 {
	var l []uint32
	if k.api != trace.APIUnknown {
		l = append(l, st.b.apiLoc(k.api))
	}
	if k.caller != 0 {
		l = append(l, k.caller)
	}
	for n := k.stack; n != 0; n = st.b.stackNodes[n].parent {
		l = append(l, st.b.stackNodes[n].loc)
	}
	return append(l, st.root(k.thread, k.loose)...)
}

// profile assembles the pprof profile from the aggregated samples.
func (b *Builder) profile(a *analysis.Analysis) *profile.Profile {
	st, def := sampleTypes(b.cfg.view)
	p := &profile.Profile{
		SampleType:        st,
		DefaultSampleType: def,
		TimeNanos:         b.tr.Meta.WallStart,
	}
	// Every call, allocation and object of the trace is a sample (nothing
	// is sampled): the period is 1 of the view's unit.
	switch b.cfg.view {
	case ViewAPI:
		p.PeriodType = &profile.ValueType{Type: "time", Unit: "nanoseconds"}
	case ViewMemory:
		p.PeriodType = &profile.ValueType{Type: "space", Unit: "bytes"}
	case ViewLifetime:
		p.PeriodType = &profile.ValueType{Type: "lifetime", Unit: "nanoseconds"}
	}
	p.Period = 1
	// The lifetime view's values are summed lifetimes, which overlap: pprof
	// would show their total as a share of the trace's duration (over
	// 100 %), so that view gives no duration (its comments say it).
	if a.Last > a.First && b.cfg.view != ViewLifetime {
		p.DurationNanos = a.Last - a.First
	}
	p.Comments = b.comments(a)
	sk := &stacks{b: b, roots: map[[2]uint32][]uint32{}}

	// mappings, functions and locations, made as samples need them
	mappings := make([]*profile.Mapping, len(b.tr.Mappings))
	funcs := map[[2]string]*profile.Function{}
	var locs []*profile.Location
	location := func(id uint32) *profile.Location {
		for int(id) >= len(locs) {
			locs = append(locs, nil)
		}
		if l := locs[id]; l != nil {
			return l
		}
		l := b.locs[id]
		fk := [2]string{l.name, l.file + ":" + strconv.FormatInt(l.line, 10)}
		fn := funcs[fk]
		if fn == nil {
			sys := l.system
			if sys == "" {
				sys = l.name
			}
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: l.name, SystemName: sys, Filename: l.file,
				StartLine: l.line}
			funcs[fk] = fn
			p.Function = append(p.Function, fn)
		}
		pl := &profile.Location{ID: uint64(len(p.Location) + 1), Address: l.addr, Line: []profile.Line{{Function: fn, Line: l.line}}}
		if l.mapping >= 0 {
			m := mappings[l.mapping]
			if m == nil {
				tm := b.tr.Mappings[l.mapping]
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
	for i := range b.samples {
		s := &b.samples[i]
		zero := true
		for _, v := range s.v[:len(st)] {
			if v != 0 {
				zero = false
			}
		}
		if zero {
			continue
		}
		ids := sk.of(s.key)
		if b.cfg.focus != nil && !b.focused(ids) {
			continue
		}
		ps := &profile.Sample{Value: append([]int64(nil), s.v[:len(st)]...)}
		for _, id := range ids {
			ps.Location = append(ps.Location, location(id))
		}
		ps.Label = b.labels(s.key)
		if s.key.size != 0 {
			ps.NumLabel = map[string][]int64{"bytes": {int64(s.key.size)}}
			ps.NumUnit = map[string][]string{"bytes": {"bytes"}}
		}
		p.Sample = append(p.Sample, ps)
	}
	return p
}

// focused reports whether a stack has a frame whose name matches the focus.
func (b *Builder) focused(ids []uint32) bool {
	for _, id := range ids {
		if b.cfg.focus.MatchString(b.locs[id].name) {
			return true
		}
	}
	return false
}

func (b *Builder) labels(k sampleKey) map[string][]string {
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
	th := &b.threads[k.thread]
	if th.name != "" {
		l["thread"] = []string{th.name}
	}
	if id := th.id; id != nil && id.HasRank() {
		l["rank"] = []string{strconv.Itoa(id.Rank)}
		if id.LocalRank >= 0 {
			l["local_rank"] = []string{strconv.Itoa(id.LocalRank)}
		}
		if id.Host != "" {
			l["host"] = []string{id.Host}
		}
	}
	if k.name != 0 {
		if n := b.tr.String(k.name); n != "" {
			l["object_name"] = []string{n} // analysis.Analysis.ObjectName's string
		}
	}
	if b.cfg.view == ViewLifetime && k.api != trace.APIUnknown {
		l["object"] = []string{k.object.String()}
		state := "live"
		if k.state != analysis.EndAlive {
			state = k.state.String()
		}
		l["state"] = []string{state}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

func (b *Builder) comments(a *analysis.Analysis) []string {
	var c []string
	c = append(c, fmt.Sprintf("cuprof %s view of a %s trace", b.cfg.view, orDash(b.tr.Meta.Capture)))
	if b.cfg.view == ViewAPI {
		cost := a.Cost
		if cost.InsideNs > 0 {
			c = append(c, fmt.Sprintf("cuprof's own cost of %d ns per call (calibrated at the end of the recording) was subtracted from each driver call's time, clamped at 0", cost.InsideNs))
		} else {
			c = append(c, "no calibrated capture cost per call in the trace: driver call times are as recorded")
		}
		var parts []string
		if cost.AddedNs > 0 {
			parts = append(parts, fmt.Sprintf("%d ns per driver call", cost.AddedNs))
		}
		if cost.PyEventNs > 0 {
			parts = append(parts, fmt.Sprintf("%.3g ns per Python frame entry and exit", cost.PyEventNs))
		}
		if len(parts) > 0 {
			c = append(c, "the capture's whole cost of "+strings.Join(parts, " and ")+" recorded inside them was taken out of the ranges and Python frames around them")
		}
	}
	switch b.cfg.view {
	case ViewMemory:
		c = append(c, "a sample is every allocation made at a creation site (stack): alloc_objects and alloc_space count all of them, inuse_objects and inuse_space those still alive at the end of the trace; nothing is sampled (period 1 byte)")
	case ViewLifetime:
		c = append(c, "a sample is every object (stream, event, allocation, pool, context, ...) created at a creation site (stack): objects counts them, lifetime sums the time from each one's creation to its destruction (or to the end of the trace when it was never destroyed)")
		if a.Last > a.First {
			c = append(c, fmt.Sprintf("lifetimes overlap, so their sum is not a share of the trace's %d ns: compare sites with each other, not with the duration (the profile gives none)", a.Last-a.First))
		}
	}
	if b.cutStacks > 0 {
		c = append(c, fmt.Sprintf("%d ranges and Python frames nested deeper than %d were cut: what ran under them is under a %q frame at that depth", b.cutStacks, MaxStackDepth, CutFrames))
	}
	if b.otherNames > 0 {
		c = append(c, fmt.Sprintf("past %d distinct range names and Python functions, %d more ranges and frames are shown as %q", MaxScopeNames, b.otherNames, OtherNames))
	}
	if b.crossEnd > 0 {
		c = append(c, fmt.Sprintf("%d NVTX start/end ranges ended on another thread; they enclose the calls of the thread that started them", b.crossEnd))
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
