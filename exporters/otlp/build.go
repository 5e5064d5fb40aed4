// Package otlp turns cuprof traces into OpenTelemetry spans and sends them to
// an OTLP collector.
//
// Every driver call becomes a span named after its API, parented by the
// innermost NVTX push/pop range or cudawrap span open on its thread; every
// range becomes a span; every object lifetime (context, stream, event,
// allocation, pool, module) becomes a span from its create call to its
// destroy call, linked to both. Each traced process is one OTLP resource and
// one OTLP trace whose root span covers the process. Spans are built directly
// as OTLP protobuf messages (no SDK per-span cost) and sent in batches of a
// few MiB with the otlptrace gRPC or HTTP client. IDs are derived from the
// trace, so exporting a trace twice sends identical spans.
//
// Attribute names are listed in attrs.go and documented in docs/attributes.md.
package otlp

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/internal/lifecycle"
	"github.com/cuprof/cuprof/trace"
)

// ScopeName is the instrumentation scope of every span cuprof exports.
const ScopeName = "github.com/cuprof/cuprof"

// DefaultBatchBytes is the encoded size a batch is cut at: under the 4 MiB
// collectors accept by default, whatever the compression.
const DefaultBatchBytes = 3 << 20

// Batch is one request's worth of spans.
type Batch struct {
	ResourceSpans []*tracepb.ResourceSpans
	Spans         int // number of spans in ResourceSpans
	Bytes         int // encoded size, approximately (within a few bytes per resource)
}

// Build converts t into OTLP spans and hands them to emit in batches of at
// most about WithBatchBytes encoded bytes, stopping at emit's first error. It
// returns the number of spans built. Events must be in trace.SortEvents order.
func Build(t *trace.Trace, emit func(Batch) error, opts ...Option) (int, error) {
	cfg := newConfig(opts)
	b := newBuilder(t, cfg)
	return b.run(emit)
}

// Collect is Build returning every span in one slice of ResourceSpans (per
// process, possibly split); for tests and small traces.
func Collect(t *trace.Trace, opts ...Option) ([]*tracepb.ResourceSpans, error) {
	var out []*tracepb.ResourceSpans
	_, err := Build(t, func(b Batch) error {
		out = append(out, b.ResourceSpans...)
		return nil
	}, opts...)
	return out, err
}

type threadKey struct{ pid, tid uint32 }

type symbolTable struct {
	addrs []uint64
	syms  []trace.Symbol
}

func (s *symbolTable) lookup(addr uint64) string {
	i := sort.Search(len(s.addrs), func(i int) bool { return s.addrs[i] > addr }) - 1
	if i < 0 {
		return ""
	}
	sym := &s.syms[i]
	if addr >= sym.Addr && (sym.Size == 0 || addr < sym.Addr+sym.Size) {
		return sym.Name
	}
	return ""
}

type builder struct {
	t   *trace.Trace
	cfg *config
	ids idSource
	a   slab

	ranges      []trace.Range
	rangeParent []int32 // per range: index of the enclosing range, or -1
	callParent  []int32 // per event: index of the enclosing range, or -1
	objects     []lifecycle.Object
	objectNames map[objectKey]trace.StringID
	threads     map[threadKey]string
	symbols     map[uint32]*symbolTable
	marks       map[uint32][]int // NVTX mark events by process

	// the batch being filled
	batch    []*tracepb.ResourceSpans
	cur      *tracepb.ScopeSpans
	curPID   uint32
	curRes   *resourcepb.Resource
	curTrace []byte
	spans    int
	bytes    int
	total    int
	emit     func(Batch) error
}

func newBuilder(t *trace.Trace, cfg *config) *builder {
	id := cfg.identity
	if id == "" {
		id = Identity(t)
	}
	b := &builder{t: t, cfg: cfg, ids: newIDSource(id), threads: map[threadKey]string{},
		symbols: map[uint32]*symbolTable{}}
	for _, th := range t.Threads {
		b.threads[threadKey{th.PID, th.TID}] = th.Name
	}
	for _, s := range t.Symbols {
		st := b.symbols[s.PID]
		if st == nil {
			st = &symbolTable{}
			b.symbols[s.PID] = st
		}
		st.syms = append(st.syms, s)
	}
	for _, st := range b.symbols {
		sort.Slice(st.syms, func(i, j int) bool { return st.syms[i].Addr < st.syms[j].Addr })
		st.addrs = make([]uint64, len(st.syms))
		for i := range st.syms {
			st.addrs[i] = st.syms[i].Addr
		}
	}
	b.ranges, _ = t.Ranges()
	b.marks = map[uint32][]int{}
	for i := range t.Events {
		if t.Events[i].Kind == trace.KindMark {
			b.marks[t.Events[i].PID] = append(b.marks[t.Events[i].PID], i)
		}
	}
	b.objects = lifecycle.Analyze(t).Objects
	b.objectNames = objectNames(t)
	b.parents()
	return b
}

// parents finds, per thread, the innermost push/pop range or span enclosing
// each call and each range, walking ranges and calls in start order with one
// stack of open ranges per thread.
func (b *builder) parents() {
	b.callParent = make([]int32, len(b.t.Events))
	b.rangeParent = make([]int32, len(b.ranges))
	for i := range b.rangeParent {
		b.rangeParent[i] = -1
	}
	order := make([]int, 0, len(b.ranges))
	for i := range b.ranges {
		if b.ranges[i].Depth >= 0 {
			order = append(order, i)
		}
	}
	// ranges are ordered by Start; at equal Start the enclosing one first
	sort.SliceStable(order, func(i, j int) bool {
		a, c := &b.ranges[order[i]], &b.ranges[order[j]]
		if a.Start != c.Start {
			return a.Start < c.Start
		}
		return a.End > c.End
	})
	stacks := map[threadKey][]int32{}
	enter := func(k threadKey, start, end int64) int32 {
		st := stacks[k]
		for len(st) > 0 {
			top := &b.ranges[st[len(st)-1]]
			if top.End > start || (top.End == start && top.Start == start && end == start) {
				break
			}
			st = st[:len(st)-1]
		}
		stacks[k] = st
		if len(st) == 0 {
			return -1
		}
		return st[len(st)-1]
	}
	r := 0
	for i := range b.t.Events {
		e := &b.t.Events[i]
		b.callParent[i] = -1
		if e.Kind != trace.KindCall {
			continue
		}
		for r < len(order) && b.ranges[order[r]].Start <= e.Start {
			rg := &b.ranges[order[r]]
			k := threadKey{rg.PID, rg.TID}
			b.rangeParent[order[r]] = enter(k, rg.Start, rg.End)
			stacks[k] = append(stacks[k], int32(order[r]))
			r++
		}
		b.callParent[i] = enter(threadKey{e.PID, e.TID}, e.Start, e.End)
	}
	for ; r < len(order); r++ {
		rg := &b.ranges[order[r]]
		k := threadKey{rg.PID, rg.TID}
		b.rangeParent[order[r]] = enter(k, rg.Start, rg.End)
		stacks[k] = append(stacks[k], int32(order[r]))
	}
}

// unixNano converts a trace clock time to Unix nanoseconds.
func (b *builder) unixNano(t int64) uint64 {
	v := t
	if b.t.Meta.WallStart != 0 {
		v = b.t.Meta.WallStart + (t - b.t.Meta.MonoStart)
	}
	if v < 0 {
		return 0
	}
	return uint64(v)
}

type procInfo struct {
	proc       trace.Process
	first, end int64
}

// processes returns every process of the trace, including ones only seen in
// events, in PID order, with their time span.
func (b *builder) processes() []procInfo {
	m := map[uint32]*procInfo{}
	var pids []uint32
	get := func(pid uint32) *procInfo {
		p := m[pid]
		if p == nil {
			p = &procInfo{proc: trace.Process{PID: pid, ExitCode: -1}, first: -1, end: -1}
			m[pid] = p
			pids = append(pids, pid)
		}
		return p
	}
	for _, p := range b.t.Processes {
		pi := get(p.PID)
		pi.proc = p
	}
	for i := range b.t.Events {
		e := &b.t.Events[i]
		pi := get(e.PID)
		if pi.first < 0 || e.Start < pi.first {
			pi.first = e.Start
		}
		if e.End > pi.end {
			pi.end = e.End
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	out := make([]procInfo, 0, len(pids))
	for _, pid := range pids {
		pi := m[pid]
		if pi.proc.Start != 0 && (pi.first < 0 || pi.proc.Start < pi.first) {
			pi.first = pi.proc.Start
		}
		if pi.proc.End > pi.end {
			pi.end = pi.proc.End
		}
		if pi.first < 0 {
			pi.first = 0
		}
		if pi.end < pi.first {
			pi.end = pi.first
		}
		out = append(out, *pi)
	}
	return out
}

func (b *builder) run(emit func(Batch) error) (int, error) {
	b.emit = emit
	procs := b.processes()
	// events and lifetimes grouped by process, keeping their order
	byPID := map[uint32][]int{}
	for i := range b.t.Events {
		if b.t.Events[i].Kind == trace.KindCall {
			byPID[b.t.Events[i].PID] = append(byPID[b.t.Events[i].PID], i)
		}
	}
	rangesByPID := map[uint32][]int{}
	for i := range b.ranges {
		rangesByPID[b.ranges[i].PID] = append(rangesByPID[b.ranges[i].PID], i)
	}
	ltByPID := map[uint32][]int{}
	for i := range b.objects {
		ltByPID[b.objects[i].PID] = append(ltByPID[b.objects[i].PID], i)
	}
	drops := map[uint32]uint64{}
	for _, d := range b.t.Drops {
		drops[d.PID] += d.Events
	}
	for _, p := range procs {
		b.startProcess(p, drops[p.proc.PID])
		if err := b.add(b.processSpan(p)); err != nil {
			return b.total, err
		}
		for _, ri := range rangesByPID[p.proc.PID] {
			if err := b.add(b.rangeSpan(ri)); err != nil {
				return b.total, err
			}
		}
		for _, ei := range byPID[p.proc.PID] {
			if err := b.add(b.callSpan(ei)); err != nil {
				return b.total, err
			}
		}
		for _, li := range ltByPID[p.proc.PID] {
			if err := b.add(b.lifetimeSpan(li)); err != nil {
				return b.total, err
			}
		}
	}
	return b.total, b.flush()
}

func (b *builder) startProcess(p procInfo, dropped uint64) {
	b.curPID = p.proc.PID
	b.curRes = b.resource(p, dropped)
	b.curTrace = b.ids.traceID(p.proc.PID)
	b.cur = nil
}

// add appends a span to the current batch, flushing first when it would grow
// past the batch size.
func (b *builder) add(s *tracepb.Span) error {
	n := spanSize(s)
	n += 1 + sizeVarint(uint64(n))
	if b.spans > 0 && b.bytes+n > b.cfg.batchBytes {
		if err := b.flush(); err != nil {
			return err
		}
	}
	if b.cur == nil {
		b.cur = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ScopeName, Version: b.cfg.version}}
		rs := &tracepb.ResourceSpans{Resource: b.curRes, ScopeSpans: []*tracepb.ScopeSpans{b.cur}}
		b.batch = append(b.batch, rs)
		b.bytes += proto.Size(b.curRes) + 64
	}
	b.cur.Spans = append(b.cur.Spans, s)
	b.spans++
	b.bytes += n
	return nil
}

func (b *builder) flush() error {
	if b.spans == 0 {
		return nil
	}
	batch := Batch{ResourceSpans: b.batch, Spans: b.spans, Bytes: b.bytes}
	b.total += b.spans
	b.batch, b.cur, b.spans, b.bytes = nil, nil, 0, 0
	return b.emit(batch)
}

func sizeVarint(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// rankVars are the environment variables that give a process's rank, in the
// order they are tried: MPI launchers first, then torchrun.
var rankVars = [...]struct{ attr, env string }{
	{AttrRank, "OMPI_COMM_WORLD_RANK"},
	{AttrRank, "PMI_RANK"},
	{AttrRank, "PMIX_RANK"},
	{AttrRank, "SLURM_PROCID"},
	{AttrRank, "RANK"},
	{AttrLocalRank, "OMPI_COMM_WORLD_LOCAL_RANK"},
	{AttrLocalRank, "MPI_LOCALRANKID"},
	{AttrLocalRank, "SLURM_LOCALID"},
	{AttrLocalRank, "LOCAL_RANK"},
	{AttrWorldSize, "OMPI_COMM_WORLD_SIZE"},
	{AttrWorldSize, "PMI_SIZE"},
	{AttrWorldSize, "SLURM_NTASKS"},
	{AttrWorldSize, "WORLD_SIZE"},
}

func (b *builder) resource(p procInfo, dropped uint64) *resourcepb.Resource {
	m := &b.t.Meta
	cmd := p.proc.Cmdline
	if len(cmd) == 0 {
		cmd = m.Command
	}
	service := "cuprof"
	switch {
	case len(cmd) > 0:
		service = filepath.Base(cmd[0])
	case p.proc.Exe != "":
		service = filepath.Base(p.proc.Exe)
	}
	attrs := []*commonpb.KeyValue{
		strAttr(AttrServiceName, service),
		strAttr(AttrServiceInstance, m.Host+"/"+strconv.FormatUint(uint64(p.proc.PID), 10)),
		intAttr(AttrPID, int64(p.proc.PID)),
	}
	if m.Host != "" {
		attrs = append(attrs, strAttr(AttrHostName, m.Host))
	}
	if p.proc.PPID != 0 {
		attrs = append(attrs, intAttr(AttrPPID, int64(p.proc.PPID)))
	}
	if len(cmd) > 0 {
		attrs = append(attrs, strAttr(AttrCommandLine, strings.Join(cmd, " ")))
	}
	if p.proc.Exe != "" {
		attrs = append(attrs, strAttr(AttrExecutable, p.proc.Exe))
	}
	if p.proc.ExitCode >= 0 && p.proc.End != 0 {
		attrs = append(attrs, intAttr(AttrExitCode, int64(p.proc.ExitCode)))
	}
	seen := map[string]bool{}
	for _, rv := range rankVars {
		if seen[rv.attr] {
			continue
		}
		if v, ok := p.proc.Env[rv.env]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				attrs = append(attrs, intAttr(rv.attr, n))
				seen[rv.attr] = true
			}
		}
	}
	if len(m.GPUs) > 0 {
		names := make([]string, len(m.GPUs))
		uuids := make([]string, len(m.GPUs))
		for i, g := range m.GPUs {
			names[i], uuids[i] = g.Name, g.UUID
		}
		attrs = append(attrs, strsAttr(AttrGPUNames, names), strsAttr(AttrGPUUUIDs, uuids))
	}
	if m.DriverVersion > 0 {
		attrs = append(attrs, strAttr(AttrDriverVersion, DriverVersion(m.DriverVersion)))
	}
	if m.CuprofVersion != "" {
		attrs = append(attrs, strAttr(AttrProfilerVersion, m.CuprofVersion))
	}
	if m.Capture != "" {
		attrs = append(attrs, strAttr(AttrCapture, m.Capture))
	}
	if dropped > 0 {
		attrs = append(attrs, intAttr(AttrDroppedEvents, int64(dropped)))
	}
	return &resourcepb.Resource{Attributes: withResourceEnv(attrs)}
}

// DriverVersion formats a CUDA driver version number (13000) as 13.0.
func DriverVersion(v int32) string {
	return strconv.Itoa(int(v/1000)) + "." + strconv.Itoa(int(v%1000/10))
}

func (b *builder) processSpan(p procInfo) *tracepb.Span {
	name := "process"
	if len(p.proc.Cmdline) > 0 {
		name = filepath.Base(p.proc.Cmdline[0])
	}
	// NVTX marks are events of the process span
	var events []*tracepb.Span_Event
	for _, i := range b.marks[p.proc.PID] {
		e := &b.t.Events[i]
		attrs := []*commonpb.KeyValue{intAttr(AttrThreadID, int64(e.TID))}
		if d := b.t.String(e.Domain); d != "" {
			attrs = append(attrs, strAttr(AttrRangeDomain, d))
		}
		events = append(events, &tracepb.Span_Event{TimeUnixNano: b.unixNano(e.Start), Name: b.t.String(e.Name),
			Attributes: attrs})
	}
	return &tracepb.Span{
		Events:            events,
		TraceId:           b.curTrace,
		SpanId:            b.sid(idProcess, uint64(p.proc.PID)),
		Name:              name,
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: b.unixNano(p.first),
		EndTimeUnixNano:   b.unixNano(p.end),
	}
}

func (b *builder) parentID(pid uint32, rangeIndex int32) []byte {
	if rangeIndex < 0 {
		return b.sid(idProcess, uint64(pid))
	}
	return b.sid(idRange, uint64(rangeIndex))
}

var rangeKinds = map[trace.Kind]string{
	trace.KindRangePush:  "push",
	trace.KindRangeStart: "start",
	trace.KindSpan:       "span",
}

func (b *builder) rangeSpan(ri int) *tracepb.Span {
	r := &b.ranges[ri]
	name := b.t.String(r.Name)
	if name == "" {
		name = "range"
	}
	attrs := []*commonpb.KeyValue{
		b.a.str(AttrRangeKind, rangeKinds[r.Origin]),
		b.a.int(AttrThreadID, int64(r.TID)),
	}
	if d := b.t.String(r.Domain); d != "" {
		attrs = append(attrs, b.a.str(AttrRangeDomain, d))
	}
	if r.Unterminated {
		attrs = append(attrs, boolAttr(AttrRangeUnterminated, true))
	}
	return &tracepb.Span{
		TraceId:           b.curTrace,
		SpanId:            b.sid(idRange, uint64(ri)),
		ParentSpanId:      b.parentID(r.PID, b.rangeParent[ri]),
		Name:              name,
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: b.unixNano(r.Start),
		EndTimeUnixNano:   b.unixNano(r.End),
		Attributes:        attrs,
	}
}

func hexStr(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// failed reports whether a call's result is an error worth flagging: anything
// but success, and but "not ready" from the query calls whose answer it is.
func failed(e *trace.Event) bool {
	if e.Result.OK() {
		return false
	}
	if e.Result == trace.ErrNotReady && (e.API == trace.APIStreamQuery || e.API == trace.APIEventQuery) {
		return false
	}
	return true
}

func (b *builder) callSpan(ei int) *tracepb.Span {
	e := &b.t.Events[ei]
	var fn string
	if st := b.symbols[e.PID]; st != nil && e.Caller != 0 {
		fn = st.lookup(e.Caller)
	}
	s := &tracepb.Span{
		TraceId:           b.curTrace,
		SpanId:            b.sid(idCall, uint64(ei)),
		ParentSpanId:      b.parentID(e.PID, b.callParent[ei]),
		Name:              e.API.Info().Name,
		Kind:              tracepb.Span_SPAN_KIND_CLIENT,
		StartTimeUnixNano: b.unixNano(e.Start),
		EndTimeUnixNano:   b.unixNano(e.End),
		Attributes:        callAttrs(&b.a, e, b.threads[threadKey{e.PID, e.TID}], fn),
		Status:            callStatus(e),
	}
	return s
}

// callStatus is ERROR with the result's name for failed calls, else nil.
func callStatus(e *trace.Event) *tracepb.Status {
	if failed(e) {
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: e.Result.String()}
	}
	return nil
}

// callAttrs returns the attributes of a call span.
func callAttrs(a *slab, e *trace.Event, threadName, function string) []*commonpb.KeyValue {
	info := e.API.Info()
	attrs := make([]*commonpb.KeyValue, 0, 12)
	attrs = append(attrs,
		a.str(AttrAPI, info.Name),
		a.str(AttrCategory, info.Category.String()),
		a.str(AttrResult, e.Result.String()),
		a.int(AttrThreadID, int64(e.TID)),
	)
	if threadName != "" {
		attrs = append(attrs, a.str(AttrThreadName, threadName))
	}
	if !e.Result.OK() {
		attrs = append(attrs, a.int(AttrResultCode, int64(e.Result)))
	}
	if e.Device != trace.NoDevice {
		attrs = append(attrs, a.int(AttrDevice, int64(e.Device)))
	}
	if info.Object != trace.ObjectNone {
		attrs = append(attrs, a.str(AttrObjectKind, info.Object.String()))
		if info.Role != trace.RoleNone {
			attrs = append(attrs, a.str(AttrObjectRole, info.Role.String()))
		}
	}
	if e.Handle != 0 {
		attrs = append(attrs, a.str(AttrHandle, hexStr(e.Handle)))
	}
	if e.Stream != 0 {
		attrs = append(attrs, a.str(AttrStream, hexStr(e.Stream)))
	}
	if e.Aux != 0 {
		attrs = append(attrs, a.str(AttrAux, hexStr(e.Aux)))
	}
	if e.Size != 0 {
		attrs = append(attrs, a.int(AttrBytes, int64(e.Size)))
	}
	if e.Flags != 0 {
		attrs = append(attrs, a.int(AttrFlags, int64(e.Flags)))
	}
	if e.Caller != 0 {
		attrs = append(attrs, a.str(AttrCaller, hexStr(e.Caller)))
		if function != "" {
			attrs = append(attrs, a.str(AttrCodeFunc, function))
		}
	}
	return attrs
}

type objectKey struct {
	pid    uint32
	kind   trace.Object
	handle uint64
}

// objectNames returns the last name given to each object by an NVTX naming
// call.
func objectNames(t *trace.Trace) map[objectKey]trace.StringID {
	m := map[objectKey]trace.StringID{}
	for i := range t.Events {
		if e := &t.Events[i]; e.Kind == trace.KindObjectName {
			m[objectKey{e.PID, e.Object, e.Handle}] = e.Name
		}
	}
	return m
}

func (b *builder) lifetimeSpan(li int) *tracepb.Span {
	o := &b.objects[li]
	attrs := []*commonpb.KeyValue{
		b.a.str(AttrObjectKind, o.Kind.String()),
		b.a.str(AttrHandle, hexStr(o.Handle)),
		b.a.str(AttrObjectEnd, o.Reason.String()),
	}
	if o.Device != trace.NoDevice {
		attrs = append(attrs, b.a.int(AttrDevice, int64(o.Device)))
	}
	if o.Bytes != 0 {
		attrs = append(attrs, b.a.int(AttrBytes, int64(o.Bytes)))
	}
	if o.Pool != 0 {
		attrs = append(attrs, b.a.str(AttrPool, hexStr(o.Pool)))
	}
	if o.Stream != 0 {
		attrs = append(attrs, b.a.str(AttrStream, hexStr(o.Stream)))
	}
	if n := b.t.String(b.objectNames[objectKey{o.PID, o.Kind, o.Handle}]); n != "" {
		attrs = append(attrs, b.a.str(AttrObjectName, n))
	}
	if o.Alive() {
		attrs = append(attrs, boolAttr(AttrObjectLeaked, true))
	}
	var links []*tracepb.Span_Link
	if o.Create >= 0 {
		links = append(links, &tracepb.Span_Link{TraceId: b.curTrace, SpanId: b.sid(idCall, uint64(o.Create)),
			Attributes: []*commonpb.KeyValue{b.a.str(AttrLinkRole, "create")}})
	}
	if o.Destroy >= 0 {
		links = append(links, &tracepb.Span_Link{TraceId: b.curTrace, SpanId: b.sid(idCall, uint64(o.Destroy)),
			Attributes: []*commonpb.KeyValue{b.a.str(AttrLinkRole, "destroy")}})
	}
	return &tracepb.Span{
		TraceId:           b.curTrace,
		SpanId:            b.sid(idLifetime, uint64(li)),
		ParentSpanId:      b.sid(idProcess, uint64(o.PID)),
		Name:              o.Kind.String(),
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: b.unixNano(o.Start),
		EndTimeUnixNano:   b.unixNano(o.End),
		Attributes:        attrs,
		Links:             links,
	}
}

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func boolAttr(k string, v bool) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}}
}

func strsAttr(k string, vs []string) *commonpb.KeyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, len(vs))}
	for i, v := range vs {
		arr.Values[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
}

func protoSize(m proto.Message) int { return proto.Size(m) }

// sid is the span ID of the given kind and index, from the slab.
func (b *builder) sid(kind, index uint64) []byte { return b.a.id8(b.ids.spanValue(kind, index)) }
