package otlp

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// (package analysis) into the span builder Export uses, so devices,
// lifetimes, nesting, the error rule and the spans' form are the same.
// Streamed spans still differ from an Export of the trace file: the
// recorder hands over each thread's events in the order they were written,
// and a range or frame is written at its end, after the calls inside it, so
// only the calls that arrive in the same Observe as their enclosing span or
// frame are parented by it (events of one Observe are put in trace order
// first); the resource and process span know the recording's command, not
// each process's; IDs are derived from the recording's start, not the
// file. Memory is bounded by the queue (WithQueue batches of
// WithBatchBytes) plus one entry per live object, open range and frame,
// named object and string of the recording (the tracker forgets what
// ended: analysis.Forget).
type Streamer struct {
	cfg    *config
	client *Client

	mu      sync.Mutex
	b       *builder
	tk      *analysis.Tracker
	tables  *trace.Trace // the builder's and the tracker's: Meta, and the recording's strings, code and processes so far
	scratch []trace.Event
	stats   StreamStats // Dropped; the builder counts spans, the sender the rest
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

// NewStreamer returns a started streamer for a recording with the given
// metadata (its Meta.WallStart and MonoStart map trace clock time to Unix
// time).
func NewStreamer(ctx context.Context, meta trace.Meta, opts ...Option) (*Streamer, error) {
	c := newConfig(append([]Option{WithBatchBytes(1 << 20), WithQueue(8)}, opts...))
	cl, err := newClient(ctx, c)
	if err != nil {
		return nil, err
	}
	if c.identity == "" {
		c.identity = meta.Host + "|" + strconv.FormatInt(time.Now().UnixNano(), 10) + "|" + strings.Join(meta.Command, " ")
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Streamer{cfg: c, client: cl, tables: &trace.Trace{Meta: meta},
		queue: make(chan Batch, c.queueBatches), done: make(chan struct{}), stop: cancel, ctx: sctx}
	s.b = newBuilder(s.tables, c, s.enqueue)
	s.tk = analysis.NewTracker(s.tables, s.b.options()...)
	go s.send()
	go s.flushEvery()
	return s, nil
}

// Endpoint says where the streamer sends spans.
func (s *Streamer) Endpoint() string { return s.client.Endpoint() }

func (s *Streamer) send() {
	defer close(s.done)
	for b := range s.queue {
		err := s.client.upload(s.ctx, b)
		b.release()
		if err != nil {
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
				s.b.flush()
			}
			s.mu.Unlock()
		}
	}
}

// enqueue hands a batch to the sender, or drops it when the queue is full
// (while closing: when closeCtx ends first). It is the builder's emit,
// called with s.mu held, and never fails.
func (s *Streamer) enqueue(b Batch) error {
	if s.closing {
		select {
		case s.queue <- b:
		case <-s.closeCtx.Done():
			s.stats.Dropped += b.Spans
			b.release()
		}
		return nil
	}
	select {
	case s.queue <- b:
	default:
		s.stats.Dropped += b.Spans
		b.release()
	}
	return nil
}

// strings takes the strings of strs the streamer does not have yet: the
// recording's table only grows.
func (s *Streamer) strings(strs []string) {
	if n := len(s.tables.Strings); len(strs) > n {
		s.tables.Strings = append(s.tables.Strings, strs[n:]...)
	}
}

// ObserveCode gives the streamer the recording's code table (trace.Code,
// append-only like the strings; its names index strs) so that Python frames
// are named; a frame whose code is not known when it ends is named
// "python". It implements the recorder's code observer: it copies the
// entries and strings it has not seen and keeps neither code nor strs.
func (s *Streamer) ObserveCode(code []trace.Code, strs []string) {
	s.mu.Lock()
	s.strings(strs)
	if n := len(s.tables.Code); len(code) > n {
		s.tables.Code = append(s.tables.Code, code[n:]...)
	}
	s.mu.Unlock()
}

// Observe turns events of one process into spans. It implements the
// recorder's observer: it never blocks on the network and keeps neither
// events nor strs (it copies the strings it has not seen). The events are
// put in trace order and replayed through the streamer's analysis tracker.
func (s *Streamer) Observe(pid uint32, events []trace.Event, strs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.strings(strs)
	if s.tables.Process(pid) == nil {
		// what the recording knows of each process: the command it ran
		s.tables.Processes = append(s.tables.Processes, trace.Process{PID: pid, Cmdline: s.tables.Meta.Command, ExitCode: -1})
	}
	s.scratch = append(s.scratch[:0], events...)
	trace.SortEvents(s.scratch)
	for i := range s.scratch {
		e := &s.scratch[i]
		e.PID = pid
		s.tk.Step(e)
	}
	if cap(s.scratch) > 1<<16 {
		s.scratch = nil
	}
}

func (s *Streamer) counts() StreamStats {
	s.mu.Lock()
	st := s.stats
	st.Spans = s.b.total
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
	s.b.processSpans()
	s.b.flush()
	s.closed = true
	close(s.queue)
	s.mu.Unlock()

	var err error
	select {
	case <-s.done:
	case <-ctx.Done():
		s.stop() // abandon uploads in flight
		<-s.done
		err = &unreachableError{msg: "OTLP collector at " + s.client.Endpoint() + " had not taken the last spans when cuprof stopped waiting (" +
			context.Cause(ctx).Error() + "): it stalled or is too slow; they are in the trace file, run cuprof export later", cause: context.Cause(ctx)}
	}
	s.stop()
	s.client.Close(context.WithoutCancel(ctx))
	st := s.counts()
	if err == nil && st.Failed > 0 {
		err = &unreachableError{msg: "cannot send every span to OTLP collector at " + s.client.Endpoint() +
			": " + strconv.Itoa(st.Failed) + " failed; they are in the trace file, run cuprof export later"}
	}
	return st, err
}
