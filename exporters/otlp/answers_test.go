package otlp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// answering is a collector over HTTP that answers every request with
// answer, counting the requests.
func answering(t *testing.T, answer func(w http.ResponseWriter)) (endpoint string, requests *atomic.Int64) {
	t.Helper()
	requests = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		answer(w)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// exportWithin runs Export and fails the test when it has not returned
// within d.
func exportWithin(t *testing.T, d time.Duration, opts ...Option) (Stats, error) {
	t.Helper()
	tr := readFixture(t, "small.txt")
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := Export(context.Background(), tr, opts...)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-time.After(d):
		t.Fatalf("export has not returned after %v", d)
		return Stats{}, nil
	}
}

// TestHugeRetryAfterReturnsInTime: a collector answering 429 or 503 with
// Retry-After 99999999999 (seconds) or a far-future date made export wait
// forever: the wait, clamped to the largest Duration, was added to the time
// spent and overflowed. It now returns within the export's retry time, at
// once, saying the collector asked for more than that.
func TestHugeRetryAfterReturnsInTime(t *testing.T) {
	for _, c := range []struct{ name, status, after string }{
		{"429 seconds", "429", "99999999999"},
		{"503 seconds", "503", "99999999999"},
		{"429 date", "429", "Fri, 31 Dec 9999 23:59:59 GMT"},
		{"429 max int64", "429", "9223372036854775807"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep, n := answering(t, func(w http.ResponseWriter) {
				w.Header().Set("Retry-After", c.after)
				code := http.StatusTooManyRequests
				if c.status == "503" {
					code = http.StatusServiceUnavailable
				}
				w.WriteHeader(code)
			})
			_, err := exportWithin(t, time.Minute, WithEndpoint(ep), WithProtocol(ProtocolHTTP),
				WithTimeout(5*time.Second), WithRetryFor(2*time.Second))
			if !errors.Is(err, ErrRefused) || errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v; want ErrRefused, not ErrUnreachable", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "answered "+c.status) || !strings.Contains(msg, "not taking spans now") {
				t.Errorf("message %q", msg)
			}
			if n.Load() != 1 {
				t.Errorf("%d requests; want 1: a wait longer than the retry time is not waited", n.Load())
			}
		})
	}
}

// TestCollectorAnswersAreNotUnreachable: a collector that answered (an error
// status, a body that is not an OTLP response, one too large) was reported as
// "cannot reach OTLP collector"; it is ErrRefused now, saying what it
// answered.
func TestCollectorAnswersAreNotUnreachable(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   string
	}{
		{"429 after retries", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		}, "answered 429 Too Many Requests"},
		{"500", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("boom"))
		}, "answered 500 Internal Server Error (body: boom)"},
		{"garbage body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write([]byte("\xff\xff\xff\xff garbage"))
		}, "answered 200 OK with a body that is not an OTLP response"},
		{"too large", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.Write(make([]byte, httpMaxResponse+10))
		}, "answered 200 OK with a body over 4194304 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep, _ := answering(t, c.answer)
			_, err := exportWithin(t, time.Minute, WithEndpoint(ep), WithProtocol(ProtocolHTTP),
				WithTimeout(5*time.Second), WithRetryFor(300*time.Millisecond))
			if !errors.Is(err, ErrRefused) || errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v; want ErrRefused, not ErrUnreachable", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || strings.Contains(msg, "cannot reach") || strings.Contains(msg, "\n") {
				t.Errorf("message %q; want one line saying %q", msg, c.want)
			}
		})
	}
}

// TestBadHeaderValueNamed: a header value with a control character (a
// percent-encoded newline in OTEL_EXPORTER_OTLP_HEADERS) failed every
// request, reported as an unreachable collector; it is refused before any
// request, naming the variable and the key.
func TestBadHeaderValueNamed(t *testing.T) {
	ep, n := answering(t, func(w http.ResponseWriter) {})
	for _, p := range protocols {
		t.Run(string(p), func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-ok=1,authorization=Bearer%0Aevil")
			_, err := exportWithin(t, time.Minute, WithEndpoint(ep), WithProtocol(p), WithTimeout(time.Second))
			if err == nil || errors.Is(err, ErrUnreachable) ||
				!strings.Contains(err.Error(), `OTEL_EXPORTER_OTLP_HEADERS: the value of header "authorization" holds the control character 0x0a`) {
				t.Errorf("err = %v", err)
			}
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "")
			_, err = exportWithin(t, time.Minute, WithEndpoint(ep), WithProtocol(p), WithTimeout(time.Second),
				WithHeaders(map[string]string{"k": "a\rb"}))
			if err == nil || !strings.Contains(err.Error(), `header: the value of header "k" holds the control character 0x0d`) {
				t.Errorf("err = %v", err)
			}
		})
	}
	if n.Load() != 0 {
		t.Errorf("%d requests sent with a bad header", n.Load())
	}
}
