package collectortest

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/cuprof/cuprof/exporters/otlp"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// collector starts a real OpenTelemetry Collector OTLP receiver on loopback
// gRPC and HTTP ports, delivering into a sink.
func collector(t testing.TB) (grpcURL, httpURL string, sink *consumertest.TracesSink) {
	t.Helper()
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	g, h := freeAddr(t), freeAddr(t)
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = g
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = h
	sink = new(consumertest.TracesSink)
	r, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Shutdown(context.Background()) })
	return "http://" + g, "http://" + h, sink
}

func fixture(t testing.TB) *trace.Trace {
	tr, err := trace.ReadFile("../testdata/small.txt")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type got struct {
	span     ptrace.Span
	resource pcommon.Map
}

func received(t *testing.T, sink *consumertest.TracesSink) map[string]got {
	t.Helper()
	out := map[string]got{}
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				if ss.Scope().Name() != otlp.ScopeName {
					t.Errorf("scope %q", ss.Scope().Name())
				}
				for k := 0; k < ss.Spans().Len(); k++ {
					s := ss.Spans().At(k)
					id := s.SpanID().String()
					if _, dup := out[id]; dup {
						t.Errorf("span %s %s arrived twice", s.Name(), id)
					}
					out[id] = got{s, rs.Resource().Attributes()}
				}
			}
		}
	}
	return out
}

func rawAttrs(kvs []*commonpb.KeyValue) map[string]any {
	m := pcommon.NewMap()
	for _, kv := range kvs {
		switch v := kv.Value.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m.PutStr(kv.Key, v.StringValue)
		case *commonpb.AnyValue_IntValue:
			m.PutInt(kv.Key, v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m.PutBool(kv.Key, v.BoolValue)
		case *commonpb.AnyValue_ArrayValue:
			s := m.PutEmptySlice(kv.Key)
			for _, e := range v.ArrayValue.Values {
				s.AppendEmpty().SetStr(e.GetStringValue())
			}
		}
	}
	return m.AsRaw()
}

// check compares what the collector received with what was built: every
// span exactly once, same name, times, parent, links, attributes, resource.
func check(t *testing.T, want []*tracepb.ResourceSpans, rec map[string]got) {
	t.Helper()
	n := 0
	for _, rs := range want {
		wantRes := fmt.Sprint(rawAttrs(rs.Resource.Attributes))
		for _, ss := range rs.ScopeSpans {
			for _, w := range ss.Spans {
				n++
				g, ok := rec[hex.EncodeToString(w.SpanId)]
				if !ok {
					t.Fatalf("span %s %x never arrived", w.Name, w.SpanId)
				}
				s := g.span
				if s.Name() != w.Name || s.TraceID().String() != hex.EncodeToString(w.TraceId) ||
					s.ParentSpanID().String() != hex.EncodeToString(w.ParentSpanId) ||
					uint64(s.StartTimestamp()) != w.StartTimeUnixNano || uint64(s.EndTimestamp()) != w.EndTimeUnixNano {
					t.Errorf("span %s arrived changed", w.Name)
				}
				if fmt.Sprint(s.Attributes().AsRaw()) != fmt.Sprint(rawAttrs(w.Attributes)) {
					t.Errorf("span %s attributes %v, want %v", w.Name, s.Attributes().AsRaw(), rawAttrs(w.Attributes))
				}
				if fmt.Sprint(g.resource.AsRaw()) != wantRes {
					t.Errorf("span %s resource %v", w.Name, g.resource.AsRaw())
				}
				if !s.ParentSpanID().IsEmpty() {
					if p, ok := rec[s.ParentSpanID().String()]; !ok || p.span.TraceID() != s.TraceID() {
						t.Errorf("span %s: parent does not resolve", w.Name)
					}
				}
				if s.Links().Len() != len(w.Links) {
					t.Errorf("span %s: %d links, want %d", w.Name, s.Links().Len(), len(w.Links))
				}
				for i := 0; i < s.Links().Len(); i++ {
					if _, ok := rec[s.Links().At(i).SpanID().String()]; !ok {
						t.Errorf("span %s: link does not resolve", w.Name)
					}
				}
				if (w.Status != nil) != (s.Status().Code() == ptrace.StatusCodeError) {
					t.Errorf("span %s: status %v", w.Name, s.Status().Code())
				}
			}
		}
	}
	if n != len(rec) {
		t.Errorf("collector got %d spans, %d were built", len(rec), n)
	}
}

func TestCollectorReceivesEverySpanOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   *trace.Trace
		opts []otlp.Option
	}{
		{"small", fixture(t), []otlp.Option{otlp.WithBatchBytes(2000)}},
		{"20k-pairs", tracetest.AllocFreePairs(20000), nil}, // 100k spans: several 3 MiB requests
	} {
		for _, p := range []otlp.Protocol{otlp.ProtocolGRPC, otlp.ProtocolHTTP} {
			t.Run(tc.name+"/"+string(p), func(t *testing.T) {
				g, h, sink := collector(t)
				ep := g
				if p == otlp.ProtocolHTTP {
					ep = h
				}
				opts := append([]otlp.Option{otlp.WithEndpoint(ep), otlp.WithProtocol(p),
					otlp.WithTimeout(30 * time.Second)}, tc.opts...)
				st, err := otlp.Export(context.Background(), tc.tr, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if st.Failed != 0 || st.Sent != st.Spans || st.Batches < 2 {
					t.Errorf("stats %+v: want all sent in several requests", st)
				}
				want, err := otlp.Collect(tc.tr, tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				check(t, want, received(t, sink))
			})
		}
	}
}

func TestResourceAttributes(t *testing.T) {
	g, _, sink := collector(t)
	if _, err := otlp.Export(context.Background(), fixture(t), otlp.WithEndpoint(g)); err != nil {
		t.Fatal(err)
	}
	ranks := map[int64]int64{}
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			a := td.ResourceSpans().At(i).Resource().Attributes()
			pid, _ := a.Get("process.pid")
			rank, ok := a.Get("cuda.rank")
			if !ok {
				t.Fatalf("pid %d: no cuda.rank", pid.Int())
			}
			ranks[pid.Int()] = rank.Int()
			if v, _ := a.Get("service.name"); v.Str() != "unknown_service:python3" {
				t.Errorf("service.name %q, want the SDKs' default unknown_service:python3", v.Str())
			}
			for k, want := range map[string]string{"telemetry.sdk.name": "cuprof", "telemetry.sdk.language": "go"} {
				if v, _ := a.Get(k); v.Str() != want {
					t.Errorf("%s %q, want %q", k, v.Str(), want)
				}
			}
			if u := td.ResourceSpans().At(i).SchemaUrl(); u != otlp.SchemaURL {
				t.Errorf("schema URL %q, want %q", u, otlp.SchemaURL)
			}
			if v, _ := a.Get("host.name"); v.Str() != "node1" {
				t.Errorf("host.name %q", v.Str())
			}
			if v, _ := a.Get("cuda.gpu.names"); v.Slice().Len() != 2 || v.Slice().At(0).Str() != "NVIDIA H200" {
				t.Errorf("cuda.gpu.names %v", v.AsRaw())
			}
		}
	}
	if ranks[100] != 0 || ranks[200] != 1 || len(ranks) != 2 {
		t.Errorf("ranks %v", ranks)
	}
}

// BenchmarkExportToCollector measures spans per second from a trace to a real
// collector receiver on loopback (build, encode, gzip, send, decode).
func BenchmarkExportToCollector(b *testing.B) {
	tr := tracetest.AllocFreePairs(50000) // 250k spans
	for _, p := range []otlp.Protocol{otlp.ProtocolGRPC, otlp.ProtocolHTTP} {
		for _, comp := range []string{"gzip", "none"} {
			b.Run(string(p)+"/"+comp, func(b *testing.B) {
				g, h, sink := collector(b)
				ep := g
				if p == otlp.ProtocolHTTP {
					ep = h
				}
				spans := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					st, err := otlp.Export(context.Background(), tr, otlp.WithEndpoint(ep), otlp.WithProtocol(p),
						otlp.WithCompression(comp), otlp.WithTimeout(60*time.Second))
					if err != nil {
						b.Fatal(err)
					}
					spans += st.Sent
					sink.Reset()
				}
				b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
			})
		}
	}
}
