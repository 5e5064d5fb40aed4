package otlp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// Protocol is the OTLP transport.
type Protocol string

const (
	ProtocolGRPC Protocol = "grpc"
	ProtocolHTTP Protocol = "http/protobuf"
)

// ParseProtocol accepts grpc, http and http/protobuf.
func ParseProtocol(s string) (Protocol, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "grpc":
		return ProtocolGRPC, true
	case "http", "http/protobuf":
		return ProtocolHTTP, true
	}
	return "", false
}

type config struct {
	// building
	identity   string
	batchBytes int
	version    string
	// sending
	endpoint    string // explicit endpoint; "" means the environment's or the default
	protocol    Protocol
	timeout     time.Duration // per request
	retryFor    time.Duration // total time one batch may be retried
	compression string        // "gzip" or "none"; "" means the environment's, else none
	headers     map[string]string
	parallel    int // requests in flight at once
	// inline encodes spans on the replay's goroutine, without the pipe
	// (withInlineEncoding: the memory test of what the builder holds)
	inline bool
	// streaming
	queueBatches int
	flushEvery   time.Duration
}

// Option configures Build, Export, NewClient and NewStreamer.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithIdentity sets the string span and trace IDs are derived from (default:
// Identity of the trace).
func WithIdentity(id string) Option { return optionFunc(func(c *config) { c.identity = id }) }

// WithBatchBytes sets the encoded size at which batches are cut (default
// DefaultBatchBytes).
func WithBatchBytes(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.batchBytes = n
		}
	})
}

// WithVersion sets the instrumentation scope version (cuprof's version).
func WithVersion(v string) Option { return optionFunc(func(c *config) { c.version = v }) }

// WithEndpoint sets the collector endpoint: a URL (http://host:4318,
// https://host:4317) or host:port, which is taken as plain-text http://. It
// overrides OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
func WithEndpoint(ep string) Option { return optionFunc(func(c *config) { c.endpoint = ep }) }

// WithProtocol sets the transport; it overrides OTEL_EXPORTER_OTLP_PROTOCOL
// and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (default grpc).
func WithProtocol(p Protocol) Option { return optionFunc(func(c *config) { c.protocol = p }) }

// WithTimeout bounds each request (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10s).
func WithTimeout(d time.Duration) Option { return optionFunc(func(c *config) { c.timeout = d }) }

// WithRetryFor bounds the time one batch is retried for after failures the
// collector calls transient (default 15s; 0 disables retries).
func WithRetryFor(d time.Duration) Option { return optionFunc(func(c *config) { c.retryFor = d }) }

// WithCompression sets "gzip" or "none" (default: OTEL_EXPORTER_OTLP_TRACES_COMPRESSION
// or OTEL_EXPORTER_OTLP_COMPRESSION, else none, as in the OpenTelemetry SDKs).
func WithCompression(s string) Option { return optionFunc(func(c *config) { c.compression = s }) }

// WithHeaders adds request headers to those of OTEL_EXPORTER_OTLP_HEADERS and
// OTEL_EXPORTER_OTLP_TRACES_HEADERS (a key in both takes the option's value).
func WithHeaders(h map[string]string) Option {
	return optionFunc(func(c *config) { c.headers = h })
}

// WithParallel sets how many requests Export keeps in flight (default 4).
func WithParallel(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.parallel = n
		}
	})
}

// WithQueue sets how many batches a Streamer holds before it drops (default 16).
func WithQueue(batches int) Option {
	return optionFunc(func(c *config) {
		if batches > 0 {
			c.queueBatches = batches
		}
	})
}

// WithFlushInterval sets how long a Streamer holds a partial batch (default 1s).
func WithFlushInterval(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.flushEvery = d
		}
	})
}

func newConfig(opts []Option) *config {
	c := &config{batchBytes: DefaultBatchBytes, retryFor: 15 * time.Second, queueBatches: 16,
		flushEvery: time.Second, timeout: -1, parallel: 4}
	for _, o := range opts {
		o.apply(c)
	}
	return c
}

// env returns the first set variable among names.
func env(names ...string) string {
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// resolvedProtocol is the protocol from the option, else the environment,
// else grpc.
func (c *config) resolvedProtocol() (Protocol, error) {
	if c.protocol != "" {
		return c.protocol, nil
	}
	v := env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	if v == "" {
		return ProtocolGRPC, nil
	}
	p, ok := ParseProtocol(v)
	if !ok {
		return "", &configError{"unsupported OTLP protocol " + v + " in the environment; use grpc or http/protobuf"}
	}
	return p, nil
}

// displayEndpoint says where requests go, for messages.
func (c *config) displayEndpoint(p Protocol) string {
	if c.endpoint != "" {
		return c.endpoint
	}
	if v := env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		return v
	}
	if v := env("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		if p == ProtocolHTTP {
			return strings.TrimRight(v, "/") + "/v1/traces"
		}
		return v
	}
	if p == ProtocolHTTP {
		return "https://localhost:4318/v1/traces" // the sender's default, as the SDK client's (http.go)
	}
	return "localhost:4317"
}

type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// SchemaURL is the OpenTelemetry semantic conventions version whose
// names cuprof's resource and span attributes follow (the one the Go SDK's
// resource package uses), set on every ResourceSpans and ScopeSpans.
const SchemaURL = semconv.SchemaURL

// ErrSDKDisabled is returned by NewClient and NewStreamer when
// OTEL_SDK_DISABLED is true, as the OpenTelemetry SDKs then send nothing.
var ErrSDKDisabled = errors.New("OTEL_SDK_DISABLED is true: no OTLP spans are sent (unset it to send them)")

// SDKDisabled reads OTEL_SDK_DISABLED as the SDKs do: only "true", in any
// case, disables.
func SDKDisabled() bool {
	return strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true")
}

// UnknownService is the service.name of a process whose OTEL_SERVICE_NAME
// (or service.name in OTEL_RESOURCE_ATTRIBUTES) is not set, as the SDKs name
// it: unknown_service: and the executable's name.
func UnknownService(exe string) string {
	return "unknown_service:" + exe
}

// newResource is the resource of one traced process: cuprof's attributes,
// those of the environment over them (OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME, read by the SDK's resource.WithFromEnv: a key cuprof
// sets too takes the environment's value), and telemetry.sdk.* naming
// cuprof as the SDK that made the spans. A malformed pair in the
// environment is skipped, as the SDKs skip it.
func newResource(attrs []*commonpb.KeyValue, version string) *resourcepb.Resource {
	if version == "" {
		version = "unknown"
	}
	attrs = append(attrs,
		strAttr(string(semconv.TelemetrySDKNameKey), "cuprof"),
		strAttr(string(semconv.TelemetrySDKLanguageKey), semconv.TelemetrySDKLanguageGo.Value.AsString()),
		strAttr(string(semconv.TelemetrySDKVersionKey), version))
	env, _ := resource.New(context.Background(), resource.WithFromEnv()) // partial on a bad pair
	if env == nil || env.Len() == 0 {
		return &resourcepb.Resource{Attributes: attrs}
	}
	at := make(map[string]int, len(attrs))
	for i, kv := range attrs {
		at[kv.Key] = i
	}
	for _, kv := range env.Attributes() {
		pb := strAttr(string(kv.Key), kv.Value.String())
		if i, ok := at[pb.Key]; ok {
			attrs[i] = pb
			continue
		}
		at[pb.Key] = len(attrs)
		attrs = append(attrs, pb)
	}
	return &resourcepb.Resource{Attributes: attrs}
}

// parsePairs reads OTEL_EXPORTER_OTLP_HEADERS: key=value pairs,
// comma-separated, blanks around them ignored, values percent-encoded. A
// malformed pair is skipped (the SDKs skip it too); later pairs win. The
// SDK's own parser of this variable is internal to its exporter packages,
// which read the variable themselves unless WithHeaders is given; this one
// exists only to merge export --header into it (see newClient).
func parsePairs(s string) (keys, values []string) {
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			continue
		}
		keys, values = append(keys, k), append(values, dv)
	}
	return keys, values
}

// checkHeaders checks the values of the request headers of the environment
// (OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS) and of
// opts: a value with a control character (a percent-encoded %0A, say)
// cannot be sent, over HTTP or gRPC, and used to fail every request as if
// the collector could not be reached. It names the variable and the key.
func checkHeaders(opts map[string]string) error {
	check := func(from, k, v string) error {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
				return fmt.Errorf("%s: the value of header %q holds the control character %#02x, which no request can carry; fix it (values are percent-decoded)", from, k, c)
			}
		}
		return nil
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		keys, values := parsePairs(os.Getenv(name))
		for i, k := range keys {
			if err := check(name, k, values[i]); err != nil {
				return err
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if err := check("header", k, opts[k]); err != nil {
			return err
		}
	}
	return nil
}

// requestHeaders returns the environment's headers (envHeaders) with
// WithHeaders' on top: a WithHeaders option replaces the SDK's headers from
// the environment, so both are merged here for every exporter.
func (c *config) requestHeaders() map[string]string {
	h := envHeaders()
	for k, v := range c.headers {
		h[k] = v
	}
	return h
}

// envHeaders parses OTEL_EXPORTER_OTLP_HEADERS and then
// OTEL_EXPORTER_OTLP_TRACES_HEADERS (the traces variable wins per key).
func envHeaders() map[string]string {
	h := map[string]string{}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		keys, values := parsePairs(os.Getenv(name))
		for i, k := range keys {
			h[k] = values[i]
		}
	}
	return h
}
