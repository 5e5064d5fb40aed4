// Package otlp turns cuprof traces into OpenTelemetry spans and sends them to
// an OTLP collector.
//
// Every driver call becomes a span named after its API, parented by the
// innermost NVTX range, cudawrap span or Python frame around it on its
// thread; every range and every Python frame becomes a span; every object
// lifetime (context, stream, event, allocation, pool, module) becomes a span
// from its create call to the call that ended it, linked to both. What
// encloses what, which device a call ran on, how each life ended and what
// counts as an error are package analysis' answers from one replay of the
// trace. Each traced process is one OTLP resource and one OTLP trace whose
// root span covers the process. Spans are built directly as OTLP protobuf
// messages (no SDK per-span cost) and sent in batches of a few MiB with the
// otlptrace gRPC or HTTP client. IDs are derived from the trace, so
// exporting a trace twice sends identical spans.
//
// Attribute names are listed in attrs.go and documented in docs/attributes.md.
package otlp

import (
	"iter"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/analysis"
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

// Build converts t into OTLP spans, replaying it once through package
// analysis, and hands them to emit in batches of at most about
// WithBatchBytes encoded bytes, stopping at emit's first error. It returns
// the number of spans built. Events must be in trace.SortEvents order.
func Build(t *trace.Trace, emit func(Batch) error, opts ...Option) (int, error) {
	return BuildStream(t, func() iter.Seq[*trace.Event] { return analysis.Events(t) }, emit, opts...)
}

// BuildStream is Build of a trace read as a stream: t holds its tables (its
// Events are not read), and each call of events returns its events in
// trace order, from the first (trace.File's EventReader.All). Without
// WithIdentity it takes one pass over events for the trace's Identity, then
// one to build; what it holds does not grow with the number of events, and
// emit's back-pressure (a full channel) holds the replay.
func BuildStream(t *trace.Trace, events func() iter.Seq[*trace.Event], emit func(Batch) error, opts ...Option) (int, error) {
	cfg := newConfig(opts)
	if cfg.identity == "" {
		cfg.identity = IdentityOf(t, events())
	}
	b := newBuilder(t, cfg)
	b.emit = emit
	a := analysis.Run(t, events(), b.options()...)
	return b.finish(a)
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

	threads     map[threadKey]string
	symbols     map[uint32]*symbolTable
	objectNames map[objectKey]trace.StringID
	procs       map[uint32]*procSeen
	pids        []uint32 // in order of first event
	// parent span of each range and frame open now, by opening event
	open map[int][]byte

	// the batch being filled: one ResourceSpans per process
	batch []*tracepb.ResourceSpans
	byPID map[uint32]*tracepb.ScopeSpans
	spans int
	bytes int
	total int
	emit  func(Batch) error
	err   error
}

// procSeen is what the replay saw of one process: its time span and marks.
type procSeen struct {
	first, end int64
	marks      []*tracepb.Span_Event
	traceID    []byte
	resource   *resourcepb.Resource
}

func newBuilder(t *trace.Trace, cfg *config) *builder {
	id := cfg.identity
	if id == "" {
		id = Identity(t)
	}
	b := &builder{t: t, cfg: cfg, ids: newIDSource(id), threads: map[threadKey]string{},
		symbols: map[uint32]*symbolTable{}, objectNames: map[objectKey]trace.StringID{},
		procs: map[uint32]*procSeen{}, open: map[int][]byte{}, byPID: map[uint32]*tracepb.ScopeSpans{}}
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
	return b
}

func (b *builder) options() []analysis.Option {
	// spans are made in the callbacks: the tracker keeps no ended rows
	return []analysis.Option{analysis.Forget(), analysis.OnEvent(b.event), analysis.OnRangeEnd(b.rangeEnd),
		analysis.OnFrameEnd(b.frameEnd), analysis.OnObjectEnd(b.objectEnd)}
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

// proc returns what was seen of process pid, making its resource when new.
func (b *builder) proc(pid uint32) *procSeen {
	p := b.procs[pid]
	if p == nil {
		p = &procSeen{first: -1, end: -1, traceID: b.ids.traceID(pid)}
		b.procs[pid] = p
		b.pids = append(b.pids, pid)
	}
	return p
}

// process returns the recorded description of pid, or a stand-in.
func (b *builder) process(pid uint32) trace.Process {
	if p := b.t.Process(pid); p != nil {
		return *p
	}
	return trace.Process{PID: pid, ExitCode: -1}
}

// parentOf returns the span an event is directly inside: the range or frame
// activation around it (Event.Outer); for a call nothing nests around, the
// NVTX start/end range its thread started when that encloses it; else its
// process. Start/end ranges do not nest, so they parent no range or frame.
func (b *builder) parentOf(ev *analysis.Event) []byte {
	if ev.Outer >= 0 {
		return b.sid(idRange, uint64(ev.Outer))
	}
	if r := looseRange(ev); r != nil {
		return b.sid(idRange, uint64(r.Open))
	}
	return b.sid(idProcess, uint64(ev.PID))
}

// looseRange returns the NVTX start/end range enclosing a call when nothing
// nests around it, else nil.
func looseRange(ev *analysis.Event) *analysis.Range {
	if ev.Kind != trace.KindCall || ev.Outer >= 0 {
		return nil
	}
	if r := ev.InRange(); r != nil && r.Origin == trace.KindRangeStart {
		return r
	}
	return nil
}

func (b *builder) event(ev *analysis.Event) {
	p := b.proc(ev.PID)
	if p.first < 0 || ev.Start < p.first {
		p.first = ev.Start
	}
	p.end = max(p.end, ev.End)
	switch ev.Kind {
	case trace.KindCall:
		b.add(ev.PID, b.callSpan(ev))
	case trace.KindRangePush, trace.KindSpan, trace.KindFrame:
		b.open[ev.Index] = b.parentOf(ev)
	case trace.KindMark:
		attrs := []*commonpb.KeyValue{intAttr(AttrThreadID, int64(ev.TID))}
		if d := b.t.String(ev.Domain); d != "" {
			attrs = append(attrs, strAttr(AttrRangeDomain, d))
		}
		p.marks = append(p.marks, &tracepb.Span_Event{TimeUnixNano: b.unixNano(ev.Start), Name: b.t.String(ev.Name),
			Attributes: attrs})
	case trace.KindObjectName:
		b.objectNames[objectKey{ev.PID, ev.Event.Object, ev.Handle}] = ev.Name
	}
}

// finish sends the process spans, flushes and returns the span count.
func (b *builder) finish(a *analysis.Analysis) (int, error) {
	pids := append([]uint32(nil), b.pids...)
	for _, p := range b.t.Processes {
		if _, ok := b.procs[p.PID]; !ok {
			b.proc(p.PID)
			pids = append(pids, p.PID)
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		b.add(pid, b.processSpan(pid))
	}
	if b.err != nil {
		return b.total, b.err
	}
	return b.total, b.flush()
}

// add appends a span of process pid to the current batch, flushing first
// when it would grow past the batch size. After emit fails it drops spans.
func (b *builder) add(pid uint32, s *tracepb.Span) {
	if b.err != nil {
		return
	}
	n := spanSize(s)
	n += 1 + sizeVarint(uint64(n))
	if b.spans > 0 && b.bytes+n > b.cfg.batchBytes {
		if b.err = b.flush(); b.err != nil {
			return
		}
	}
	ss := b.byPID[pid]
	if ss == nil {
		p := b.proc(pid)
		if p.resource == nil {
			p.resource = b.resource(pid)
		}
		ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ScopeName, Version: b.cfg.version}, SchemaUrl: SchemaURL}
		b.batch = append(b.batch, &tracepb.ResourceSpans{Resource: p.resource, SchemaUrl: SchemaURL, ScopeSpans: []*tracepb.ScopeSpans{ss}})
		b.byPID[pid] = ss
		b.bytes += proto.Size(p.resource) + 64
	}
	ss.Spans = append(ss.Spans, s)
	b.spans++
	b.bytes += n
}

func (b *builder) flush() error {
	if b.spans == 0 {
		return nil
	}
	batch := Batch{ResourceSpans: b.batch, Spans: b.spans, Bytes: b.bytes}
	b.total += b.spans
	b.batch, b.byPID, b.spans, b.bytes = nil, map[uint32]*tracepb.ScopeSpans{}, 0, 0
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

func (b *builder) resource(pid uint32) *resourcepb.Resource {
	var dropped uint64
	for _, d := range b.t.Drops {
		if d.PID == pid {
			dropped += d.Events
		}
	}
	p := struct{ proc trace.Process }{b.process(pid)}
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
		strAttr(AttrServiceName, UnknownService(service)),
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
	return newResource(attrs, b.cfg.version)
}

// DriverVersion formats a CUDA driver version number (13000) as 13.0.
func DriverVersion(v int32) string {
	return strconv.Itoa(int(v/1000)) + "." + strconv.Itoa(int(v%1000/10))
}

func (b *builder) processSpan(pid uint32) *tracepb.Span {
	proc := b.process(pid)
	seen := b.proc(pid)
	first, end := seen.first, seen.end
	if proc.Start != 0 && (first < 0 || proc.Start < first) {
		first = proc.Start
	}
	end = max(end, proc.End)
	if first < 0 {
		first = 0
	}
	end = max(end, first)
	name := "process"
	if len(proc.Cmdline) > 0 {
		name = filepath.Base(proc.Cmdline[0])
	}
	return &tracepb.Span{
		Events:            seen.marks, // NVTX marks are events of the process span
		TraceId:           seen.traceID,
		SpanId:            b.sid(idProcess, uint64(pid)),
		Name:              name,
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: b.unixNano(first),
		EndTimeUnixNano:   b.unixNano(end),
	}
}

var rangeKinds = map[trace.Kind]string{
	trace.KindRangePush:  "push",
	trace.KindRangeStart: "start",
	trace.KindSpan:       "span",
}

func (b *builder) rangeEnd(r *analysis.Range) {
	parent, ok := b.open[r.Open]
	delete(b.open, r.Open)
	if !ok { // start/end ranges are children of their process
		parent = b.sid(idProcess, uint64(r.PID))
	}
	b.add(r.PID, rangeSpan(&b.a, r, b.t.String(r.Name), b.t.String(r.Domain), b.unixNano(r.Start), b.unixNano(r.End),
		b.proc(r.PID).traceID, b.sid(idRange, uint64(r.Open)), parent))
}

// rangeSpan returns the span of a range, named name ("range" when empty).
func rangeSpan(a *slab, r *analysis.Range, name, domain string, start, end uint64, traceID, id, parent []byte) *tracepb.Span {
	if name == "" {
		name = "range"
	}
	attrs := []*commonpb.KeyValue{
		a.str(AttrRangeKind, rangeKinds[r.Origin]),
		a.int(AttrThreadID, int64(r.TID)),
	}
	if domain != "" {
		attrs = append(attrs, a.str(AttrRangeDomain, domain))
	}
	if r.Unterminated {
		attrs = append(attrs, boolAttr(AttrRangeUnterminated, true))
	}
	return &tracepb.Span{
		TraceId:           traceID,
		SpanId:            id,
		ParentSpanId:      parent,
		Name:              name,
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: start,
		EndTimeUnixNano:   end,
		Attributes:        attrs,
	}
}

func (b *builder) frameEnd(f *analysis.Frame) {
	parent, ok := b.open[f.Event]
	delete(b.open, f.Event)
	if !ok {
		parent = b.sid(idProcess, uint64(f.PID))
	}
	var c trace.Code
	if int(f.Code) < len(b.t.Code) {
		c = b.t.Code[f.Code]
	}
	name, attrs := frameAttrs(&b.a, codeNames(b.t.String, c), f)
	b.add(f.PID, &tracepb.Span{
		TraceId:           b.proc(f.PID).traceID,
		SpanId:            b.sid(idRange, uint64(f.Event)),
		ParentSpanId:      parent,
		Name:              name,
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: b.unixNano(f.Start),
		EndTimeUnixNano:   b.unixNano(f.End),
		Attributes:        attrs,
	})
}

// frameCode is a Code entry with its strings resolved.
type frameCode struct {
	name, module, file string
	line               uint32
	native             bool
}

func codeNames(str func(trace.StringID) string, c trace.Code) frameCode {
	return frameCode{name: str(c.Name), module: str(c.Module), file: str(c.File), line: c.Line, native: c.Kind == trace.CodeNative}
}

// frameAttrs returns the name and attributes of a Python frame's span: the
// code's qualified name, code.function.name with its module, its file and
// first line (OpenTelemetry's code.* conventions), and its times.
func frameAttrs(a *slab, c frameCode, f *analysis.Frame) (string, []*commonpb.KeyValue) {
	name := c.name
	if name == "" {
		name = "python"
	}
	fn := name
	if c.module != "" {
		fn = c.module + "." + name
	}
	kind := "python"
	if c.native {
		kind = "native"
	}
	attrs := make([]*commonpb.KeyValue, 0, 9)
	attrs = append(attrs, a.str(AttrCodeFunc, fn), a.str(AttrFrameKind, kind), a.int(AttrThreadID, int64(f.TID)))
	if c.file != "" {
		attrs = append(attrs, a.str(AttrCodeFile, c.file))
	}
	if c.line > 0 {
		attrs = append(attrs, a.int(AttrCodeLine, int64(c.line)))
	}
	attrs = append(attrs, a.str(AttrFrameEnd, f.Ending()), a.int(AttrFrameSelf, f.SelfNs), a.int(AttrFrameDriver, f.DriverNs))
	return name, attrs
}

func hexStr(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

func (b *builder) callSpan(ev *analysis.Event) *tracepb.Span {
	var fn string
	if st := b.symbols[ev.PID]; st != nil && ev.Caller != 0 {
		fn = st.lookup(ev.Caller)
	}
	return &tracepb.Span{
		TraceId:           b.proc(ev.PID).traceID,
		SpanId:            b.sid(idCall, uint64(ev.Index)),
		ParentSpanId:      b.parentOf(ev),
		Name:              ev.API.Info().Name,
		Kind:              tracepb.Span_SPAN_KIND_CLIENT,
		StartTimeUnixNano: b.unixNano(ev.Start),
		EndTimeUnixNano:   b.unixNano(ev.End),
		Attributes:        callAttrs(&b.a, ev, b.threads[threadKey{ev.PID, ev.TID}], fn),
		Status:            callStatus(ev),
	}
}

// callStatus is ERROR with the result's name for calls the analysis counts
// as errors, else nil.
func callStatus(ev *analysis.Event) *tracepb.Status {
	if ev.Error {
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: ev.Result.String()}
	}
	return nil
}

// callAttrs returns the attributes of a call span; the device is the
// analysis' (recorded or attributed).
func callAttrs(a *slab, ev *analysis.Event, threadName, function string) []*commonpb.KeyValue {
	e := ev.Event
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
	if ev.Device != trace.NoDevice {
		attrs = append(attrs, a.int(AttrDevice, int64(ev.Device)))
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

// objectEnd sends the lifetime span of an object whose life the analysis
// ended (or found alive at the end).
func (b *builder) objectEnd(o *analysis.Object) {
	tid := b.proc(o.PID).traceID
	b.add(o.PID, lifetimeSpan(&b.a, o, b.unixNano(o.Start), b.unixNano(o.End), tid, b.sid(idLifetime, uint64(o.Create)), b.sid(idProcess, uint64(o.PID)),
		b.sid(idCall, uint64(o.Create)), b.enderID(o), b.t.String(b.objectNames[objectKey{o.PID, o.Kind, o.Handle}])))
}

// enderID is the span of the call that ended o, nil when alive.
func (b *builder) enderID(o *analysis.Object) []byte {
	if o.Ender < 0 {
		return nil
	}
	return b.sid(idCall, uint64(o.Ender))
}

// lifetimeSpan returns the span of an object's life, linked to the call
// that created it and the one that ended it (role destroy for a destroy
// call, ended for an implicit end: its context's destroy, the create that
// replaced it).
func lifetimeSpan(a *slab, o *analysis.Object, start, end uint64, traceID, id, parent, create, ender []byte, name string) *tracepb.Span {
	attrs := []*commonpb.KeyValue{
		a.str(AttrObjectKind, o.Kind.String()),
		a.str(AttrHandle, hexStr(o.Handle)),
		a.str(AttrObjectEnd, o.Reason.String()),
	}
	if o.Device != trace.NoDevice {
		attrs = append(attrs, a.int(AttrDevice, int64(o.Device)))
	}
	if o.Bytes != 0 {
		attrs = append(attrs, a.int(AttrBytes, int64(o.Bytes)))
	}
	if o.Pool != 0 {
		attrs = append(attrs, a.str(AttrPool, hexStr(o.Pool)))
	}
	if o.Stream != 0 {
		attrs = append(attrs, a.str(AttrStream, hexStr(o.Stream)))
	}
	if name != "" {
		attrs = append(attrs, a.str(AttrObjectName, name))
	}
	if o.Alive() {
		attrs = append(attrs, boolAttr(AttrObjectLeaked, true))
	}
	links := []*tracepb.Span_Link{{TraceId: traceID, SpanId: create,
		Attributes: []*commonpb.KeyValue{a.str(AttrLinkRole, "create")}}}
	if ender != nil {
		role := "destroy"
		if o.Reason != analysis.EndDestroyed {
			role = "ended"
		}
		links = append(links, &tracepb.Span_Link{TraceId: traceID, SpanId: ender,
			Attributes: []*commonpb.KeyValue{a.str(AttrLinkRole, role)}})
	}
	return &tracepb.Span{
		TraceId:           traceID,
		SpanId:            id,
		ParentSpanId:      parent,
		Name:              o.Kind.String(),
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: start,
		EndTimeUnixNano:   end,
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
