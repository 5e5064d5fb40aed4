package otlp

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// Tail spans: in the aggregates' stream, a span is sent only where it is
// worth its bytes: for each capture range, and for a call far out in its
// API's tail, at a bounded rate. "Far out" is past the 99.9th percentile of
// the API's calls seen so far (once tailMinCalls were seen), read from a
// log-bucketed count per API (tailBuckets buckets of a quarter octave from
// 1 ns: within 19 % of the value). The rate is a token bucket on the trace
// clock: TailRate spans a second, TailRate at once. A call that gets a span
// is recorded into the duration histogram with the span in its context, so
// the SDK keeps it as an exemplar of its bucket (OTEL_METRICS_EXEMPLAR_FILTER,
// trace_based by default): a histogram's slow bucket links to its call.

// TailRate is the default number of tail spans a second.
const TailRate = 20

const (
	tailBuckets  = 160 // quarter octaves: 1 ns to 2^40 ns
	tailMinCalls = 1000
	tailQuantile = 0.999
)

// TailStats counts the tail spans.
type TailStats struct {
	Made, Sent, Failed, Dropped int64
}

type tailConfig struct{ rate float64 }

// WithTailSpans makes the aggregator send tail spans, at most rate a
// second (TailRate when rate <= 0).
func WithTailSpans(rate float64) AggregateOption {
	return aggOption(func(c *aggConfig) {
		if rate <= 0 {
			rate = TailRate
		}
		c.tail = &tailConfig{rate: rate}
	})
}

type apiTail struct {
	counts    [tailBuckets]uint32
	n         uint64
	threshold int64 // ns; 0 until tailMinCalls
	next      uint64
}

type tailSampler struct {
	cfg      *tailConfig
	provider *sdktrace.TracerProvider
	tracer   oteltrace.Tracer
	exp      *countingSpans
	apis     map[trace.API]*apiTail
	tokens   float64
	last     int64 // trace clock of the last refill
	made     atomic.Int64
	ctx      context.Context
}

func newTailSampler(ctx context.Context, c *config, res *resource.Resource, tc *tailConfig) (*tailSampler, error) {
	se, err := newSpanExporter(ctx, c)
	if err != nil {
		return nil, err
	}
	cs := &countingSpans{SpanExporter: se}
	p := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(cs, sdktrace.WithMaxQueueSize(2048)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return &tailSampler{cfg: tc, provider: p, exp: cs, apis: map[trace.API]*apiTail{}, tokens: tc.rate,
		tracer: p.Tracer(ScopeName, oteltrace.WithSchemaURL(SchemaURL)), ctx: context.Background()}, nil
}

// newSpanExporter is the SDK's OTLP span exporter for c.
func newSpanExporter(ctx context.Context, c *config) (sdktrace.SpanExporter, error) {
	p, err := c.signalProtocol("TRACES")
	if err != nil {
		return nil, err
	}
	var ep *url.URL
	if c.endpoint != "" {
		if ep, err = endpointURL(c.endpoint); err != nil {
			return nil, err
		}
	}
	if p == ProtocolGRPC {
		var o []otlptracegrpc.Option
		if ep != nil {
			o = append(o, otlptracegrpc.WithEndpointURL(ep.String()))
		}
		if c.retryFor > 0 {
			o = append(o, otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true,
				InitialInterval: retryInitial, MaxInterval: retryMax, MaxElapsedTime: c.retryFor}))
		}
		return otlptracegrpc.New(ctx, o...)
	}
	var o []otlptracehttp.Option
	if ep != nil {
		u := *ep
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		o = append(o, otlptracehttp.WithEndpointURL(u.String()))
	}
	if c.retryFor > 0 {
		o = append(o, otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true,
			InitialInterval: retryInitial, MaxInterval: retryMax, MaxElapsedTime: c.retryFor}))
	}
	return otlptracehttp.New(ctx, o...)
}

// tailBucket is the quarter-octave bucket of ns.
func tailBucket(ns int64) int {
	if ns <= 1 {
		return 0
	}
	b := int(4 * math.Log2(float64(ns)))
	return min(b, tailBuckets-1)
}

// bucketUpper is the upper bound of bucket b in ns.
func bucketUpper(b int) int64 { return int64(math.Ceil(math.Exp2(float64(b+1) / 4))) }

func (t *apiTail) add(ns int64) {
	t.counts[tailBucket(ns)]++
	t.n++
	if t.n >= tailMinCalls && t.n >= t.next {
		// the bucket holding the quantile: its upper bound is the threshold
		rank := uint64(math.Ceil(tailQuantile * float64(t.n)))
		var seen uint64
		for b, c := range t.counts {
			seen += uint64(c)
			if seen >= rank {
				t.threshold = bucketUpper(b)
				break
			}
		}
		t.next = t.n + t.n/8 + 1 // recomputed as the count grows by an eighth
	}
}

// wall converts a trace clock time to a wall time.
func wall(m *trace.Meta, t int64) time.Time {
	return time.Unix(0, m.WallStart+(t-m.MonoStart))
}

// call returns the context to record the call's duration in: with a span
// of it when it is far out in its API's tail and the rate allows one.
func (s *tailSampler) call(ev *analysis.Event, tables *trace.Trace) context.Context {
	t := s.apis[ev.API]
	if t == nil {
		t = &apiTail{}
		s.apis[ev.API] = t
	}
	far := t.threshold > 0 && ev.Duration > t.threshold
	t.add(ev.Duration)
	if !far || !s.take(ev.End) {
		return s.ctx
	}
	attrs := []attribute.KeyValue{attribute.String(AttrAPI, ev.API.String()), attribute.Int(AttrDevice, int(ev.Device)),
		attribute.Int64(AttrThreadID, int64(ev.TID)), attribute.Int64(AttrPID, int64(ev.PID)),
		attribute.String(AttrResult, ev.Result.String()), attribute.Int64(AttrTailThreshold, t.threshold)}
	ctx, sp := s.tracer.Start(s.ctx, ev.API.String(), oteltrace.WithTimestamp(wall(&tables.Meta, ev.Start)),
		oteltrace.WithAttributes(attrs...), oteltrace.WithSpanKind(oteltrace.SpanKindInternal))
	sp.End(oteltrace.WithTimestamp(wall(&tables.Meta, ev.End)))
	s.made.Add(1)
	return ctx
}

// take spends a token if the bucket, refilled up to now (trace clock), has one.
func (s *tailSampler) take(now int64) bool {
	if now > s.last {
		if s.last != 0 {
			s.tokens = math.Min(s.cfg.rate, s.tokens+s.cfg.rate*float64(now-s.last)/1e9)
		}
		s.last = now
	}
	if s.tokens < 1 {
		return false
	}
	s.tokens--
	return true
}

// rangeEnd sends no span for user ranges (they are in the profile); the
// capture ranges come as events (capture).
func (s *tailSampler) rangeEnd(*analysis.Range, *trace.Trace) {}

// capture sends the span of one capture range.
func (s *tailSampler) capture(e *analysis.Event, tables *trace.Trace) {
	_, sp := s.tracer.Start(s.ctx, "capture "+tables.String(e.Name), oteltrace.WithTimestamp(wall(&tables.Meta, e.Start)),
		oteltrace.WithAttributes(attribute.Int64(AttrPID, int64(e.PID))))
	sp.End(oteltrace.WithTimestamp(wall(&tables.Meta, e.End)))
	s.made.Add(1)
}

func (s *tailSampler) stats() TailStats {
	st := TailStats{Made: s.made.Load(), Sent: s.exp.sent.Load(), Failed: s.exp.failed.Load()}
	st.Dropped = max(st.Made-st.Sent-st.Failed, 0)
	return st
}

// lost is what the tail spans lost so far, failed or dropped.
func (s *tailSampler) lost() int64 {
	st := s.stats()
	return st.Failed // the dropped are known only at the end
}

func (s *tailSampler) close(ctx context.Context) error {
	if err := s.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlp: tail spans: %w", err)
	}
	return nil
}

// countingSpans counts what the SDK's span exporter sent and failed.
type countingSpans struct {
	sdktrace.SpanExporter
	sent, failed atomic.Int64
}

func (c *countingSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.failed.Add(int64(len(spans)))
	} else {
		c.sent.Add(int64(len(spans)))
	}
	return err
}
