package otlp

import (
	"context"
	"math"
	"sort"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// feed hands t's events to a, one process at a time in chunks, as the
// recorder's drain does.
func feed(a *Aggregator, t *trace.Trace, chunk int) {
	a.ObserveCode(t.Code, t.Strings)
	byPID := map[uint32][]trace.Event{}
	var pids []uint32
	for _, e := range t.Events {
		if _, ok := byPID[e.PID]; !ok {
			pids = append(pids, e.PID)
		}
		byPID[e.PID] = append(byPID[e.PID], e)
	}
	for _, pid := range pids {
		evs := byPID[pid]
		for i := 0; i < len(evs); i += chunk {
			a.Observe(pid, evs[i:min(i+chunk, len(evs))], t.Strings)
		}
	}
}

func manualAggregator(t *testing.T, meta trace.Meta, aopts ...AggregateOption) (*Aggregator, *sdkmetric.ManualReader) {
	t.Helper()
	r := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality {
		return metricdata.DeltaTemporality
	}))
	aopts = append(aopts, withReader(r), aggOption(func(c *aggConfig) { c.res = resource.Empty() }))
	a, err := NewAggregator(context.Background(), meta, nil, aopts...)
	if err != nil {
		t.Fatal(err)
	}
	return a, r
}

type apiDev struct {
	api string
	dev int64
	err string
}

// histograms returns the call duration histograms collected, by API,
// device and error type.
func histograms(t *testing.T, r *sdkmetric.ManualReader) map[apiDev]metricdata.ExponentialHistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[apiDev]metricdata.ExponentialHistogramDataPoint[float64]{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != MetricCallDuration {
				continue
			}
			if m.Unit != "s" {
				t.Errorf("unit %q", m.Unit)
			}
			h := m.Data.(metricdata.ExponentialHistogram[float64])
			if h.Temporality != metricdata.DeltaTemporality {
				t.Errorf("temporality %v", h.Temporality)
			}
			for _, dp := range h.DataPoints {
				var k apiDev
				api, _ := dp.Attributes.Value(attribute.Key(AttrAPI))
				dev, _ := dp.Attributes.Value(attribute.Key(AttrDevice))
				e, _ := dp.Attributes.Value(attribute.Key(AttrErrorType))
				k.api, k.dev, k.err = api.AsString(), dev.AsInt64(), e.AsString()
				out[k] = dp
			}
		}
	}
	return out
}

// quantileOf reads the nearest-rank quantile q of a histogram at its
// bucket's geometric middle.
func quantileOf(dp metricdata.ExponentialHistogramDataPoint[float64], q float64) float64 {
	rank := uint64(math.Ceil(q * float64(dp.Count)))
	if rank == 0 {
		rank = 1
	}
	if rank <= dp.ZeroCount {
		return 0
	}
	seen := dp.ZeroCount
	base := math.Pow(2, math.Pow(2, -float64(dp.Scale)))
	for i, c := range dp.PositiveBucket.Counts {
		seen += c
		if seen >= rank {
			lo := math.Pow(base, float64(dp.PositiveBucket.Offset)+float64(i))
			return lo * math.Sqrt(base)
		}
	}
	return math.NaN()
}

// TestAggregatorMatchesAnalysis: per API and device, the histograms count
// every call the analysis counts (outside capture ranges left out, as the
// report leaves them), errors apart, and their medians and p99s are within
// RelativeError of the calls' own (nearest rank).
func TestAggregatorMatchesAnalysis(t *testing.T) {
	tr := tracetest.Random(7, 20000)
	a, r := manualAggregator(t, tr.Meta)
	feed(a, tr, 333)
	got := histograms(t, r)

	want := map[apiDev][]float64{}
	analysis.Run(tr, analysis.Events(tr), analysis.Raw(), analysis.OnEvent(func(ev *analysis.Event) {
		if ev.Kind != trace.KindCall || ev.Outside {
			return
		}
		k := apiDev{api: ev.API.String(), dev: int64(ev.Device)}
		if ev.Error {
			k.err = ev.Result.String()
		}
		want[k] = append(want[k], float64(ev.Duration)/1e9)
	}))
	if len(want) < 5 {
		t.Fatalf("fixture has %d API/device keys", len(want))
	}
	for k, ds := range want {
		dp, ok := got[k]
		if !ok {
			t.Errorf("%v: no histogram", k)
			continue
		}
		if dp.Count != uint64(len(ds)) {
			t.Errorf("%v: count %d, want %d", k, dp.Count, len(ds))
		}
		sort.Float64s(ds)
		for _, q := range []float64{0.5, 0.99} {
			exact := ds[max(int(math.Ceil(q*float64(len(ds))))-1, 0)]
			est := quantileOf(dp, q)
			if exact == 0 {
				if est != 0 {
					t.Errorf("%v p%v: %g, want 0", k, q*100, est)
				}
				continue
			}
			if rel := math.Abs(est-exact) / exact; rel > RelativeError(dp.Scale) {
				t.Errorf("%v p%v: %g against %g: %.4f > %.4f (scale %d)", k, q*100, est, exact, rel, RelativeError(dp.Scale), dp.Scale)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d histograms, want %d", len(got), len(want))
	}
	// Delta: what was collected is not sent again.
	if again := histograms(t, r); len(again) != 0 {
		t.Errorf("a second collection has %d histograms", len(again))
	}
	st, err := a.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != int64(len(tr.Events)) {
		t.Errorf("events %d, want %d", st.Events, len(tr.Events))
	}
}
