package otlp

import (
	"context"
	"net/url"
	"os"
	"strings"
	"syscall"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/cuprof/cuprof/analysis"
	_ "github.com/cuprof/cuprof/internal/grpcgzip" // OTEL_EXPORTER_OTLP_COMPRESSION=gzip over gRPC
	"github.com/cuprof/cuprof/internal/hostid"
	"github.com/cuprof/cuprof/trace"
)

// signalProtocol is the protocol of one signal: the option, else
// OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL,
// else grpc.
func (c *config) signalProtocol(signal string) (Protocol, error) {
	if c.protocol != "" {
		return c.protocol, nil
	}
	v := env("OTEL_EXPORTER_OTLP_"+signal+"_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	if v == "" {
		return ProtocolGRPC, nil
	}
	p, ok := ParseProtocol(v)
	if !ok {
		return "", &configError{"unsupported OTLP protocol " + v + " in the environment; use grpc or http/protobuf"}
	}
	return p, nil
}

// deltaUnlessSet is the temporality of the aggregates: delta, the
// mergeable form an agent and gateway pass on as they are, unless
// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE says otherwise (then
// the SDK's exporter applies it).
func deltaUnlessSet() (func(sdkmetric.InstrumentKind) metricdata.Temporality, bool) {
	if env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE") != "" {
		return nil, false
	}
	return func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }, true
}

// newMetricExporter makes the SDK's OTLP metric exporter for c: the SDK
// reads endpoint, headers, timeout, compression, certificates and
// temporality from OTEL_EXPORTER_OTLP_[METRICS_]* itself; an explicit
// endpoint (--otlp=URL), headers and timeout override them.
func newMetricExporter(ctx context.Context, c *config) (*metricExporter, error) {
	p, err := c.signalProtocol("METRICS")
	if err != nil {
		return nil, err
	}
	var ep *url.URL
	if c.endpoint != "" {
		if ep, err = endpointURL(c.endpoint); err != nil {
			return nil, err
		}
	}
	sel, delta := deltaUnlessSet()
	var e sdkmetric.Exporter
	switch p {
	case ProtocolGRPC:
		var o []otlpmetricgrpc.Option
		if ep != nil {
			o = append(o, otlpmetricgrpc.WithEndpointURL(ep.String()))
		}
		if delta {
			o = append(o, otlpmetricgrpc.WithTemporalitySelector(sel))
		}
		if c.timeout >= 0 {
			o = append(o, otlpmetricgrpc.WithTimeout(c.timeout))
		}
		if c.retryFor > 0 {
			o = append(o, otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true,
				InitialInterval: retryInitial, MaxInterval: retryMax, MaxElapsedTime: c.retryFor}))
		}
		if len(c.headers) > 0 {
			o = append(o, otlpmetricgrpc.WithHeaders(c.requestHeaders()))
		}
		if c.compression == "gzip" {
			o = append(o, otlpmetricgrpc.WithCompressor("gzip"))
		}
		e, err = otlpmetricgrpc.New(ctx, o...)
	default:
		var o []otlpmetrichttp.Option
		if ep != nil {
			u := *ep
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/metrics"
			}
			o = append(o, otlpmetrichttp.WithEndpointURL(u.String()))
		}
		if delta {
			o = append(o, otlpmetrichttp.WithTemporalitySelector(sel))
		}
		if c.timeout >= 0 {
			o = append(o, otlpmetrichttp.WithTimeout(c.timeout))
		}
		if c.retryFor > 0 {
			o = append(o, otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true,
				InitialInterval: retryInitial, MaxInterval: retryMax, MaxElapsedTime: c.retryFor}))
		}
		if len(c.headers) > 0 {
			o = append(o, otlpmetrichttp.WithHeaders(c.requestHeaders()))
		}
		if c.compression == "gzip" {
			o = append(o, otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
		}
		e, err = otlpmetrichttp.New(ctx, o...)
	}
	if err != nil {
		return nil, &configError{"cannot make the OTLP metric exporter: " + err.Error()}
	}
	return &metricExporter{Exporter: e, endpoint: metricEndpoint(c, p, ep)}, nil
}

// metricExporter is the SDK's exporter and where it sends.
type metricExporter struct {
	sdkmetric.Exporter
	endpoint string
}

// metricEndpoint says where metrics go, for messages.
func metricEndpoint(c *config, p Protocol, ep *url.URL) string {
	if ep != nil {
		return ep.String()
	}
	if v := env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"); v != "" {
		return v
	}
	if v := env("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		if p == ProtocolHTTP {
			return strings.TrimRight(v, "/") + "/v1/metrics"
		}
		return v
	}
	if p == ProtocolHTTP {
		return "https://localhost:4318/v1/metrics"
	}
	return "localhost:4317"
}

// retryInitial and retryMax are the streamer's backoff (export.go).
const (
	retryInitial = 50_000_000    // 50 ms
	retryMax     = 1_000_000_000 // 1 s
)

// recorderCPUSeconds is the recorder process's user and system CPU time.
func recorderCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// recorderResource is the resource of a recording's aggregates: who ran
// (service.*, process.*), where (host.*, container.id, k8s.* where the
// environment says it is a pod) and its place in the job: the identity
// package analysis decides (IdentityOf) from the launcher's variables as
// the recorder itself has them (the launcher set them for the recorder
// and the program alike) and this host's ids (package hostid, as the
// recorder stamps them on its processes), with the SDK's
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME over them.
func recorderResource(meta trace.Meta, version string) (*resource.Resource, error) {
	if version == "" {
		version = "unknown"
	}
	service := "cuprof"
	if len(meta.Command) > 0 {
		service = baseName(meta.Command[0])
	}
	env := map[string]string{}
	for _, name := range analysis.IdentityVars() {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	proc := trace.Process{PID: uint32(os.Getpid()), Host: meta.Host, Env: env, Cmdline: meta.Command}
	hostid.Self().Stamp(&proc)
	id := analysis.IdentityOf(&trace.Trace{Meta: meta}, &proc)
	kv := []attribute.KeyValue{
		semconv.ServiceName(UnknownService(service)),
		attribute.String(AttrServiceInstance, ServiceInstance(&id)),
		semconv.ProcessPID(os.Getpid()),
		semconv.ProcessCommandLine(strings.Join(meta.Command, " ")),
		semconv.TelemetrySDKName("cuprof"),
		semconv.TelemetrySDKLanguageGo,
		semconv.TelemetrySDKVersion(version),
		attribute.String(AttrProfilerVersion, version),
	}
	for _, a := range [...]struct{ key, v string }{{AttrHostName, id.Host}, {AttrHostID, id.MachineID}, {AttrBootID, id.BootID},
		{AttrContainerID, id.Container}, {AttrJobID, id.Job}, {AttrLauncher, id.Launcher}, {AttrCapture, meta.Capture}} {
		if a.v != "" {
			kv = append(kv, attribute.String(a.key, a.v))
		}
	}
	for _, a := range [...]struct {
		key string
		v   int
	}{{AttrRank, id.Rank}, {AttrLocalRank, id.LocalRank}, {AttrWorldSize, id.WorldSize}, {AttrNodeRank, id.NodeRank}} {
		if a.v >= 0 {
			kv = append(kv, attribute.Int(a.key, a.v))
		}
	}
	kv = append(kv, k8sAttrs(os.LookupEnv)...)
	own := resource.NewWithAttributes(SchemaURL, kv...)
	fromEnv, err := resource.New(context.Background(), resource.WithFromEnv())
	if err != nil && fromEnv == nil {
		return own, nil
	}
	merged, err := resource.Merge(own, fromEnv)
	if err != nil {
		return own, nil
	}
	return merged, nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// k8sAttrs are the pod's names where the environment says the recorder
// runs in Kubernetes (KUBERNETES_SERVICE_HOST, which every pod has): from
// the variables a pod spec sets through the downward API under their
// usual names. A site that sets none puts them in OTEL_RESOURCE_ATTRIBUTES,
// or lets the collector's k8sattributes processor add them.
func k8sAttrs(lookup func(string) (string, bool)) []attribute.KeyValue {
	if _, ok := lookup("KUBERNETES_SERVICE_HOST"); !ok {
		return nil
	}
	var kv []attribute.KeyValue
	for _, a := range []struct {
		key   string
		names []string
	}{
		{AttrK8sPod, []string{"K8S_POD_NAME", "POD_NAME", "HOSTNAME"}},
		{AttrK8sNS, []string{"K8S_NAMESPACE_NAME", "POD_NAMESPACE"}},
		{AttrK8sNode, []string{"K8S_NODE_NAME", "NODE_NAME"}},
	} {
		for _, n := range a.names {
			if v, ok := lookup(n); ok && strings.TrimSpace(v) != "" {
				kv = append(kv, attribute.String(a.key, strings.TrimSpace(v)))
				break
			}
		}
	}
	return kv
}
