package otlp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// OTLP/HTTP is sent by cuprof itself rather than by the SDK's otlptracehttp
// client: the builder has already written each request's protobuf bytes
// (Batch.body), which the SDK client would copy once more through
// proto.Marshal and compress with compress/gzip's default level, the two
// largest costs of an export after the spans themselves. What is sent and
// how it is configured are the SDK client's (go.opentelemetry.io/otel
// v1.47, the OTLP specification's exporter section), checked by the tests
// against its behaviour:
//
//   - POST of an ExportTraceServiceRequest, Content-Type
//     application/x-protobuf, Content-Encoding gzip when compressed;
//   - the endpoint from WithEndpoint, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//     as given (its root path when it has none), else
//     OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended to its path,
//     else https://localhost:4318/v1/traces; http:// (or
//     OTEL_EXPORTER_OTLP[_TRACES]_INSECURE=true) means plain text;
//   - headers, timeout (milliseconds), compression, CA certificate and
//     client certificate and key from OTEL_EXPORTER_OTLP_* and
//     OTEL_EXPORTER_OTLP_TRACES_* (the traces variable wins); the proxy from
//     HTTP_PROXY, HTTPS_PROXY and NO_PROXY;
//   - 429, 502, 503 and 504 and temporary network errors retried with
//     exponential backoff (the SDK's: factor 1.5, jitter 0.5) or the
//     Retry-After the collector asked for, for up to WithRetryFor; other
//     statuses fail the batch at once; a partial success whose collector
//     rejected spans fails it too.
//
// gRPC still goes through the SDK's otlptracegrpc client.

// httpGzipLevel is the gzip level of OTLP/HTTP requests: klauspost's
// fastest, which compresses these requests about 8x at some 1.1 GB per CPU
// second on the bench machine, where compress/gzip's default (the SDK's)
// did 12x at 0.2 GB/s and its fastest 7.8x at 0.4 GB/s
// (docs/benchmarks.md section 8).
const httpGzipLevel = gzip.BestSpeed

// httpMaxResponse bounds the response body read, as the SDK's default.
const httpMaxResponse = 4 << 20

// httpSender posts requests to one OTLP/HTTP endpoint.
type httpSender struct {
	url     string
	header  http.Header
	client  *http.Client
	gzip    bool
	retry   retryPolicy
	stop    chan struct{}
	stopped sync.Once
	// gzip writers and buffers of compressed bodies, reused
	writers sync.Pool
	bufs    sync.Pool
}

// retryPolicy is the SDK's exponential backoff.
type retryPolicy struct {
	enabled            bool
	initial, max, upTo time.Duration
}

// httpEnv reads an OTEL_EXPORTER_OTLP_TRACES_name or OTEL_EXPORTER_OTLP_name
// variable as the SDK reads it (trimmed; the traces one wins when set).
func httpEnv(name string) (string, bool) {
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
		return v, true
	}
	v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_" + name))
	return v, v != ""
}

// newHTTPSender resolves c (options over the environment over the
// defaults) into a sender; headers are the request headers already merged
// (newClient), compress "gzip" or "none".
func newHTTPSender(c *config, headers map[string]string, compress string, retry retryPolicy) (*httpSender, error) {
	host, urlPath, insecure := "localhost:4318", "/v1/traces", false
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		if u, err := url.Parse(v); err == nil {
			host, urlPath, insecure = u.Host, path.Join(u.Path, "/v1/traces"), schemeInsecure(u.Scheme)
		}
	}
	if v := strings.TrimSpace(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		if u, err := url.Parse(v); err == nil {
			host, urlPath, insecure = u.Host, u.Path, schemeInsecure(u.Scheme)
			if urlPath == "" {
				urlPath = "/"
			}
		}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE"} {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			insecure = strings.EqualFold(v, "true")
		}
	}
	if c.endpoint != "" {
		u, err := endpointURL(c.endpoint)
		if err != nil {
			return nil, err
		}
		host, urlPath, insecure = u.Host, u.Path, u.Scheme != "https"
		if urlPath == "" || urlPath == "/" {
			urlPath = "/v1/traces"
		}
	}
	if urlPath = strings.TrimSpace(urlPath); urlPath == "" || urlPath == "." {
		urlPath = "/v1/traces"
	} else if !path.IsAbs(urlPath) {
		urlPath = "/" + urlPath
	}
	scheme := "https"
	if insecure {
		scheme = "http"
	}
	tlsConf, err := envTLS()
	if err != nil {
		return nil, err
	}
	if insecure && tlsConf != nil {
		return nil, errors.New("insecure HTTP endpoint cannot use TLS client configuration")
	}
	timeout := 10 * time.Second
	if v, ok := httpEnv("TIMEOUT"); ok {
		if ms, err := strconv.Atoi(v); err == nil {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if c.timeout >= 0 {
		timeout = c.timeout
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return bodyConn{c}, nil
		},
		ForceAttemptHTTP2: true,
		MaxIdleConns:      100,
		// one idle connection kept for each request that may be in
		// flight: with the transport's default of 2, the third and
		// fourth of Export's parallel requests closed their connection
		// when done and the next ones dialled again (43 connections for
		// the 568 requests of a 5M-event export)
		MaxIdleConnsPerHost:   max(c.parallel, http.DefaultMaxIdleConnsPerHost),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       tlsConf,
	}
	s := &httpSender{url: (&url.URL{Scheme: scheme, Host: host, Path: urlPath}).String(), header: http.Header{},
		client: &http.Client{Transport: tr, Timeout: timeout}, gzip: compress == "gzip", retry: retry,
		stop: make(chan struct{})}
	ua := "cuprof"
	if c.version != "" {
		ua += "/" + c.version
	}
	s.header.Set("User-Agent", ua+" (OTLP/HTTP)")
	for k, v := range headers {
		if validHeaderKey(k) {
			s.header.Set(k, v)
		}
	}
	s.header.Set("Content-Type", "application/x-protobuf")
	if s.gzip {
		s.header.Set("Content-Encoding", "gzip")
	}
	return s, nil
}

// sdkHeaders are the headers the SDK client sends when no option gives
// any: OTEL_EXPORTER_OTLP_TRACES_HEADERS when set, else
// OTEL_EXPORTER_OTLP_HEADERS (the traces variable replaces the other).
func sdkHeaders() map[string]string {
	v, ok := httpEnv("HEADERS")
	if !ok {
		return nil
	}
	h := map[string]string{}
	keys, values := parsePairs(v)
	for i, k := range keys {
		h[k] = values[i]
	}
	return h
}

func schemeInsecure(scheme string) bool {
	s := strings.ToLower(scheme)
	return s == "http" || s == "unix"
}

// validHeaderKey reports whether k is an HTTP token (the SDK skips a
// header whose key is not).
func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// envTLS is the TLS configuration of the OTEL_EXPORTER_OTLP[_TRACES]_CERTIFICATE
// (CA) and _CLIENT_CERTIFICATE and _CLIENT_KEY variables; nil when none is
// set. A file that cannot be read or parsed is skipped, as the SDK skips it.
func envTLS() (*tls.Config, error) {
	conf := &tls.Config{}
	set := false
	for _, prefix := range []string{"OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_"} {
		if f := strings.TrimSpace(os.Getenv(prefix + "CERTIFICATE")); f != "" {
			if pem, err := os.ReadFile(f); err == nil {
				pool := x509.NewCertPool()
				if pool.AppendCertsFromPEM(pem) {
					conf.RootCAs, set = pool, true
				}
			}
		}
		cf, kf := strings.TrimSpace(os.Getenv(prefix+"CLIENT_CERTIFICATE")), strings.TrimSpace(os.Getenv(prefix+"CLIENT_KEY"))
		if cf != "" && kf != "" {
			cert, err1 := os.ReadFile(cf)
			key, err2 := os.ReadFile(kf)
			if err1 == nil && err2 == nil {
				if pair, err := tls.X509KeyPair(cert, key); err == nil {
					conf.Certificates, set = []tls.Certificate{pair}, true
				}
			}
		}
	}
	if !set {
		return nil, nil
	}
	return conf, nil
}

// send posts the request whose protobuf encoding is the concatenation of
// body, retrying as the policy allows.
func (s *httpSender) send(ctx context.Context, body [][]byte) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.stop:
			cancel()
		}
	}()
	payload, n := body, 0
	for _, p := range body {
		n += len(p)
	}
	if s.gzip {
		buf, _ := s.bufs.Get().(*bytes.Buffer)
		if buf == nil {
			buf = &bytes.Buffer{}
		}
		buf.Reset()
		defer s.bufs.Put(buf)
		zw, _ := s.writers.Get().(*gzip.Writer)
		if zw == nil {
			zw, _ = gzip.NewWriterLevel(buf, httpGzipLevel)
		} else {
			zw.Reset(buf)
		}
		for _, p := range body {
			zw.Write(p) // into a bytes.Buffer: cannot fail
		}
		zw.Close()
		s.writers.Put(zw)
		payload, n = [][]byte{buf.Bytes()}, buf.Len()
	}
	if !s.retry.enabled {
		return s.post(ctx, payload, n)
	}
	return s.retry.do(ctx, func() error { return s.post(ctx, payload, n) })
}

// retryable is a failure worth another attempt, after at least throttle.
type retryable struct {
	throttle time.Duration
	err      error
}

func (e *retryable) Error() string { return "retry-able request failure: " + e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// do calls post until it succeeds, fails for good or the policy's time is
// up, waiting the larger of the backoff and the collector's Retry-After.
func (r retryPolicy) do(ctx context.Context, post func() error) error {
	start := time.Now()
	interval := r.initial
	for {
		err := post()
		var re *retryable
		if err == nil || !errors.As(err, &re) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		if time.Since(start) > r.upTo {
			return fmt.Errorf("max retry time elapsed: %w", err)
		}
		// the backoff: interval with jitter of ±50 %, growing by 1.5 to max
		delay := time.Duration(float64(interval) * (0.5 + rand.Float64()))
		if interval = time.Duration(float64(interval) * 1.5); interval > r.max {
			interval = r.max
		}
		// compared with what is left, not added to the time spent: a
		// Retry-After of 99999999999 s (or a far-future date) is
		// clamped to the largest Duration and the sum would overflow
		if left := r.upTo - time.Since(start); re.throttle > left {
			return fmt.Errorf("max retry time would elapse (the collector asked to wait %s): %w", retryWait(re.throttle), err)
		}
		delay = max(delay, re.throttle)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// post makes one attempt.
func (s *httpSender) post(ctx context.Context, payload [][]byte, n int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, newSentBody(payload))
	if err != nil {
		return err
	}
	req.ContentLength = int64(n)
	// as for a bytes.Reader body: the transport may send the request again
	// on another connection when the one it took was closed before any of
	// it was written
	req.GetBody = func() (io.ReadCloser, error) { return newSentBody(payload), nil }
	req.Header = s.header.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Temporary() {
			return &retryable{err: err}
		}
		return err
	}
	defer resp.Body.Close()
	var data bytes.Buffer
	if _, err := io.Copy(&data, io.LimitReader(resp.Body, httpMaxResponse+1)); err != nil {
		return &answerError{fmt.Errorf("%s, then its body broke off: %w", resp.Status, err)}
	}
	if data.Len() > httpMaxResponse {
		return &answerError{fmt.Errorf("%s with a body over %d bytes, more than an OTLP response", resp.Status, httpMaxResponse)}
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if data.Len() == 0 || resp.Header.Get("Content-Type") != "application/x-protobuf" {
			return nil
		}
		var r collectorpb.ExportTraceServiceResponse
		if err := proto.Unmarshal(data.Bytes(), &r); err != nil {
			return &answerError{fmt.Errorf("%s with a body that is not an OTLP response (%w)", resp.Status, err)}
		}
		if ps := r.GetPartialSuccess(); ps != nil && (ps.GetRejectedSpans() != 0 || ps.GetErrorMessage() != "") {
			return &answerError{fmt.Errorf("OTLP partial success: %s (%d spans rejected)", ps.GetErrorMessage(), ps.GetRejectedSpans())}
		}
		return nil
	case code == http.StatusTooManyRequests, code == http.StatusBadGateway, code == http.StatusServiceUnavailable,
		code == http.StatusGatewayTimeout:
		return &retryable{throttle: retryAfter(resp.Header.Get("Retry-After")),
			err: &answerError{fmt.Errorf("%s (body: %s)", resp.Status, bodyText(&data))}}
	default:
		return &answerError{fmt.Errorf("%s (body: %s)", resp.Status, bodyText(&data))}
	}
}

// answerError is a request the collector answered without taking its spans:
// an error status, a body that is not an OTLP response, one too large.
// It is not ErrUnreachable: the collector is there.
type answerError struct{ err error }

func (e *answerError) Error() string { return "answered " + e.err.Error() }
func (e *answerError) Unwrap() error { return e.err }

// sentBody is a request's body: the concatenation of its buffers.
// Written through a bodyConn, it goes to the connection from the buffers
// as they are.
type sentBody struct{ rest net.Buffers }

func newSentBody(payload [][]byte) *sentBody {
	return &sentBody{rest: append(net.Buffers(nil), payload...)}
}

func (b *sentBody) Read(p []byte) (int, error) { return b.rest.Read(p) }
func (b *sentBody) Close() error               { return nil }

// len is how many bytes are left to read.
func (b *sentBody) len() int64 {
	var n int64
	for _, p := range b.rest {
		n += int64(len(p))
	}
	return n
}

// bodyConn is a connection of the sender's transport. net/http writes a
// request body of known length as io.Copy from an io.LimitedReader around
// it (transferWriter.writeBody), which TCPConn.ReadFrom copies through a
// 32 KiB buffer, one write system call per 32 KiB: a copy and 54,000
// calls for the 1.8 GB of a 5M-event export, a quarter of its CPU profile.
// Given a sentBody whole (the limit its length: it is all the
// request's), bodyConn writes its buffers to the connection as they are
// (writev over TCP); anything else goes on to the connection's own ReadFrom.
type bodyConn struct{ net.Conn }

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if b, ok := lr.R.(*sentBody); ok && b.len() <= lr.N {
			n, err := b.rest.WriteTo(c.Conn)
			lr.N -= n
			return n, err
		}
	}
	return io.Copy(c.Conn, r)
}

var _ io.ReaderFrom = bodyConn{}

func bodyText(b *bytes.Buffer) string {
	if s := strings.TrimSpace(b.String()); s != "" {
		return s
	}
	return "(empty)"
}

// retryWait words a Retry-After wait for a message.
func retryWait(d time.Duration) string {
	if d > 24*time.Hour {
		return "more than a day"
	}
	return d.Round(time.Second).String()
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		if n > int64(1<<63-1)/int64(time.Second) {
			return 1<<63 - 1
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// close interrupts requests in flight and releases idle connections.
func (s *httpSender) close() {
	s.stopped.Do(func() { close(s.stop) })
	s.client.CloseIdleConnections()
}
