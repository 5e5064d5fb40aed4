package otlp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/trace"
)

// Metric names and units of the aggregates (docs/attributes.md, Metrics).
const (
	MetricCallDuration  = "cuda.driver.call.duration"   // histogram, s: host time of each driver call
	MetricFrameSelf     = "cuda.wrapper.frame.duration" // histogram, s: self time of each Python wrapper frame activation
	MetricLint          = "cuda.lint.occurrences"       // counter: calls or objects a lint pattern matched
	MetricRecorderCPU   = "cuprof.recorder.cpu.time"    // counter, s: the recorder's own CPU time
	MetricEvents        = "cuprof.recorder.events"      // counter: events the recorder replayed
	MetricExportDropped = "cuprof.export.dropped"       // counter: calls whose aggregates a failed export lost

	AttrErrorType     = "error.type"             // on call durations: the CUresult name of a failed call
	AttrLintPattern   = "cuda.lint.pattern"      // the pattern a lint occurrence matched
	AttrSignal        = "cuprof.signal"          // what cuprof.export.dropped lost: metrics, spans or profiles
	AttrK8sPod        = "k8s.pod.name"           // from the pod's environment
	AttrK8sNS         = "k8s.namespace.name"     // ditto
	AttrK8sNode       = "k8s.node.name"          // ditto
	AttrFrameName     = AttrCodeFunc             // on frame durations: module.qualname
	AttrFrameKindM    = AttrFrameKind            // on frame durations: python or native
	AttrDeviceM       = AttrDevice               // on call durations: the device ordinal
	AttrAPIM          = AttrAPI                  // on call durations: the API base name
	AttrTailThreshold = "cuda.tail.threshold_ns" // on tail spans: the API's threshold then
	unitSeconds       = "s"
	unitCount         = "{call}"
)

// documentedAggregateKeys are the aggregates' names, for the
// documentation test (docs/attributes.md).
var documentedAggregateKeys = []string{MetricCallDuration, MetricFrameSelf, MetricLint, MetricRecorderCPU, MetricEvents,
	MetricExportDropped, AttrErrorType, AttrLintPattern, AttrSignal, AttrK8sPod, AttrK8sNS, AttrK8sNode, AttrTailThreshold}

// HistogramMaxSize is the buckets per sign of every exponential histogram
// the aggregates send (the SDK's default, 160): with values spanning a
// factor R, the SDK picks the largest scale s with 2^(2^-s) buckets fitting
// log2(R)*2^s <= 160; a quantile read at a bucket's geometric middle is
// within RelativeError(s) of the value (docs/attributes.md).
const HistogramMaxSize = 160

// RelativeError is the largest relative distance from any value in a
// bucket of an exponential histogram of scale s to the bucket's geometric
// middle: sqrt(base)-1 with base = 2^(2^-s).
func RelativeError(scale int32) float64 {
	return math.Pow(2, math.Pow(2, -float64(scale))/2) - 1
}

// AggregateStats counts what an Aggregator did and lost.
type AggregateStats struct {
	Calls, Frames, Events int64 // replayed and recorded into the aggregates
	Exports               int64 // exports the collector accepted
	FailedExports         int64 // exports that failed (after the exporter's retries)
	LostCalls             int64 // calls whose aggregates were in a failed export
	LastError             error // the last export's failure, nil when none failed
	TailSpans             TailStats
	Profiles              ProfileStats
}

// Aggregator replays a recording's events as the recorder drains them,
// through one analysis tracker (package analysis), into OpenTelemetry
// SDK instruments: a delta exponential histogram per driver API, device
// and error type (MetricCallDuration), one per Python wrapper frame
// (MetricFrameSelf), counters of lint patterns and of the recorder's own
// cost. The SDK's periodic reader sends them every interval through an
// OTLP exporter the SDK configures from OTEL_EXPORTER_OTLP_* variables. It
// keeps no event: memory is one aggregate per attribute set (bounded by the
// SDK's cardinality limit) plus the tracker's open objects, ranges and
// frames (analysis.Forget).
//
// Observe never waits for the network: the SDK records into its
// aggregates under their own short locks; an export runs on the reader's
// goroutine, and an export that fails loses that interval's deltas, which
// are counted (AggregateStats.LostCalls) and sent as MetricExportDropped
// with the next export that goes through.
type Aggregator struct {
	mu      sync.Mutex
	tables  *trace.Trace
	tk      *analysis.Tracker
	scratch []trace.Event
	closed  bool

	provider *sdkmetric.MeterProvider
	exp      *countingExporter

	callDur, frameDur metric.Float64Histogram
	lint              metric.Int64Counter
	callAttrs         map[callKey]metric.RecordOption
	frameAttrs        map[trace.CodeID]metric.RecordOption
	lintAttrs         map[string]metric.AddOption
	ctx               context.Context
	lintLive          lint.Live
	tail              *tailSampler
	profile           *profileAgg

	calls, frames, events atomic.Int64
}

type callKey struct {
	api    trace.API
	device int32
	result trace.Result // Success for calls that did not fail
}

// AggregateOption configures NewAggregator.
type AggregateOption interface{ applyAgg(*aggConfig) }

type aggConfig struct {
	interval time.Duration
	reader   sdkmetric.Reader // a test's reader instead of the periodic one
	exporter sdkmetric.Exporter
	tail     *tailConfig
	profiles *profileConfig
	res      *resource.Resource
}

type aggOption func(*aggConfig)

func (f aggOption) applyAgg(c *aggConfig) { f(c) }

// WithInterval sets how often the aggregates are sent (default: the
// SDK's OTEL_METRIC_EXPORT_INTERVAL, else DefaultInterval).
func WithInterval(d time.Duration) AggregateOption {
	return aggOption(func(c *aggConfig) { c.interval = d })
}

// WithMetricExporter sends through e instead of an OTLP exporter made from
// the options and the environment (tests, benchmarks).
func WithMetricExporter(e sdkmetric.Exporter) AggregateOption {
	return aggOption(func(c *aggConfig) { c.exporter = e })
}

// withReader collects with r instead of a periodic reader (tests).
func withReader(r sdkmetric.Reader) AggregateOption {
	return aggOption(func(c *aggConfig) { c.reader = r })
}

// DefaultInterval is how often aggregates are sent when neither
// WithInterval nor OTEL_METRIC_EXPORT_INTERVAL says.
const DefaultInterval = 10 * time.Second

// NewAggregator starts aggregating a recording with the given metadata.
// opts configure the OTLP exporter as for NewStreamer (endpoint,
// protocol, headers, timeout); aopts the aggregates.
func NewAggregator(ctx context.Context, meta trace.Meta, opts []Option, aopts ...AggregateOption) (*Aggregator, error) {
	if SDKDisabled() {
		return nil, ErrSDKDisabled
	}
	quietSDK()
	c := newConfig(opts)
	var ac aggConfig
	for _, o := range aopts {
		o.applyAgg(&ac)
	}
	res := ac.res
	if res == nil {
		var err error
		if res, err = recorderResource(meta, c.version); err != nil {
			return nil, err
		}
	}
	exp, endpoint := ac.exporter, "(the given exporter)"
	if exp == nil && ac.reader == nil {
		me, err := newMetricExporter(ctx, c)
		if err != nil {
			return nil, err
		}
		exp, endpoint = me, me.endpoint
	}
	// Durations as recorded: the capture's cost per call is calibrated
	// only when the recording ends (trace.Meta.Overhead).
	meta.Overhead = trace.Overhead{}
	a := &Aggregator{tables: &trace.Trace{Meta: meta}, ctx: context.Background(),
		callAttrs: map[callKey]metric.RecordOption{}, frameAttrs: map[trace.CodeID]metric.RecordOption{},
		lintAttrs: map[string]metric.AddOption{}}
	reader := ac.reader
	if reader == nil {
		a.exp = &countingExporter{Exporter: exp, endpoint: endpoint}
		var ro []sdkmetric.PeriodicReaderOption
		if ac.interval > 0 {
			ro = append(ro, sdkmetric.WithInterval(ac.interval))
		} else if env("OTEL_METRIC_EXPORT_INTERVAL") == "" {
			ro = append(ro, sdkmetric.WithInterval(DefaultInterval))
		}
		reader = sdkmetric.NewPeriodicReader(a.exp, ro...)
	}
	exphist := sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: HistogramMaxSize, MaxScale: 20}}
	a.provider = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader),
		sdkmetric.WithView(
			sdkmetric.NewView(sdkmetric.Instrument{Name: MetricCallDuration}, exphist),
			sdkmetric.NewView(sdkmetric.Instrument{Name: MetricFrameSelf}, exphist)))
	m := a.provider.Meter(ScopeName, metric.WithInstrumentationVersion(c.version), metric.WithSchemaURL(SchemaURL))
	var errs []error
	var err error
	a.callDur, err = m.Float64Histogram(MetricCallDuration, metric.WithUnit(unitSeconds),
		metric.WithDescription("Host time of CUDA driver API calls, as the wrapped call measured it (the profiler's own cost not taken out)."))
	errs = append(errs, err)
	a.frameDur, err = m.Float64Histogram(MetricFrameSelf, metric.WithUnit(unitSeconds),
		metric.WithDescription("Self time of Python frames that wrap CUDA driver calls: the frame's time less what it calls."))
	errs = append(errs, err)
	a.lint, err = m.Int64Counter(MetricLint, metric.WithUnit("{occurrence}"),
		metric.WithDescription("Calls or objects matching one of cuprof lint's patterns (cuda.lint.pattern)."))
	errs = append(errs, err)
	_, err = m.Float64ObservableCounter(MetricRecorderCPU, metric.WithUnit(unitSeconds),
		metric.WithDescription("CPU time of the cuprof recorder process (its drain, replay and export)."),
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
			o.Observe(recorderCPUSeconds())
			return nil
		}))
	errs = append(errs, err)
	_, err = m.Int64ObservableCounter(MetricEvents, metric.WithUnit("{event}"),
		metric.WithDescription("Events the recorder replayed into these aggregates."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(a.events.Load())
			return nil
		}))
	errs = append(errs, err)
	_, err = m.Int64ObservableCounter(MetricExportDropped, metric.WithUnit("{call}"),
		metric.WithDescription("Driver calls whose aggregates an export that failed lost (they are in the trace file)."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if a.exp != nil {
				o.Observe(a.exp.lostCalls.Load(), metric.WithAttributes(attribute.String(AttrSignal, "metrics")))
			}
			if a.tail != nil {
				o.Observe(a.tail.lost(), metric.WithAttributes(attribute.String(AttrSignal, "spans")))
			}
			return nil
		}))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		a.provider.Shutdown(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("otlp: cannot make the metric instruments: %w", err)
	}
	if ac.tail != nil {
		if a.tail, err = newTailSampler(ctx, c, res, ac.tail); err != nil {
			a.provider.Shutdown(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if ac.profiles != nil {
		a.profile = newProfileAgg(a.tables, ac.profiles, res)
	}
	a.tk = analysis.NewTracker(a.tables, analysis.Raw(), analysis.Forget(), analysis.OnEvent(a.event), analysis.OnFrameEnd(a.frameEnd),
		analysis.OnObjectEnd(a.objectEnd), analysis.OnRangeEnd(a.rangeEnd))
	return a, nil
}

// Endpoint says where the aggregates go, for messages.
func (a *Aggregator) Endpoint() string {
	if a.exp == nil {
		return "(test reader)"
	}
	return a.exp.endpoint
}

func (a *Aggregator) event(ev *analysis.Event) {
	if ev.Kind == trace.KindCapture && a.tail != nil {
		a.tail.capture(ev, a.tables)
	}
	if ev.Kind != trace.KindCall || ev.Outside {
		return
	}
	a.calls.Add(1)
	k := callKey{api: ev.API, device: ev.Device}
	if ev.Error {
		k.result = ev.Result
	}
	opt, ok := a.callAttrs[k]
	if !ok {
		kv := []attribute.KeyValue{attribute.String(AttrAPIM, ev.API.String()), attribute.Int(AttrDeviceM, int(ev.Device))}
		if ev.Error {
			kv = append(kv, attribute.String(AttrErrorType, ev.Result.String()))
		}
		opt = metric.WithAttributeSet(attribute.NewSet(kv...))
		a.callAttrs[k] = opt
	}
	ctx := a.ctx
	if a.tail != nil {
		ctx = a.tail.call(ev, a.tables)
	}
	a.callDur.Record(ctx, float64(ev.Duration)/1e9, opt)
	if p := a.lintLive.Event(ev); p != "" {
		a.lintHit(p)
	}
}

func (a *Aggregator) lintHit(pattern string) {
	opt, ok := a.lintAttrs[pattern]
	if !ok {
		opt = metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrLintPattern, pattern)))
		a.lintAttrs[pattern] = opt
	}
	a.lint.Add(a.ctx, 1, opt)
}

func (a *Aggregator) frameEnd(f *analysis.Frame) {
	if f.Flags&trace.FrameOpen != 0 {
		return
	}
	a.frames.Add(1)
	opt, ok := a.frameAttrs[f.Code]
	if !ok {
		name, kind := "python", "python"
		known := f.Code > 0 && int(f.Code) < len(a.tables.Code)
		if known {
			c := &a.tables.Code[f.Code]
			name = a.tables.String(c.Name)
			if m := a.tables.String(c.Module); m != "" {
				name = m + "." + name
			}
			if c.Kind == trace.CodeNative {
				kind = "native"
			}
		}
		opt = metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrFrameName, name), attribute.String(AttrFrameKindM, kind)))
		if known {
			a.frameAttrs[f.Code] = opt
		}
	}
	self := f.SelfNs
	if self < 0 {
		self = 0
	}
	a.frameDur.Record(a.ctx, float64(self)/1e9, opt)
}

func (a *Aggregator) objectEnd(o *analysis.Object) {
	if p := a.lintLive.ObjectEnd(o); p != "" {
		a.lintHit(p)
	}
}

func (a *Aggregator) rangeEnd(r *analysis.Range) {
	if a.tail != nil {
		a.tail.rangeEnd(r, a.tables)
	}
}

// strings takes the strings of strs the aggregator does not have yet.
func (a *Aggregator) strings(strs []string) {
	if n := len(a.tables.Strings); len(strs) > n {
		a.tables.Strings = append(a.tables.Strings, strs[n:]...)
	}
}

// ObserveCode implements the recorder's code observer (as Streamer's).
func (a *Aggregator) ObserveCode(code []trace.Code, strs []string) {
	a.mu.Lock()
	a.strings(strs)
	if n := len(a.tables.Code); len(code) > n {
		a.tables.Code = append(a.tables.Code, code[n:]...)
	}
	a.mu.Unlock()
}

// Observe replays events of one process into the aggregates. It implements
// the recorder's observer: it never waits on the network and keeps
// neither events nor strs.
func (a *Aggregator) Observe(pid uint32, events []trace.Event, strs []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.strings(strs)
	if a.tables.Process(pid) == nil {
		a.tables.Processes = append(a.tables.Processes, trace.Process{PID: pid, Cmdline: a.tables.Meta.Command, ExitCode: -1})
	}
	a.scratch = append(a.scratch[:0], events...)
	trace.SortEvents(a.scratch)
	for i := range a.scratch {
		e := &a.scratch[i]
		e.PID = pid
		a.tk.Step(e)
		if a.profile != nil {
			a.profile.tk.Step(e)
		}
	}
	a.events.Add(int64(len(a.scratch)))
	if cap(a.scratch) > 1<<16 {
		a.scratch = nil
	}
}

// Stats returns the counts so far.
func (a *Aggregator) Stats() AggregateStats {
	st := AggregateStats{Calls: a.calls.Load(), Frames: a.frames.Load(), Events: a.events.Load()}
	if a.exp != nil {
		st.Exports, st.FailedExports, st.LostCalls = a.exp.ok.Load(), a.exp.failed.Load(), a.exp.lostCalls.Load()
		if e := a.exp.lastErr.Load(); e != nil {
			st.LastError = *e
		}
	}
	if a.tail != nil {
		st.TailSpans = a.tail.stats()
	}
	if a.profile != nil {
		st.Profiles = a.profile.stats()
	}
	return st
}

// Close ends the replay (objects alive and frames open are closed as the
// analysis closes them), sends the last interval's aggregates, the tail
// spans and the profile, waiting until ctx is done at most, and returns
// the counts. The error says what could not be sent.
func (a *Aggregator) Close(ctx context.Context) (AggregateStats, error) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return a.Stats(), nil
	}
	a.tk.Finish()
	a.closed = true
	a.mu.Unlock()
	var errs []error
	if a.profile != nil {
		errs = append(errs, a.profile.send(ctx))
	}
	if a.tail != nil {
		errs = append(errs, a.tail.close(ctx))
	}
	// The last export includes the dropped counts known by then.
	if err := a.provider.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("otlp: last export of the aggregates to %s: %w", a.Endpoint(), err))
	}
	st := a.Stats()
	return st, errors.Join(errs...)
}

// sdkErrors counts the errors the OpenTelemetry SDK reported through its
// global handler (an export that failed, a span queue that was full), and
// keeps the last: the recorder reports what was lost at the end, where the
// SDK's default handler would print each on the traced program's terminal.
var sdkErrors struct {
	once sync.Once
	mu   sync.Mutex
	n    int
	last error
}

func quietSDK() {
	sdkErrors.once.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			sdkErrors.mu.Lock()
			sdkErrors.n++
			sdkErrors.last = err
			sdkErrors.mu.Unlock()
		}))
	})
}

// countingExporter counts what the SDK's exporter sent and lost.
type countingExporter struct {
	sdkmetric.Exporter
	endpoint string

	ok, failed, lostCalls atomic.Int64
	lastErr               atomic.Pointer[error]
}

func (e *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	if err != nil {
		e.failed.Add(1)
		e.lostCalls.Add(callsIn(rm))
		e.lastErr.Store(&err)
		return err
	}
	e.ok.Add(1)
	return nil
}

// callsIn sums the counts of the call duration histograms in rm.
func callsIn(rm *metricdata.ResourceMetrics) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != MetricCallDuration {
				continue
			}
			if h, ok := m.Data.(metricdata.ExponentialHistogram[float64]); ok {
				for _, dp := range h.DataPoints {
					n += int64(dp.Count)
				}
			}
		}
	}
	return n
}
