package otlp

import (
	"context"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// StreamStats counts what a Streamer did.
type StreamStats struct {
	Spans   int // spans built from observed events
	Sent    int // spans the collector accepted
	Dropped int // spans in batches dropped because the queue was full
	Failed  int // spans in batches the collector did not take (after retries)
	Batches int // batches accepted
}

// Streamer sends spans while a program is being recorded. Observe never
// blocks: spans are batched, and a batch that finds the bounded queue full is
// dropped and counted, so a slow or absent collector never stalls the
// recording (the trace file still holds every event; export it later).
//
// The events are replayed as they arrive through one analysis tracker
// (package analysis), the one a later Export uses, so devices, lifetimes,
// nesting and the error rule are the same. Streamed spans still differ from
// an Export of the trace file: the recorder hands over each thread's events
// in the order they were written, and a range or frame is written at its
// end, after the calls inside it, so only the calls that arrive in the same
// Observe as their enclosing span or frame are parented by it (events of
// one Observe are put in trace order first); IDs are derived from the
// recording's start, not the file. Memory is bounded by the queue (WithQueue
// batches of WithBatchBytes) plus one entry per live object, open range and
// frame and named object (the tracker forgets what ended: analysis.Forget).
type Streamer struct {
	cfg    *config
	client *Client
	ids    idSource
	a      slab // guarded by mu
	meta   trace.Meta
	wall0  int64 // Unix ns at mono0
	mono0  int64

	mu      sync.Mutex
	tk      *analysis.Tracker
	tables  *trace.Trace // the tracker's tables: Meta and Code
	strs    []string     // the recording's strings, during Observe only
	scratch []trace.Event
	procs   map[uint32]*streamProc
	open    map[int]streamOpen // ranges and frames open now, by opening event
	names   map[objectKey]string
	pending []*tracepb.ResourceSpans
	byPID   map[uint32]*tracepb.ScopeSpans
	spans   int
	bytes   int
	stats   StreamStats // Spans and Dropped; the sender counts the rest
	closed  bool
	// closing is set by Close: enqueue then waits for room until closeCtx ends
	closing  bool
	closeCtx context.Context

	sent, failed, batches atomic.Int64

	queue chan Batch
	done  chan struct{}
	stop  context.CancelFunc
	ctx   context.Context
}

// streamOpen is a range or frame open now: its parent span and its names,
// resolved while the strings are at hand.
type streamOpen struct {
	parent       []byte
	name, domain string
	code         frameCode // frames
}

type streamProc struct {
	traceID     []byte
	rootID      []byte
	resource    *resourcepb.Resource
	first, last int64
}

// NewStreamer returns a started streamer for a recording with the given
// metadata. wallAtMono maps trace clock time mono (CLOCK_MONOTONIC ns) to
// Unix ns wall; it is taken from meta (WallStart, MonoStart) when zero.
func NewStreamer(ctx context.Context, meta trace.Meta, opts ...Option) (*Streamer, error) {
	c := newConfig(append([]Option{WithBatchBytes(1 << 20), WithQueue(8)}, opts...))
	cl, err := newClient(ctx, c)
	if err != nil {
		return nil, err
	}
	id := c.identity
	if id == "" {
		id = meta.Host + "|" + strconv.FormatInt(time.Now().UnixNano(), 10) + "|" + strings.Join(meta.Command, " ")
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Streamer{cfg: c, client: cl, ids: newIDSource(id), meta: meta, wall0: meta.WallStart, mono0: meta.MonoStart,
		procs: map[uint32]*streamProc{}, byPID: map[uint32]*tracepb.ScopeSpans{},
		open: map[int]streamOpen{}, names: map[objectKey]string{}, tables: &trace.Trace{Meta: meta},
		queue: make(chan Batch, c.queueBatches), done: make(chan struct{}), stop: cancel, ctx: sctx}
	s.tk = analysis.NewTracker(s.tables, analysis.Forget(), analysis.OnEvent(s.event), analysis.OnRangeEnd(s.rangeEnd),
		analysis.OnFrameEnd(s.frameEnd), analysis.OnObjectEnd(s.objectEnd))
	go s.send()
	go s.flushEvery()
	return s, nil
}

// Endpoint says where the streamer sends spans.
func (s *Streamer) Endpoint() string { return s.client.Endpoint() }

func (s *Streamer) send() {
	defer close(s.done)
	for b := range s.queue {
		if err := s.client.Upload(s.ctx, b.ResourceSpans); err != nil {
			s.failed.Add(int64(b.Spans))
		} else {
			s.sent.Add(int64(b.Spans))
			s.batches.Add(1)
		}
	}
}

func (s *Streamer) flushEvery() {
	t := time.NewTicker(s.cfg.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.mu.Lock()
			if !s.closed {
				s.enqueue()
			}
			s.mu.Unlock()
		}
	}
}

// enqueue hands the pending batch to the sender, or drops it when the queue
// is full. Called with s.mu held.
func (s *Streamer) enqueue() {
	if s.spans == 0 {
		return
	}
	b := Batch{ResourceSpans: s.pending, Spans: s.spans, Bytes: s.bytes}
	s.pending, s.byPID, s.spans, s.bytes = nil, map[uint32]*tracepb.ScopeSpans{}, 0, 0
	if s.closing {
		select {
		case s.queue <- b:
		case <-s.closeCtx.Done():
			s.stats.Dropped += b.Spans
		}
		return
	}
	select {
	case s.queue <- b:
	default:
		s.stats.Dropped += b.Spans
	}
}

func (s *Streamer) unixNano(t int64) uint64 {
	v := t
	if s.wall0 != 0 {
		v = s.wall0 + (t - s.mono0)
	}
	if v < 0 {
		return 0
	}
	return uint64(v)
}

func (s *Streamer) proc(pid uint32, t int64) *streamProc {
	p := s.procs[pid]
	if p == nil {
		service := "cuprof"
		if len(s.meta.Command) > 0 {
			service = filepath.Base(s.meta.Command[0])
		}
		attrs := []*commonpb.KeyValue{
			strAttr(AttrServiceName, UnknownService(service)),
			strAttr(AttrServiceInstance, s.meta.Host+"/"+strconv.FormatUint(uint64(pid), 10)),
			intAttr(AttrPID, int64(pid)),
		}
		if s.meta.Host != "" {
			attrs = append(attrs, strAttr(AttrHostName, s.meta.Host))
		}
		if len(s.meta.Command) > 0 {
			attrs = append(attrs, strAttr(AttrCommandLine, strings.Join(s.meta.Command, " ")))
		}
		if s.meta.DriverVersion > 0 {
			attrs = append(attrs, strAttr(AttrDriverVersion, DriverVersion(s.meta.DriverVersion)))
		}
		if s.meta.CuprofVersion != "" {
			attrs = append(attrs, strAttr(AttrProfilerVersion, s.meta.CuprofVersion))
		}
		p = &streamProc{traceID: s.ids.traceID(pid), rootID: s.ids.spanID(idProcess, uint64(pid)),
			resource: newResource(attrs, s.cfg.version), first: t, last: t}
		s.procs[pid] = p
	}
	return p
}

// add appends a span of process pid to the pending batch. Called with s.mu held.
func (s *Streamer) add(pid uint32, p *streamProc, sp *tracepb.Span) {
	n := spanSize(sp)
	n += 1 + sizeVarint(uint64(n))
	if s.spans > 0 && s.bytes+n > s.cfg.batchBytes {
		s.enqueue()
	}
	ss := s.byPID[pid]
	if ss == nil {
		ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ScopeName, Version: s.cfg.version}, SchemaUrl: SchemaURL}
		s.pending = append(s.pending, &tracepb.ResourceSpans{Resource: p.resource, SchemaUrl: SchemaURL, ScopeSpans: []*tracepb.ScopeSpans{ss}})
		s.byPID[pid] = ss
		s.bytes += proto.Size(p.resource) + 64
	}
	ss.Spans = append(ss.Spans, sp)
	s.spans++
	s.bytes += n
	s.stats.Spans++
}

func (s *Streamer) str(id trace.StringID) string {
	if int(id) < len(s.strs) {
		return s.strs[id]
	}
	return ""
}

// ObserveCode gives the streamer the recording's code table (trace.Code,
// append-only like the strings; its names index strs, the strings of the
// following Observe calls) so that Python frames are named; frames observed
// before their code is known are named "python". It implements the
// recorder's code observer: it copies the entries it has not seen and keeps
// neither code nor strs.
func (s *Streamer) ObserveCode(code []trace.Code, strs []string) {
	s.mu.Lock()
	if n := len(s.tables.Code); len(code) > n {
		s.tables.Code = append(s.tables.Code, code[n:]...)
	}
	s.mu.Unlock()
}

// Observe turns events of one process into spans. It implements the
// recorder's observer: it never blocks on the network and keeps neither
// events nor strs. The events are put in trace order and replayed through
// the streamer's analysis tracker.
func (s *Streamer) Observe(pid uint32, events []trace.Event, strs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.strs = strs
	s.scratch = append(s.scratch[:0], events...)
	trace.SortEvents(s.scratch)
	for i := range s.scratch {
		e := &s.scratch[i]
		e.PID = pid
		p := s.proc(pid, e.Start)
		p.first = min(p.first, e.Start)
		p.last = max(p.last, e.End, e.Start)
		s.tk.Step(e)
	}
	s.strs = nil
	if cap(s.scratch) > 1<<16 {
		s.scratch = nil
	}
}

// parentOf is builder.parentOf over the stream's IDs.
func (s *Streamer) parentOf(ev *analysis.Event) []byte {
	if ev.Outer >= 0 {
		return s.ids.spanID(idRange, uint64(ev.Outer))
	}
	if r := looseRange(ev); r != nil {
		return s.ids.spanID(idRange, uint64(r.Open))
	}
	return s.procs[ev.PID].rootID
}

func (s *Streamer) event(ev *analysis.Event) {
	p := s.proc(ev.PID, ev.Start)
	switch ev.Kind {
	case trace.KindCall:
		s.add(ev.PID, p, &tracepb.Span{TraceId: p.traceID, SpanId: s.ids.spanID(idCall, uint64(ev.Index)),
			ParentSpanId: s.parentOf(ev), Name: ev.API.Info().Name, Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: s.unixNano(ev.Start), EndTimeUnixNano: s.unixNano(ev.End),
			Attributes: callAttrs(&s.a, ev, "", ""), Status: callStatus(ev)})
	case trace.KindRangePush, trace.KindSpan, trace.KindFrame, trace.KindRangeStart:
		o := streamOpen{parent: p.rootID, name: s.str(ev.Name), domain: s.str(ev.Domain)}
		if ev.Kind != trace.KindRangeStart {
			o.parent = s.parentOf(ev)
		}
		if ev.Kind == trace.KindFrame && int(ev.Code) < len(s.tables.Code) {
			o.code = codeNames(s.str, s.tables.Code[ev.Code])
		}
		s.open[ev.Index] = o
	case trace.KindObjectName:
		s.names[objectKey{ev.PID, ev.Event.Object, ev.Handle}] = s.str(ev.Name)
	}
}

func (s *Streamer) rangeEnd(r *analysis.Range) {
	o := s.open[r.Open]
	delete(s.open, r.Open)
	p := s.proc(r.PID, r.Start)
	if o.parent == nil {
		o.parent = p.rootID
	}
	s.add(r.PID, p, rangeSpan(&s.a, r, o.name, o.domain, s.unixNano(r.Start), s.unixNano(r.End), p.traceID,
		s.ids.spanID(idRange, uint64(r.Open)), o.parent))
}

func (s *Streamer) frameEnd(f *analysis.Frame) {
	o := s.open[f.Event]
	delete(s.open, f.Event)
	p := s.proc(f.PID, f.Start)
	if o.parent == nil {
		o.parent = p.rootID
	}
	name, attrs := frameAttrs(&s.a, o.code, f)
	s.add(f.PID, p, &tracepb.Span{TraceId: p.traceID, SpanId: s.ids.spanID(idRange, uint64(f.Event)),
		ParentSpanId: o.parent, Name: name, Kind: tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: s.unixNano(f.Start), EndTimeUnixNano: s.unixNano(f.End), Attributes: attrs})
}

func (s *Streamer) objectEnd(o *analysis.Object) {
	p := s.proc(o.PID, o.Start)
	k := objectKey{o.PID, o.Kind, o.Handle}
	name := s.names[k]
	delete(s.names, k)
	var ender []byte
	if o.Ender >= 0 {
		ender = s.ids.spanID(idCall, uint64(o.Ender))
	}
	s.add(o.PID, p, lifetimeSpan(&s.a, o, s.unixNano(o.Start), s.unixNano(o.End), p.traceID,
		s.ids.spanID(idLifetime, uint64(o.Create)), p.rootID, s.ids.spanID(idCall, uint64(o.Create)), ender, name))
}

func (s *Streamer) counts() StreamStats {
	s.mu.Lock()
	st := s.stats
	s.mu.Unlock()
	st.Sent, st.Failed, st.Batches = int(s.sent.Load()), int(s.failed.Load()), int(s.batches.Load())
	return st
}

// Close ends the stream: it emits the process spans, the lifetimes of
// objects still alive and ranges still open, and waits until the queue is
// sent or ctx is done (what is left then counts as failed). It returns the
// counts; the error is the first upload's failure, if any batch failed.
func (s *Streamer) Close(ctx context.Context) (StreamStats, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.counts(), nil
	}
	s.closing, s.closeCtx = true, ctx
	s.tk.Finish() // the ranges and frames still open, the objects still alive
	pids := make([]uint32, 0, len(s.procs))
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		p := s.procs[pid]
		name := "process"
		if len(s.meta.Command) > 0 {
			name = filepath.Base(s.meta.Command[0])
		}
		s.add(pid, p, &tracepb.Span{TraceId: p.traceID, SpanId: p.rootID, Name: name,
			Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: s.unixNano(p.first), EndTimeUnixNano: s.unixNano(p.last)})
	}
	s.enqueue()
	s.closed = true
	close(s.queue)
	s.mu.Unlock()

	var err error
	select {
	case <-s.done:
	case <-ctx.Done():
		s.stop() // abandon uploads in flight
		<-s.done
		err = ctx.Err()
	}
	s.stop()
	s.client.Close(context.WithoutCancel(ctx))
	st := s.counts()
	if err == nil && st.Failed > 0 {
		err = &unreachableError{"cannot send every span to OTLP collector at " + s.client.Endpoint() +
			": " + strconv.Itoa(st.Failed) + " failed; they are in the trace file, run cuprof export later"}
	}
	return st, err
}
