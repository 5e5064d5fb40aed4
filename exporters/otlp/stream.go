package otlp

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

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
// Streamed spans differ from a later Export of the trace file: cudawrap spans
// arrive complete after the calls inside them, so calls are parented by NVTX
// push/pop ranges only; IDs are derived from the recording's start, not the
// file. Memory is bounded by the queue (WithQueue batches of WithBatchBytes)
// plus one entry per live object and open range.
type Streamer struct {
	cfg    *config
	client *Client
	ids    idSource
	a      slab // guarded by mu
	meta   trace.Meta
	wall0  int64 // Unix ns at mono0
	mono0  int64

	mu      sync.Mutex
	seq     uint64
	procs   map[uint32]*streamProc
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

type streamRange struct {
	id    []byte
	name  string
	dom   string
	start int64
}

type streamObject struct {
	id       []byte
	start    int64
	create   []byte
	kind     trace.Object
	bytes    uint64
	device   int32
	pool     uint64
	refcount int
}

type streamProc struct {
	traceID     []byte
	rootID      []byte
	resource    *resourcepb.Resource
	first, last int64
	stacks      map[uint32][]streamRange // push ranges per thread
	started     map[uint64]streamRange   // start/end ranges by ID
	objects     map[objectKey]*streamObject
	primary     map[int32]objectKey
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
		queue: make(chan Batch, c.queueBatches), done: make(chan struct{}), stop: cancel, ctx: sctx}
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
			strAttr(AttrServiceName, service),
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
			resource: &resourcepb.Resource{Attributes: withResourceEnv(attrs)}, first: t, last: t,
			stacks: map[uint32][]streamRange{}, started: map[uint64]streamRange{},
			objects: map[objectKey]*streamObject{}, primary: map[int32]objectKey{}}
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
		ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ScopeName, Version: s.cfg.version}}
		s.pending = append(s.pending, &tracepb.ResourceSpans{Resource: p.resource, ScopeSpans: []*tracepb.ScopeSpans{ss}})
		s.byPID[pid] = ss
		s.bytes += proto.Size(p.resource) + 64
	}
	ss.Spans = append(ss.Spans, sp)
	s.spans++
	s.bytes += n
	s.stats.Spans++
}

func (s *Streamer) nextID() []byte {
	s.seq++
	return s.ids.spanID(idStream, s.seq)
}

// Observe turns events of one process into spans. It implements the
// recorder's observer: it never blocks on the network and keeps neither
// events nor strs.
func (s *Streamer) Observe(pid uint32, events []trace.Event, strs []string) {
	str := func(id trace.StringID) string {
		if int(id) < len(strs) {
			return strs[id]
		}
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for i := range events {
		e := &events[i]
		p := s.proc(pid, e.Start)
		if e.Start < p.first {
			p.first = e.Start
		}
		if e.End > p.last {
			p.last = e.End
		}
		switch e.Kind {
		case trace.KindRangePush:
			p.stacks[e.TID] = append(p.stacks[e.TID], streamRange{id: s.nextID(), name: str(e.Name), dom: str(e.Domain), start: e.Start})
		case trace.KindRangePop:
			st := p.stacks[e.TID]
			if len(st) == 0 {
				continue
			}
			r := st[len(st)-1]
			p.stacks[e.TID] = st[:len(st)-1]
			s.add(pid, p, s.rangeSpan(p, r, e.Start, s.parentOf(p, e.TID), e.TID, "push"))
		case trace.KindRangeStart:
			p.started[e.ID] = streamRange{id: s.nextID(), name: str(e.Name), dom: str(e.Domain), start: e.Start}
		case trace.KindRangeEnd:
			r, ok := p.started[e.ID]
			if !ok {
				continue
			}
			delete(p.started, e.ID)
			s.add(pid, p, s.rangeSpan(p, r, e.Start, p.rootID, e.TID, "start"))
		case trace.KindSpan:
			r := streamRange{id: s.nextID(), name: str(e.Name), dom: str(e.Domain), start: e.Start}
			s.add(pid, p, s.rangeSpan(p, r, e.End, s.parentOf(p, e.TID), e.TID, "span"))
		case trace.KindCall:
			s.call(pid, p, e)
		}
	}
}

func (s *Streamer) parentOf(p *streamProc, tid uint32) []byte {
	if st := p.stacks[tid]; len(st) > 0 {
		return st[len(st)-1].id
	}
	return p.rootID
}

func (s *Streamer) rangeSpan(p *streamProc, r streamRange, end int64, parent []byte, tid uint32, kind string) *tracepb.Span {
	name := r.name
	if name == "" {
		name = "range"
	}
	attrs := []*commonpb.KeyValue{strAttr(AttrRangeKind, kind), intAttr(AttrThreadID, int64(tid))}
	if r.dom != "" {
		attrs = append(attrs, strAttr(AttrRangeDomain, r.dom))
	}
	return &tracepb.Span{TraceId: p.traceID, SpanId: r.id, ParentSpanId: parent, Name: name,
		Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: s.unixNano(r.start),
		EndTimeUnixNano: s.unixNano(end), Attributes: attrs}
}

func (s *Streamer) call(pid uint32, p *streamProc, e *trace.Event) {
	id := s.nextID()
	s.add(pid, p, &tracepb.Span{TraceId: p.traceID, SpanId: id, ParentSpanId: s.parentOf(p, e.TID),
		Name: e.API.Info().Name, Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: s.unixNano(e.Start),
		EndTimeUnixNano: s.unixNano(e.End), Attributes: callAttrs(&s.a, e, "", ""), Status: callStatus(e)})
	if !e.Result.OK() {
		return
	}
	info := e.API.Info()
	switch info.Role {
	case trace.RoleCreate, trace.RoleRetain:
		if e.Handle == 0 || info.Object == trace.ObjectNone {
			return
		}
		k := objectKey{pid, info.Object, e.Handle}
		if o := p.objects[k]; o != nil {
			o.refcount++
			return
		}
		o := &streamObject{id: s.nextID(), start: e.Start, create: id, kind: info.Object, device: e.Device, refcount: 1}
		if info.Object == trace.ObjectAllocation || info.Object == trace.ObjectHostAllocation ||
			info.Object == trace.ObjectManagedAllocation {
			o.bytes = e.Size
			if e.API == trace.APIMemAllocFromPoolAsync {
				o.pool = e.Aux
			}
		}
		p.objects[k] = o
		if info.Role == trace.RoleRetain {
			p.primary[e.Device] = k
		}
	case trace.RoleDestroy, trace.RoleRelease:
		k := objectKey{pid, info.Object, e.Handle}
		if e.API == trace.APIDevicePrimaryCtxRelease || e.API == trace.APIDevicePrimaryCtxReset {
			pk, ok := p.primary[e.Device]
			if !ok {
				return
			}
			k = pk
		}
		o := p.objects[k]
		if o == nil {
			return
		}
		if info.Role == trace.RoleRelease {
			if o.refcount--; o.refcount > 0 {
				return
			}
		}
		delete(p.objects, k)
		if k.kind == trace.ObjectContext {
			delete(p.primary, e.Device)
		}
		s.add(pid, p, s.lifetime(p, k, o, e.End, id))
	}
}

func (s *Streamer) lifetime(p *streamProc, k objectKey, o *streamObject, end int64, destroy []byte) *tracepb.Span {
	attrs := []*commonpb.KeyValue{strAttr(AttrObjectKind, o.kind.String()), strAttr(AttrHandle, hexStr(k.handle))}
	if o.device != trace.NoDevice {
		attrs = append(attrs, intAttr(AttrDevice, int64(o.device)))
	}
	if o.bytes != 0 {
		attrs = append(attrs, intAttr(AttrBytes, int64(o.bytes)))
	}
	if o.pool != 0 {
		attrs = append(attrs, strAttr(AttrPool, hexStr(o.pool)))
	}
	links := []*tracepb.Span_Link{{TraceId: p.traceID, SpanId: o.create,
		Attributes: []*commonpb.KeyValue{strAttr(AttrLinkRole, "create")}}}
	if destroy != nil {
		links = append(links, &tracepb.Span_Link{TraceId: p.traceID, SpanId: destroy,
			Attributes: []*commonpb.KeyValue{strAttr(AttrLinkRole, "destroy")}})
		attrs = append(attrs, strAttr(AttrObjectEnd, "destroyed"))
	} else {
		attrs = append(attrs, strAttr(AttrObjectEnd, "alive"), boolAttr(AttrObjectLeaked, true))
	}
	return &tracepb.Span{TraceId: p.traceID, SpanId: o.id, ParentSpanId: p.rootID, Name: o.kind.String(),
		Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: s.unixNano(o.start),
		EndTimeUnixNano: s.unixNano(end), Attributes: attrs, Links: links}
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
	for pid, p := range s.procs {
		for k, o := range p.objects {
			s.add(pid, p, s.lifetime(p, k, o, p.last, nil))
		}
		for tid, st := range p.stacks {
			for i := len(st) - 1; i >= 0; i-- {
				parent := p.rootID
				if i > 0 {
					parent = st[i-1].id
				}
				s.add(pid, p, s.rangeSpan(p, st[i], p.last, parent, tid, "push"))
			}
		}
		for _, r := range p.started {
			s.add(pid, p, s.rangeSpan(p, r, p.last, p.rootID, 0, "start"))
		}
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
