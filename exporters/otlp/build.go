// Package otlp turns cuprof traces into OpenTelemetry spans and sends them to
// an OTLP collector.
//
// Every driver call becomes a span named after its API, parented by the
// innermost NVTX range, cudawrap span or Python frame around it on its
// thread; every range and every Python frame becomes a span; every object
// lifetime (context, stream, event, allocation, pool, module) becomes a span
// from its create call to the call that ended it, linked to both. What
// encloses what (Event.Outer, Range.Outer, Frame.Outer), which device a call
// ran on, how each life ended and what counts as an error are package
// analysis' answers from one replay of the trace. Each traced process is one
// OTLP resource and one OTLP trace whose root span covers the process.
//
// One span builder serves Export (a trace file) and the Streamer (a
// recording as it runs). It writes each span straight into its protobuf
// wire form (encode.go: no message objects, no reflection) and cuts the
// spans into batches of a few MiB, each already the encoded request:
// cuprof posts it over OTLP/HTTP as it is (http.go), or hands its
// ResourceSpans to the SDK's otlptrace gRPC client. IDs are derived from
// the trace, so exporting a trace twice sends identical spans.
//
// Attribute names are listed in attrs.go and documented in docs/attributes.md.
package otlp

import (
	"encoding/binary"
	"iter"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// ScopeName is the instrumentation scope of every span cuprof exports.
const ScopeName = "github.com/cuprof/cuprof"

// DefaultBatchBytes is the encoded size a batch is cut at: under the 4 MiB
// collectors accept by default, whatever the compression.
const DefaultBatchBytes = 3 << 20

// Batch is one request's worth of spans, already encoded.
type Batch struct {
	// rs holds one ResourceSpans per process, each with its fields in wire
	// form as the message's unknown fields: proto.Marshal (which the
	// otlptrace gRPC client calls) writes them as they are.
	rs []*tracepb.ResourceSpans
	// body is the ExportTraceServiceRequest of rs, encoded: one
	// resource_spans field per process, each in place in its buffer
	body  [][]byte
	bufs  [][]byte    // the buffers rs are in
	free  chan []byte // where the buffers go back once sent
	Spans int         // number of spans
	Bytes int         // encoded size of the ResourceSpans (the request less its field tags)
}

// release gives the batch's buffers back to the builder that made it, for
// its next batches; the batch must not be used after.
func (b Batch) release() {
	for _, buf := range b.bufs {
		select {
		case b.free <- buf[:0]:
		default:
		}
	}
}

// ResourceSpans decodes the batch into messages, for tests and tools that
// read what is sent.
func (b Batch) ResourceSpans() ([]*tracepb.ResourceSpans, error) {
	out := make([]*tracepb.ResourceSpans, len(b.rs))
	for i, r := range b.rs {
		m := &tracepb.ResourceSpans{}
		if err := proto.Unmarshal(r.ProtoReflect().GetUnknown(), m); err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
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
	b := newBuilder(t, cfg, emit)
	if !cfg.inline && runtime.GOMAXPROCS(0) >= 2 { // one core: the pipe would only copy
		b.startPipe()
	}
	analysis.Run(t, events(), b.options()...)
	b.stopPipe()
	return b.finish()
}

// Collect is Build returning every span in one slice of ResourceSpans (per
// process, possibly split); for tests and small traces.
func Collect(t *trace.Trace, opts ...Option) ([]*tracepb.ResourceSpans, error) {
	var out []*tracepb.ResourceSpans
	_, err := Build(t, func(b Batch) error {
		rs, err := b.ResourceSpans()
		out = append(out, rs...)
		return err
	}, opts...)
	return out, err
}

type threadKey struct{ pid, tid uint32 }

// builder makes the spans of one replay and cuts them into batches. The
// tables t are read when a span is made: Export's are the file's; the
// Streamer's grow as the recording hands over strings, code and processes.
type builder struct {
	t    *trace.Trace
	cfg  *config
	ids  idSource
	emit func(Batch) error

	threads    map[threadKey]string
	threadTags map[threadKey][]byte // each thread's thread.id and thread.name attributes, encoded
	lastThread struct {             // the thread of the last call span and its attributes
		key   threadKey
		attrs []byte
		ok    bool
	}
	sites *analysis.Sites
	procs map[uint32]*procSeen
	pids  []uint32 // in order of first event
	last  *procSeen

	// the batch being filled: the spans of each process, encoded
	batch []*procSeen
	spans int
	bytes int
	total int
	err   error

	span    []byte      // a span moved out of the batch
	head    []byte      // what flush writes before a process's spans
	scope   []byte      // the InstrumentationScope of every span, as ScopeSpans field 1
	free    chan []byte // buffers of sent batches
	apis    []apiSpan
	results [1024][]byte // cuda.result attributes, encoded
	kinds   [256]objectKindSpan
	ends    [256][]byte // cuda.object.end attributes, encoded
	devices [64][]byte  // cuda.device attributes of devices 0-63, encoded
	// the cuda.handle, cuda.stream, cuda.aux and cuda.pool attributes of
	// the values seen last, encoded
	hexHandle, hexStream, hexAux, hexPool hexAttrs
	// the span ID of the range or frame a call was in last (rangeID)
	lastOuter struct {
		index int
		id    uint64
	}
	// what the last range span had from its name to its cuda.range.kind
	// attribute (rangeHead)
	lastRange struct {
		name   trace.StringID
		origin trace.Kind
		head   []byte // its name and kind fields: the start of timed
		timed  []byte
	}

	// pipe, when not nil, takes the callbacks' records to the encoder
	// goroutine (pipe.go), which alone uses the fields above
	pipe *spanPipe
}

// procSeen is what the replay saw of one process: its time span and marks,
// its IDs and resource, and its spans in the batch being filled.
type procSeen struct {
	pid        uint32
	first, end int64
	marks      []byte // NVTX marks, encoded as the process span's events
	traceID    []byte
	traceField piece // traceID as the span's field 1
	// links[r] is what a lifetime's link of role r to a span of the
	// process has before the span ID (appendLinkHead)
	links    [len(linkRoles)]piece
	rootID   uint64 // the process span's ID
	resource []byte // the Resource, encoded; nil until the process has a span
	spans    []byte // its spans in the batch being filled (ScopeSpans field 2 each)
	mark     int    // where in spans the span being written starts
	inBatch  bool
	used     int // bytes of its spans in the last batch it was in (buffer sizes its next buffer by it)
}

func newBuilder(t *trace.Trace, cfg *config, emit func(Batch) error) *builder {
	id := cfg.identity
	if id == "" {
		id = Identity(t)
	}
	b := &builder{t: t, cfg: cfg, ids: newIDSource(id), emit: emit, threads: map[threadKey]string{}, threadTags: map[threadKey][]byte{},
		sites: analysis.SitesOf(t), procs: map[uint32]*procSeen{},
		free: make(chan []byte, cfg.parallel+2)}
	b.hexHandle.key, b.hexStream.key, b.hexAux.key, b.hexPool.key = keyHandle, keyStream, keyAux, keyPool
	b.lastOuter.index = -1
	scope, _ := proto.Marshal(&commonpb.InstrumentationScope{Name: ScopeName, Version: cfg.version})
	b.scope = append(appendLenField(nil, fieldScopeSpansScope, len(scope)), scope...)
	for _, th := range t.Threads {
		b.threads[threadKey{th.PID, th.TID}] = th.Name
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

// proc returns what was seen of process pid, making it when new.
func (b *builder) proc(pid uint32) *procSeen {
	if p := b.last; p != nil && p.pid == pid {
		return p
	}
	p := b.procs[pid]
	if p == nil {
		p = &procSeen{pid: pid, first: -1, end: -1, traceID: b.ids.traceID(pid), rootID: b.ids.spanValue(idProcess, uint64(pid))}
		p.traceField = newPiece(appendBytes(nil, fieldSpanTraceID, p.traceID))
		for r := range p.links {
			p.links[r] = newPiece(appendLinkHead(nil, p.traceID, linkRoles[r].b[:linkRoles[r].n]))
		}
		b.procs[pid] = p
		b.pids = append(b.pids, pid)
	}
	b.last = p
	return p
}

// process returns the recorded description of pid, or a stand-in.
func (b *builder) process(pid uint32) trace.Process {
	if p := b.t.Process(pid); p != nil {
		return *p
	}
	return trace.Process{PID: pid, ExitCode: -1}
}

// outerParent is the span a range or frame is directly inside: the range
// or frame activation around it (Range.Outer, Frame.Outer), else its
// process. Start/end ranges do not nest, so they parent no range or frame
// (a call nothing nests around is parented by its thread's start/end range
// when one encloses it: callSpan).
func (b *builder) outerParent(outer int, p *procSeen, id []byte) []byte {
	if outer >= 0 {
		return b.ids.appendSpanID(id, idRange, uint64(outer))
	}
	return binary.BigEndian.AppendUint64(id, p.rootID)
}

// eventRec is what the spans take of an event of the replay (the
// analysis.Event with its answers read at the event).
type eventRec struct {
	trace.Event
	index, outer int
	// startRange is the start/end range around a call that nothing nests
	// around (Event.InRange, when it is one): its opening event, else -1
	startRange int
	device     int32
	error      bool
}

// newEventRec fills in every field of rec (which may hold an older record:
// queued), one by one, so that the event is copied once, not into a
// temporary first.
func newEventRec(ev *analysis.Event, rec *eventRec) {
	rec.Event = *ev.Event
	rec.index, rec.outer, rec.startRange, rec.device, rec.error = ev.Index, ev.Outer, -1, ev.Device, ev.Error
	if ev.Kind == trace.KindCall && ev.Outer < 0 {
		if r := ev.InRange(); r != nil && r.Origin == trace.KindRangeStart {
			rec.startRange = r.Open
		}
	}
}

func (b *builder) event(ev *analysis.Event) {
	if p := b.pipe; p != nil {
		newEventRec(ev, queued(p, recEvent, &p.chunk.events))
		p.filled()
		return
	}
	var rec eventRec
	newEventRec(ev, &rec)
	b.eventSpan(&rec)
}

func (b *builder) eventSpan(ev *eventRec) {
	p := b.proc(ev.PID)
	if p.first < 0 || ev.Start < p.first {
		p.first = ev.Start
	}
	p.end = max(p.end, ev.End)
	switch ev.Kind {
	case trace.KindCall:
		b.callSpan(ev, p)
	case trace.KindMark:
		p.marks = b.appendMark(p.marks, ev)
	}
}

// appendMark appends an NVTX mark as an event of its process's span.
func (b *builder) appendMark(out []byte, ev *eventRec) []byte {
	var buf [64]byte
	m := appendFixed64Field(buf[:0], fieldEventTime, b.unixNano(ev.Start))
	m = appendString(m, fieldEventName, b.t.String(ev.Name))
	m = appendIntAttr(m, tagEventAttrs, keyThreadID, int64(ev.TID))
	if d := b.t.String(ev.Domain); d != "" {
		m = appendStrAttr(m, tagEventAttrs, keyRangeDomain, d)
	}
	return append(appendLenField(out, fieldSpanEvents, len(m)), m...)
}

// finish sends the process spans, flushes and returns the span count.
func (b *builder) finish() (int, error) {
	b.processSpans()
	if b.err != nil {
		return b.total, b.err
	}
	return b.total, b.flush()
}

// processSpans adds the span of every process seen or recorded, by PID.
func (b *builder) processSpans() {
	pids := append([]uint32(nil), b.pids...)
	for _, p := range b.t.Processes {
		if _, ok := b.procs[p.PID]; !ok {
			b.proc(p.PID)
			pids = append(pids, p.PID)
		}
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		b.processSpan(b.procs[pid])
	}
}

// begin starts a span of process p: it is written in place at the end of
// p's spans in the batch, after its field tag and two bytes for its
// length, which add fills in.
func (b *builder) begin(p *procSeen) []byte {
	if p.spans == nil {
		p.spans = b.buffer(p)
	}
	p.mark = len(p.spans)
	return append(p.spans, tagScopeSpans, 0, 0)
}

// buffer returns a buffer for the spans of p in a batch (a free one when
// a sent batch gave its buffers back), its first bytes left for what flush
// writes before the spans.
func (b *builder) buffer(p *procSeen) []byte {
	if p.resource == nil {
		p.resource = b.resource(p.pid)
	}
	var buf []byte
	select {
	case buf = <-b.free:
	default:
		// A batch's size, but for a process whose spans took a small share
		// of the last batch (one of many processes taking turns): twice
		// that share, grown by append if it needs more. A batch of 100
		// processes made 100 buffers of a batch's size each (memory
		// cleared, then scanned by the collector: 0.17M events a second).
		n := b.cfg.batchBytes + b.cfg.batchBytes/8
		if p.used > 0 && 2*p.used < n {
			n = max(2*p.used, 4<<10)
		}
		buf = make([]byte, 0, n+b.headRoom(p))
	}
	return buf[:b.headRoom(p)]
}

// headRoom is what a ResourceSpans of p needs before its spans: the
// request's resource_spans tag and length, the resource with its tag and
// length, the ScopeSpans' tag and length, and the scope.
func (b *builder) headRoom(p *procSeen) int {
	return 3*(1+binary.MaxVarintLen32) + len(p.resource) + len(b.scope)
}

// add ends the span begun in s (p's spans, grown) and counts it in the
// current batch, flushing first when the batch would grow past the batch
// size. After emit failed it drops spans.
func (b *builder) add(p *procSeen, s []byte) {
	at := p.mark
	switch n := len(s) - at - 3; {
	case n < 1<<7:
		s[at+1] = byte(n)
		copy(s[at+2:], s[at+3:])
		s = s[:len(s)-1]
	case n < 1<<14:
		s[at+1], s[at+2] = byte(n)|0x80, byte(n>>7)
	default: // a length of three bytes or more: move the span up
		b.span = append(b.span[:0], s[at+3:]...)
		s = append(appendUvarint(s[:at+1], uint64(n)), b.span...)
	}
	if b.err != nil {
		p.spans = s[:at]
		return
	}
	size := len(s) - at
	if b.spans > 0 && b.bytes+size > b.cfg.batchBytes {
		// the batch is full without this span: send it, then start the
		// next batch with the span
		b.span = append(b.span[:0], s[at:]...)
		p.spans = s[:at]
		if b.err = b.flush(); b.err != nil {
			return
		}
		if p.spans == nil {
			p.spans = b.buffer(p)
		}
		s = append(p.spans, b.span...)
	}
	p.spans = s
	if !p.inBatch {
		p.inBatch = true
		b.batch = append(b.batch, p)
		b.bytes += b.resourceOverhead(p)
	}
	b.spans++
	b.total++
	b.bytes += size
}

// resourceOverhead is what a ResourceSpans adds to a request besides its
// spans: the resource, the scope, the schema URLs and their tags, with
// room for the lengths.
func (b *builder) resourceOverhead(p *procSeen) int {
	return len(p.resource) + len(b.scope) + 2*len(SchemaURL) + 24
}

// flush hands the current batch to emit: one ResourceSpans per process, in
// the order the processes' first spans came, each written around its
// spans in their buffer, which the batch takes.
func (b *builder) flush() error {
	if b.spans == 0 {
		return nil
	}
	batch := Batch{rs: make([]*tracepb.ResourceSpans, 0, len(b.batch)), Spans: b.spans, free: b.free}
	for _, p := range b.batch {
		start := b.headRoom(p)
		ss := len(b.scope) + len(p.spans) - start + sizeLenField(fieldScopeSpansSchemaURL, len(SchemaURL))
		h := append(appendLenField(b.head[:0], fieldResourceSpansResource, len(p.resource)), p.resource...)
		h = appendLenField(h, fieldResourceSpansScopeSpans, ss)
		h = append(h, b.scope...)
		b.head = h
		off := start - len(h)
		copy(p.spans[off:], h)
		m := appendString(p.spans, fieldScopeSpansSchemaURL, SchemaURL)
		m = appendString(m, fieldResourceSpansSchemaURL, SchemaURL)
		rs := &tracepb.ResourceSpans{}
		rs.ProtoReflect().SetUnknown(protoreflect.RawFields(m[off:]))
		batch.rs = append(batch.rs, rs)
		field := appendLenField(b.head[:0], fieldRequestResourceSpans, len(m)-off)
		copy(m[off-len(field):], field)
		batch.body = append(batch.body, m[off-len(field):])
		batch.bufs = append(batch.bufs, m)
		batch.Bytes += sizeLenField(fieldResourceSpansResource, len(m)-off)
		p.used = len(m) - start
		p.spans, p.inBatch = nil, false
	}
	b.batch, b.spans, b.bytes = b.batch[:0], 0, 0
	return b.emit(batch)
}

// resource returns the encoded resource of process pid.
func (b *builder) resource(pid uint32) []byte {
	m, err := proto.Marshal(b.resourceOf(pid))
	if err != nil { // strAttr makes every string valid: nothing else can fail
		panic("otlp: cannot encode a resource: " + err.Error())
	}
	return m
}

func (b *builder) resourceOf(pid uint32) *resourcepb.Resource {
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
	id := analysis.IdentityOf(b.t, &p.proc)
	attrs := []*commonpb.KeyValue{
		strAttr(AttrServiceName, UnknownService(service)),
		strAttr(AttrServiceInstance, ServiceInstance(&id)),
		intAttr(AttrPID, int64(id.PID)),
	}
	if id.Host != "" {
		attrs = append(attrs, strAttr(AttrHostName, id.Host))
	}
	if id.MachineID != "" {
		attrs = append(attrs, strAttr(AttrHostID, id.MachineID))
	}
	if id.BootID != "" {
		attrs = append(attrs, strAttr(AttrBootID, id.BootID))
	}
	if id.Container != "" {
		attrs = append(attrs, strAttr(AttrContainerID, id.Container))
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
	for _, a := range [...]struct {
		key string
		v   int
	}{{AttrRank, id.Rank}, {AttrLocalRank, id.LocalRank}, {AttrWorldSize, id.WorldSize}, {AttrNodeRank, id.NodeRank}} {
		if a.v >= 0 {
			attrs = append(attrs, intAttr(a.key, int64(a.v)))
		}
	}
	if id.Job != "" {
		attrs = append(attrs, strAttr(AttrJobID, id.Job))
	}
	if id.Launcher != "" {
		attrs = append(attrs, strAttr(AttrLauncher, id.Launcher))
	}
	if len(m.GPUs) > 0 && !strings.Contains(m.Host, ",") {
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

// ServiceInstance is the service.instance.id of a process: host/pid, with
// /rank and /job where a launcher gave them, so that ranks of hosts with one
// name and processes with one pid stay apart.
func ServiceInstance(id *analysis.Identity) string {
	s := id.Host + "/" + strconv.FormatUint(uint64(id.PID), 10)
	if id.HasRank() {
		s += "/r" + strconv.Itoa(id.Rank)
	}
	if id.Job != "" {
		s += "/" + id.Job
	}
	return s
}

// DriverVersion formats a CUDA driver version number (13000) as 13.0.
func DriverVersion(v int32) string {
	return strconv.Itoa(int(v/1000)) + "." + strconv.Itoa(int(v%1000/10))
}

// processSpan adds the span of process p: from its start (or first event)
// to its end (or last event), with its NVTX marks as events.
func (b *builder) processSpan(p *procSeen) {
	proc := b.process(p.pid)
	first, end := p.first, p.end
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
	s := appendSpanHead(b.begin(p), &spanHead{traceID: p.traceID, spanID: binary.BigEndian.AppendUint64(nil, p.rootID), name: name, kind: spanKindInternal,
		start: b.unixNano(first), end: b.unixNano(end)})
	b.add(p, append(s, p.marks...))
}

var rangeKinds = map[trace.Kind]string{
	trace.KindRangePush:  "push",
	trace.KindRangeStart: "start",
	trace.KindSpan:       "span",
}

// rangeKindAttrs is the cuda.range.kind attribute of a range of each
// origin, encoded (the value "" for a kind that is not a range's).
var rangeKindAttrs = func() (a [256][]byte) {
	for k := range a {
		a[k] = appendStrAttr(nil, tagSpanAttributes, keyRangeKind, rangeKinds[trace.Kind(k)])
	}
	return a
}()

func (b *builder) rangeEnd(r *analysis.Range) {
	if p := b.pipe; p != nil {
		*queued(p, recRange, &p.chunk.ranges) = *r
		p.filled()
		return
	}
	b.rangeSpan(r)
}

func (b *builder) rangeSpan(r *analysis.Range) {
	p := b.proc(r.PID)
	// appendSpanHead's fields, the name, kind and times from rangeHead
	s := appendPiece(b.begin(p), &p.traceField)
	s = appendID(s, tagSpanID, b.ids.spanValue(idRange, uint64(r.Open)))
	if r.Outer >= 0 {
		s = appendID(s, tagParentID, b.ids.spanValue(idRange, uint64(r.Outer)))
	} else {
		s = appendID(s, tagParentID, p.rootID)
	}
	t, n := b.rangeHead(r.Name, r.Origin)
	if start, end := b.unixNano(r.Start), b.unixNano(r.End); start != 0 && end != 0 {
		s = appendTimed(s, t, n, start, end)
	} else {
		s = appendTimedZero(s, t, n, start, end)
	}
	s = appendSpanIntAttr(s, keyThreadID, int64(r.TID))
	if d := b.t.String(r.Domain); d != "" {
		s = appendStrAttr(s, tagSpanAttributes, keyRangeDomain, d)
	}
	if r.Unterminated {
		s = appendBoolAttr(s, tagSpanAttributes, keyRangeUnterm, true)
	}
	b.add(p, s)
}

// rangeHead returns what the span of a range named name ("range" when it
// has none) of the given origin has from its name to its cuda.range.kind
// attribute, made by timed, and the size of its name and kind fields (5
// and 6); the last one made is kept, for the next range of the same name
// and origin.
func (b *builder) rangeHead(name trace.StringID, origin trace.Kind) ([]byte, int) {
	c := &b.lastRange
	if c.timed != nil && c.name == name && c.origin == origin {
		return c.timed, len(c.head)
	}
	str := b.t.String(name)
	if str == "" {
		str = "range"
	}
	c.name, c.origin = name, origin
	c.head = appendVarintField(appendString(c.head[:0], fieldSpanName, str), fieldSpanKind, spanKindInternal)
	c.timed = timed(c.timed[:0], c.head, rangeKindAttrs[origin])
	return c.timed, len(c.head)
}

func (b *builder) frameEnd(f *analysis.Frame) {
	if p := b.pipe; p != nil {
		*queued(p, recFrame, &p.chunk.frames) = *f
		p.filled()
		return
	}
	b.frameSpan(f)
}

func (b *builder) frameSpan(f *analysis.Frame) {
	p := b.proc(f.PID)
	var c trace.Code
	if int(f.Code) < len(b.t.Code) {
		c = b.t.Code[f.Code]
	}
	var ids [16]byte
	id := b.ids.appendSpanID(ids[:0], idRange, uint64(f.Open))
	parent := b.outerParent(f.Outer, p, ids[8:8])
	// the code's qualified name, code.function.name with its module, its
	// file and first line (OpenTelemetry's code.* conventions), its times
	name, fn, file := analysis.CodeName(b.t, f.Code), analysis.CodeFunction(b.t, f.Code), b.t.String(c.File)
	kind := "python"
	if c.Kind == trace.CodeNative {
		kind = "native"
	}
	s := appendSpanHead(b.begin(p), &spanHead{traceID: p.traceID, spanID: id, parent: parent, name: name,
		kind: spanKindInternal, start: b.unixNano(f.Start), end: b.unixNano(f.End)})
	s = appendStrAttr(s, tagSpanAttributes, keyCodeFunc, fn)
	s = appendStrAttr(s, tagSpanAttributes, keyFrameKind, kind)
	s = appendSpanIntAttr(s, keyThreadID, int64(f.TID))
	if file != "" {
		s = appendStrAttr(s, tagSpanAttributes, keyCodeFile, file)
	}
	if c.Line > 0 {
		s = appendSpanIntAttr(s, keyCodeLine, int64(c.Line))
	}
	s = appendStrAttr(s, tagSpanAttributes, keyFrameEnd, f.Ending())
	s = appendSpanIntAttr(s, keyFrameSelf, f.SelfNs)
	s = appendSpanIntAttr(s, keyFrameDriver, f.DriverNs)
	b.add(p, s)
}

// apiSpan is what the call spans of one API share, encoded: the span's
// name and kind (fields 5 and 6), its cuda.api and cuda.category
// attributes (attrsOK: and cuda.result=CUDA_SUCCESS after them), and its
// cuda.object.kind and cuda.object.role attributes (empty when the API
// names no object).
type apiSpan struct {
	made                         bool
	head, attrs, attrsOK, object []byte
	// okCalls are what the span of a successful call on a thread and
	// device has from head to object (okSpan), of the threads and devices
	// seen last (next is the one to replace): one copy per span instead
	// of six
	okCalls [4]okCall
	next    int
	// caller is the cuda.caller attribute, with code.function when the
	// process's symbols name it, of the API's last call (from process
	// callerPID at address callerAddr), encoded
	caller     []byte
	callerPID  uint32
	callerAddr uint64
}

// okCall is what the spans of successful calls of one API on one thread
// and device have from their name to object, encoded, their times zero.
type okCall struct {
	thread threadKey
	device int32
	span   []byte // nil: unused
}

// okSpan returns what the span of a successful call of as on thread (pid,
// tid) and device d has from its name to object, as callSpan writes them:
// as.head, the start and end fields (timed), attrsOK, the thread's
// attributes, the device's (none for NoDevice) and object.
func (b *builder) okSpan(as *apiSpan, pid, tid uint32, d int32) []byte {
	k := threadKey{pid, tid}
	for i := range as.okCalls {
		if c := &as.okCalls[i]; c.thread == k && c.device == d && c.span != nil {
			return c.span
		}
	}
	c := &as.okCalls[as.next]
	as.next = (as.next + 1) % len(as.okCalls)
	a := append(timed(c.span[:0], as.head, as.attrsOK), b.threadAttrs(pid, tid)...)
	if d != trace.NoDevice {
		a = b.appendDevice(a, d)
	}
	c.thread, c.device, c.span = k, d, append(a, as.object...)
	return c.span
}

// apiSpan returns what the call spans of API a share.
func (b *builder) apiSpan(a trace.API) *apiSpan {
	if int(a) < len(b.apis) && b.apis[a].made {
		return &b.apis[a]
	}
	info := a.Info()
	as := apiSpan{made: true}
	as.head = appendString(nil, fieldSpanName, info.Name)
	as.head = appendVarintField(as.head, fieldSpanKind, spanKindClient)
	as.attrs = appendStrAttr(nil, tagSpanAttributes, keyAPI, info.Name)
	as.attrs = appendStrAttr(as.attrs, tagSpanAttributes, keyCategory, info.Category.String())
	as.attrsOK = append(append([]byte(nil), as.attrs...), b.resultAttr(trace.Success)...)
	if info.Object != trace.ObjectNone {
		as.object = appendStrAttr(nil, tagSpanAttributes, keyObjectKind, info.Object.String())
		if info.Role != trace.RoleNone {
			as.object = appendStrAttr(as.object, tagSpanAttributes, keyObjectRole, info.Role.String())
		}
	}
	if int(a) >= 1<<16 { // not a table's ID: not kept
		return &as
	}
	if int(a) >= len(b.apis) {
		b.apis = append(b.apis, make([]apiSpan, int(a)+1-len(b.apis))...)
	}
	b.apis[a] = as
	return &b.apis[a]
}

// threadAttrs returns the thread.id attribute of thread (pid, tid) and its
// thread.name when the trace names it, encoded.
func (b *builder) threadAttrs(pid, tid uint32) []byte {
	k := threadKey{pid, tid}
	if b.lastThread.ok && k == b.lastThread.key {
		return b.lastThread.attrs
	}
	a, ok := b.threadTags[k]
	if !ok {
		a = appendIntAttr(nil, tagSpanAttributes, keyThreadID, int64(tid))
		if name := b.threads[k]; name != "" {
			a = appendStrAttr(a, tagSpanAttributes, keyThreadName, name)
		}
		b.threadTags[k] = a
	}
	b.lastThread.key, b.lastThread.attrs, b.lastThread.ok = k, a, true
	return a
}

// appendDevice appends the cuda.device attribute of device d.
func (b *builder) appendDevice(s []byte, d int32) []byte {
	if uint32(d) >= uint32(len(b.devices)) {
		return appendSpanIntAttr(s, keyDevice, int64(d))
	}
	a := b.devices[d]
	if a == nil {
		a = appendIntAttr(nil, tagSpanAttributes, keyDevice, int64(d))
		b.devices[d] = a
	}
	return append(s, a...)
}

// resultAttr returns the cuda.result attribute of r, encoded.
func (b *builder) resultAttr(r trace.Result) []byte {
	if uint32(r) < uint32(len(b.results)) {
		if a := b.results[r]; a != nil {
			return a
		}
		b.results[r] = appendStrAttr(nil, tagSpanAttributes, keyResult, r.String())
		return b.results[r]
	}
	return appendStrAttr(nil, tagSpanAttributes, keyResult, r.String())
}

// spanTimes is the size of a span's start and end fields (tags and fixed64
// values).
const spanTimes = 2 * (1 + 8)

// timed appends to p a span's name and kind fields head, its start and end
// fields with times of zero, and after: what appendTimed copies.
func timed(p, head, after []byte) []byte {
	p = append(p, head...)
	p = append(p, tagSpanStart, 0, 0, 0, 0, 0, 0, 0, 0, tagSpanEnd, 0, 0, 0, 0, 0, 0, 0, 0)
	return append(p, after...)
}

// appendTimed appends the fields of t (made by timed, its head of n bytes)
// with the times start and end, neither 0: in one copy, the times then
// written in place. (A time of 0 is left out of a span, as proto.Marshal
// leaves it out: appendTimedZero. The callers choose, so that this one is
// inlined.)
func appendTimed(s, t []byte, n int, start, end uint64) []byte {
	at := len(s) + n
	s = append(s, t...)
	binary.LittleEndian.PutUint64(s[at+1:], start)
	binary.LittleEndian.PutUint64(s[at+10:], end)
	return s
}

// appendTimedZero is appendTimed where a time is 0, field by field.
func appendTimedZero(s, t []byte, n int, start, end uint64) []byte {
	s = appendFixed64(appendFixed64(append(s, t[:n]...), tagSpanStart, start), tagSpanEnd, end)
	return append(s, t[n+spanTimes:]...)
}

// appendID appends an 8-byte span ID field of tag t.
func appendID(s []byte, t byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(append(s, t, 8), v)
}

// callSpan adds the span of a call; the device is the analysis' (recorded
// or attributed), and the status ERROR with the result's name for calls the
// analysis counts as errors.
func (b *builder) callSpan(ev *eventRec, p *procSeen) {
	e := &ev.Event
	as := b.apiSpan(e.API)
	s := b.begin(p)
	s = appendPiece(s, &p.traceField)
	s = appendID(s, tagSpanID, b.ids.spanValue(idCall, uint64(ev.index)))
	switch {
	case ev.outer >= 0:
		s = appendID(s, tagParentID, b.rangeID(ev.outer))
	case ev.startRange >= 0:
		s = appendID(s, tagParentID, b.ids.spanValue(idRange, uint64(ev.startRange)))
	default:
		s = appendID(s, tagParentID, p.rootID)
	}
	if e.Result == trace.Success {
		t := b.okSpan(as, e.PID, e.TID, ev.device)
		if start, end := b.unixNano(e.Start), b.unixNano(e.End); start != 0 && end != 0 {
			s = appendTimed(s, t, len(as.head), start, end)
		} else {
			s = appendTimedZero(s, t, len(as.head), start, end)
		}
	} else {
		s = append(s, as.head...)
		s = appendFixed64(s, tagSpanStart, b.unixNano(e.Start))
		s = appendFixed64(s, tagSpanEnd, b.unixNano(e.End))
		s = append(append(s, as.attrs...), b.resultAttr(e.Result)...)
		s = append(s, b.threadAttrs(e.PID, e.TID)...)
		if !e.Result.OK() {
			s = appendSpanIntAttr(s, keyResultCode, int64(e.Result))
		}
		if ev.device != trace.NoDevice {
			s = b.appendDevice(s, ev.device)
		}
		s = append(s, as.object...)
	}
	if e.Handle != 0 {
		s = b.hexHandle.append(s, e.Handle)
	}
	if e.Stream != 0 {
		s = b.hexStream.append(s, e.Stream)
	}
	if e.Aux != 0 {
		s = b.hexAux.append(s, e.Aux)
	}
	if e.Size != 0 {
		s = appendSpanIntAttr(s, keyBytes, int64(e.Size))
	}
	if e.Flags != 0 {
		s = appendSpanIntAttr(s, keyFlags, int64(e.Flags))
	}
	if e.Caller != 0 {
		s = append(s, b.callerAttrs(as, e.PID, e.Caller)...)
	}
	if ev.error {
		s = appendErrorStatus(s, e.Result.String())
	}
	b.add(p, s)
}

// rangeID is the span ID of the range or frame opened at event index open,
// as the parent of a call: the last one is kept, for the calls that follow
// in the same range.
func (b *builder) rangeID(open int) uint64 {
	if c := &b.lastOuter; c.index != open {
		c.index, c.id = open, b.ids.spanValue(idRange, uint64(open))
	}
	return b.lastOuter.id
}

// callerAttrs returns the cuda.caller attribute of a call of as from
// address caller of process pid, and its code.function with the site's
// name (analysis.CallSite.Name) when the recording's symbols or mappings
// hold it, encoded: a call site makes its calls in a row.
func (b *builder) callerAttrs(as *apiSpan, pid uint32, caller uint64) []byte {
	if as.caller != nil && as.callerAddr == caller && as.callerPID == pid {
		return as.caller
	}
	a := appendSpanHexAttr(as.caller[:0], keyCaller, caller)
	if cs := b.sites.Resolve(pid, caller); cs.Function != "" || cs.Mapping >= 0 {
		a = appendStrAttr(a, tagSpanAttributes, keyCodeFunc, cs.Name())
	}
	as.caller, as.callerPID, as.callerAddr = a, pid, caller
	return a
}

// objectEnd adds the lifetime span of an object whose life the analysis
// ended (or found alive at the end), linked to the call that created it
// and the one that ended it (role destroy for a destroy call, ended for an
// implicit end: its context's destroy, the create that replaced it).
func (b *builder) objectEnd(o *analysis.Object) {
	if p := b.pipe; p != nil {
		*queued(p, recObject, &p.chunk.objects) = *o
		p.filled()
		return
	}
	b.objectSpan(o)
}

func (b *builder) objectSpan(o *analysis.Object) {
	p := b.proc(o.PID)
	var name string
	if o.Name != 0 {
		name = b.t.String(o.Name) // the analysis's rule: analysis.Analysis.ObjectName
	}
	k := b.objectKind(o.Kind)
	// appendSpanHead's fields, of which only the times vary
	s := appendPiece(b.begin(p), &p.traceField)
	s = appendID(s, tagSpanID, b.ids.spanValue(idLifetime, uint64(o.Create)))
	s = appendID(s, tagParentID, p.rootID)
	if start, end := b.unixNano(o.Start), b.unixNano(o.End); start != 0 && end != 0 {
		s = appendTimed(s, k.timed, len(k.head), start, end)
	} else {
		s = appendTimedZero(s, k.timed, len(k.head), start, end)
	}
	s = b.hexHandle.append(s, o.Handle)
	s = append(s, b.endAttr(o.Reason)...)
	if o.Device != trace.NoDevice {
		s = b.appendDevice(s, o.Device)
	}
	if o.Bytes != 0 {
		s = appendSpanIntAttr(s, keyBytes, int64(o.Bytes))
	}
	if o.Pool != 0 {
		s = b.hexPool.append(s, o.Pool)
	}
	if o.Stream != 0 {
		s = b.hexStream.append(s, o.Stream)
	}
	if name != "" {
		s = appendStrAttr(s, tagSpanAttributes, keyObjectName, name)
	}
	if o.Alive() {
		s = appendBoolAttr(s, tagSpanAttributes, keyLeaked, true)
	}
	s = b.appendLink(s, p, roleCreate, o.Create)
	if o.Ender >= 0 {
		role := roleDestroy
		if o.Reason != analysis.EndDestroyed {
			role = roleEnded
		}
		s = b.appendLink(s, p, role, o.Ender)
	}
	b.add(p, s)
}

// objectKindSpan is what the lifetime spans of one kind of object share,
// encoded: the span's name and kind (fields 5 and 6), and those with the
// start and end fields and the cuda.object.kind attribute after them
// (timed).
type objectKindSpan struct{ head, timed []byte }

func (b *builder) objectKind(o trace.Object) *objectKindSpan {
	k := &b.kinds[o]
	if k.head == nil {
		k.head = appendVarintField(appendString(nil, fieldSpanName, o.String()), fieldSpanKind, spanKindInternal)
		k.timed = timed(nil, k.head, appendStrAttr(nil, tagSpanAttributes, keyObjectKind, o.String()))
	}
	return k
}

// endAttr returns the cuda.object.end attribute of r, encoded.
func (b *builder) endAttr(r analysis.EndReason) []byte {
	a := b.ends[r]
	if a == nil {
		a = appendStrAttr(nil, tagSpanAttributes, keyObjectEnd, r.String())
		b.ends[r] = a
	}
	return a
}

// Roles of a lifetime's links: indexes of linkRoles and procSeen.links.
const (
	roleCreate = iota
	roleDestroy
	roleEnded
)

// linkRoles are the cuda.link.role attributes of a lifetime's links,
// encoded (a Link's field 4), by role.
var linkRoles = [...]piece{
	roleCreate:  newPiece(appendStrAttr(nil, tagLinkAttrs, keyLinkRole, "create")),
	roleDestroy: newPiece(appendStrAttr(nil, tagLinkAttrs, keyLinkRole, "destroy")),
	roleEnded:   newPiece(appendStrAttr(nil, tagLinkAttrs, keyLinkRole, "ended")),
}

// appendLink appends a link of the given role to the span of the call
// at index call of process p: its head (the trace ID and the span ID's
// tag) and role attribute are p's and linkRoles' pieces, made once.
func (b *builder) appendLink(s []byte, p *procSeen, role int, call int) []byte {
	s = appendPiece(s, &p.links[role])
	s = binary.BigEndian.AppendUint64(s, b.ids.spanValue(idCall, uint64(call)))
	return appendPiece(s, &linkRoles[role])
}

// Attributes of resources, which are built as messages (one per process).

func strAttr(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: validUTF8(v)}}}
}

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

func strsAttr(k string, vs []string) *commonpb.KeyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, len(vs))}
	for i, v := range vs {
		arr.Values[i] = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: validUTF8(v)}}
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
}
