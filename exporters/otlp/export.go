package otlp

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// ErrUnreachable is wrapped by errors about a collector that could not be
// reached, refused the connection or did not answer in time.
var ErrUnreachable = errors.New("collector unreachable")

// Stats counts what an export did.
type Stats struct {
	Spans   int // spans built
	Sent    int // spans in batches the collector accepted
	Failed  int // spans in batches that failed or were never sent after a failure
	Batches int // batches accepted
	Bytes   int // encoded bytes accepted (before compression)
}

// Client sends batches of OTLP spans to one collector.
type Client struct {
	client   otlptrace.Client // gRPC: the SDK's client
	http     *httpSender      // OTLP/HTTP: cuprof's (http.go)
	endpoint string
	protocol Protocol
}

// NewClient returns a started client for the configured endpoint and protocol,
// honouring the standard OTEL_EXPORTER_OTLP_* and OTEL_EXPORTER_OTLP_TRACES_*
// variables (endpoint, headers, certificate, client key and certificate,
// insecure, compression, timeout, protocol) where options do not override them.
func NewClient(ctx context.Context, opts ...Option) (*Client, error) {
	return newClient(ctx, newConfig(opts))
}

func newClient(ctx context.Context, c *config) (*Client, error) {
	if SDKDisabled() {
		return nil, ErrSDKDisabled
	}
	p, err := c.resolvedProtocol()
	if err != nil {
		return nil, err
	}
	retry := struct {
		enabled            bool
		initial, max, upTo time.Duration
	}{c.retryFor > 0, 50 * time.Millisecond, time.Second, c.retryFor}
	// Without WithCompression the environment's compression applies, else
	// none: the OpenTelemetry SDKs' default (the specification's exporter
	// section gives the variables no value by default; the Go SDK's
	// otlptracehttp and otlptracegrpc clients send uncompressed unless told).
	compress := c.compression
	var ep *url.URL
	if c.endpoint != "" {
		ep, err = endpointURL(c.endpoint)
		if err != nil {
			return nil, err
		}
	}
	if err := checkHeaders(c.headers); err != nil {
		return nil, err
	}
	headers := c.requestHeaders()
	var cl otlptrace.Client
	switch p {
	case ProtocolGRPC:
		o := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
			Enabled: retry.enabled, InitialInterval: retry.initial, MaxInterval: retry.max, MaxElapsedTime: retry.upTo})}
		if ep != nil {
			o = append(o, otlptracegrpc.WithEndpointURL(ep.String()))
		}
		if c.timeout >= 0 {
			o = append(o, otlptracegrpc.WithTimeout(c.timeout))
		}
		switch compress {
		case "gzip":
			o = append(o, otlptracegrpc.WithCompressor("gzip"))
		case "none":
			// grpc sends uncompressed unless told otherwise
		}
		if len(c.headers) > 0 {
			o = append(o, otlptracegrpc.WithHeaders(headers))
		}
		cl = otlptracegrpc.NewClient(o...)
	case ProtocolHTTP:
		if len(c.headers) == 0 {
			headers = sdkHeaders()
		}
		if compress == "" { // the environment's: gzip is gzip, anything else none
			compress = "none"
			if v, _ := httpEnv("COMPRESSION"); v == "gzip" {
				compress = "gzip"
			}
		}
		s, err := newHTTPSender(c, headers, compress, retryPolicy{retry.enabled, retry.initial, retry.max, retry.upTo})
		if err != nil {
			return nil, fmt.Errorf("cannot start OTLP %s client for %s: %w", p, c.displayEndpoint(p), err)
		}
		return &Client{http: s, endpoint: c.displayEndpoint(p), protocol: p}, nil
	default:
		return nil, fmt.Errorf("unsupported OTLP protocol %q; use grpc or http/protobuf", p)
	}
	if err := cl.Start(ctx); err != nil {
		return nil, fmt.Errorf("cannot start OTLP %s client for %s: %w", p, c.displayEndpoint(p), err)
	}
	return &Client{client: cl, endpoint: c.displayEndpoint(p), protocol: p}, nil
}

// endpointURL parses host:port or a URL; host:port means plain-text http.
func endpointURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("bad OTLP endpoint %q; give host:port or an http:// or https:// URL", s)
	}
	return u, nil
}

// Endpoint says where the client sends spans.
func (c *Client) Endpoint() string { return c.endpoint }

// Protocol is the client's transport.
func (c *Client) Protocol() Protocol { return c.protocol }

// Upload sends one batch, retrying transient failures within the configured
// bounds. Errors from a collector that cannot be reached wrap ErrUnreachable.
func (c *Client) Upload(ctx context.Context, rs []*tracepb.ResourceSpans) error {
	if c.http != nil {
		body, err := proto.Marshal(&collectorpb.ExportTraceServiceRequest{ResourceSpans: rs})
		if err != nil {
			return err
		}
		return c.describeErr(c.http.send(ctx, [][]byte{body}))
	}
	return c.describeErr(c.client.UploadTraces(ctx, rs))
}

// upload sends a batch the builder made: over HTTP its request bytes as
// they are, over gRPC its ResourceSpans through the SDK's client.
func (c *Client) upload(ctx context.Context, b Batch) error {
	if c.http != nil {
		return c.describeErr(c.http.send(ctx, b.body))
	}
	return c.describeErr(c.client.UploadTraces(ctx, b.rs))
}

// Close releases the client's connections.
func (c *Client) Close(ctx context.Context) error {
	if c.http != nil {
		c.http.close()
		return ctx.Err()
	}
	return c.client.Stop(ctx)
}

func (c *Client) describeErr(err error) error {
	if err == nil {
		return nil
	}
	return c.describe(err)
}

// describe turns a client error into one line saying what to do: a
// collector that answered without taking the spans (ErrRefused), one that
// did not answer in time, one that cannot be reached (both ErrUnreachable).
func (c *Client) describe(err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	var ae *answerError
	switch {
	case errors.As(err, &ae):
		hint := "check the collector's log"
		if strings.Contains(msg, "429") || strings.Contains(msg, "503") {
			hint = "it is up but not taking spans now (throttled or overloaded): send them later with cuprof export"
		}
		return &refusedError{fmt.Sprintf("OTLP collector at %s %s; %s", c.endpoint, strings.Join(strings.Fields(ae.Error()), " "), hint)}
	case rejected(msg):
		return &refusedError{fmt.Sprintf("OTLP collector at %s rejected the spans: %s", c.endpoint, msg)}
	case timedOut(err):
		return &unreachableError{msg: fmt.Sprintf("OTLP collector at %s did not answer in time (%s); check that it is up and not stalled, or raise OTEL_EXPORTER_OTLP_TIMEOUT",
			c.endpoint, msg), cause: err}
	}
	return &unreachableError{msg: fmt.Sprintf("cannot reach OTLP collector at %s: %s; start one or set OTEL_EXPORTER_OTLP_ENDPOINT",
		c.endpoint, msg)}
}

// timedOut reports whether err is a request that got no answer in time.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "DeadlineExceeded") {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ErrRefused is wrapped by errors about a collector that answered but did
// not take the spans (an error status, a body that is not an OTLP
// response, a partial success).
var ErrRefused = errors.New("collector refused the spans")

// refusedError is ErrRefused with its full message.
type refusedError struct{ msg string }

func (e *refusedError) Error() string        { return e.msg }
func (e *refusedError) Is(target error) bool { return target == ErrRefused }

// unreachableError is ErrUnreachable with its full message, and the error
// it comes from, if any (context.DeadlineExceeded for a wait that ran out).
type unreachableError struct {
	msg   string
	cause error
}

func (e *unreachableError) Error() string        { return e.msg }
func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }
func (e *unreachableError) Unwrap() error        { return e.cause }

// rejected reports whether an error says the collector answered but refused
// the data (as opposed to not answering at all).
func rejected(msg string) bool {
	for _, s := range []string{"InvalidArgument", "Unauthenticated", "PermissionDenied", "Unimplemented", "ResourceExhausted",
		"400 Bad Request", "401 Unauthorized", "403 Forbidden", "404 Not Found", "413 Request Entity Too Large"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Export builds t's spans and sends them in batches. It stops at the first
// batch that fails (after its retries), counting it and everything not yet
// sent as failed, and returns that batch's error.
func Export(ctx context.Context, t *trace.Trace, opts ...Option) (Stats, error) {
	c := newConfig(opts)
	cl, err := newClient(ctx, c)
	if err != nil {
		return Stats{}, err
	}
	defer cl.Close(context.WithoutCancel(ctx))
	return ExportTo(ctx, cl, t, opts...)
}

// ExportTo is Export over an existing client. Building overlaps with
// sending, and up to WithParallel requests are in flight at once.
func ExportTo(ctx context.Context, cl *Client, t *trace.Trace, opts ...Option) (Stats, error) {
	return ExportStream(ctx, cl, t, func() iter.Seq[*trace.Event] { return analysis.Events(t) }, opts...)
}

// ExportStream is ExportTo of a trace read as a stream (BuildStream): the
// spans are built while the events are read and sent in batches as they
// fill, with at most WithParallel requests in flight and as many batches
// waiting, so memory does not grow with the trace.
func ExportStream(ctx context.Context, cl *Client, t *trace.Trace, events func() iter.Seq[*trace.Event], opts ...Option) (Stats, error) {
	c := newConfig(opts)
	var (
		mu      sync.Mutex
		st      Stats
		sendErr error
		wg      sync.WaitGroup
	)
	batches := make(chan Batch) // a built batch waits for a free sender: at most parallel+1 in memory
	for w := 0; w < c.parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				mu.Lock()
				stopped := sendErr != nil
				mu.Unlock()
				var err error
				if !stopped {
					err = cl.upload(ctx, b)
				}
				b.release()
				mu.Lock()
				switch {
				case stopped:
					st.Failed += b.Spans
				case err != nil:
					if sendErr == nil {
						sendErr = err
					}
					st.Failed += b.Spans
				default:
					st.Sent += b.Spans
					st.Batches++
					st.Bytes += b.Bytes
				}
				mu.Unlock()
			}
		}()
	}
	n, err := BuildStream(t, events, func(b Batch) error {
		batches <- b
		return nil
	}, opts...)
	close(batches)
	wg.Wait()
	st.Spans = n
	if err != nil {
		return st, err
	}
	return st, sendErr
}
