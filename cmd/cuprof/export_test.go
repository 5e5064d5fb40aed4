package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/encoding"

	"github.com/cuprof/cuprof/trace"
)

// copyFixture copies a trace fixture into a private directory.
func copyFixture(t *testing.T, src string) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "run.cuprof.txt")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, data
}

const otlpFixture = "../../exporters/otlp/testdata/small.txt"

func TestExportToHTTPCollector(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		requests.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	path, before := copyFixture(t, otlpFixture)
	var out, errb bytes.Buffer
	err := run([]string{"export", path, "--otlp=" + srv.URL, "--otlp-protocol", "http"}, nil, &out, &errb)
	if err != nil {
		t.Fatalf("export: %v (stderr %s)", err, errb.String())
	}
	if !strings.Contains(out.String(), "spans: 34 sent, 0 failed, in 1 request to "+srv.URL) {
		t.Errorf("stdout %q", out.String())
	}
	if requests.Load() != 1 {
		t.Errorf("%d requests", requests.Load())
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("export modified the trace file")
	}
}

func TestExportCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	path, before := copyFixture(t, otlpFixture)
	for _, proto := range []string{"grpc", "http"} {
		var out, errb bytes.Buffer
		err := run([]string{"export", path, "--otlp=" + addr, "--protocol", proto, "--timeout", "2s",
			"--retry-for", "200ms"}, nil, &out, &errb)
		if err == nil {
			t.Fatalf("%s: export to a closed port succeeded", proto)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "cannot reach OTLP collector at "+addr+": ") ||
			!strings.HasSuffix(msg, "; start one or set OTEL_EXPORTER_OTLP_ENDPOINT") || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q", proto, msg)
		}
		if !strings.Contains(out.String(), "spans: 0 sent, 34 failed") {
			t.Errorf("%s: stdout %q", proto, out.String())
		}
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("export modified the trace file")
	}
}

func TestExportCollectorRefusingOrSlow(t *testing.T) {
	var attempts atomic.Int64
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		attempts.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer refusing.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-release
	}))
	defer slow.Close()
	defer close(release)
	path, before := copyFixture(t, otlpFixture)
	// what each did is said: an answer is not "cannot reach"
	for ep, want := range map[string]string{
		refusing.URL: "OTLP collector at " + refusing.URL + " answered 503 Service Unavailable (body: overloaded)",
		slow.URL:     "OTLP collector at " + slow.URL + " did not answer in time",
	} {
		var out, errb bytes.Buffer
		err := run([]string{"export", path, "--otlp=" + ep, "--protocol", "http", "--timeout", "300ms",
			"--retry-for", "300ms"}, nil, &out, &errb)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line starting %q", ep, err, want)
		}
		if !strings.Contains(out.String(), "spans: 0 sent, 34 failed") {
			t.Errorf("%s: stdout %q", ep, out.String())
		}
	}
	if n := attempts.Load(); n < 2 || n > 20 {
		t.Errorf("refusing collector saw %d attempts: want a few bounded retries", n)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("export modified the trace file")
	}
}

func TestExportUsage(t *testing.T) {
	path, _ := copyFixture(t, otlpFixture)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", path}, "nothing to export to; pass --otlp=ENDPOINT"},
		{[]string{"export", path, "--otlp", "--protocol", "thrift"}, `unknown --otlp-protocol "thrift"`},
		{[]string{"export", path, "--otlp", "--otlp-protocol", "thrift"}, `unknown --otlp-protocol "thrift"`},
		{[]string{"export", path, "extra"}, `accepts 1 arg(s), received 2`},
		{[]string{"export", path, "--otlp", "127.0.0.1:4317"}, `give one as --otlp=127.0.0.1:4317`},
		{[]string{"export", path + ".missing", "--otlp"}, "cannot read trace"},
	} {
		var out, errb bytes.Buffer
		err := run(tc.args, nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if code, _ := exitStatus(err); code != exitUsage && !strings.Contains(tc.want, "cannot read") {
			t.Errorf("%v: exit status %d, want %d", tc.args, code, exitUsage)
		}
	}
}

func TestRecordOTLPFlagsParse(t *testing.T) {
	s, err := startStreamer(context.Background(), "", "", []string{"x"})
	if s != nil || err != nil {
		t.Fatalf("no --otlp: %v %v", s, err)
	}
	if _, err := startStreamer(context.Background(), "127.0.0.1:1", "thrift", []string{"x"}); err == nil ||
		!strings.Contains(err.Error(), `unknown --otlp-protocol "thrift"`) {
		t.Errorf("bad protocol: %v", err)
	}
	s, err = startStreamer(context.Background(), "127.0.0.1:1", "grpc", []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	finishStreamer(&w, s, "run.cuprof")
	if !strings.Contains(w.String(), "cuprof: otlp: 0 spans sent, 0 dropped (queue full), 0 failed, to 127.0.0.1:1") {
		t.Errorf("summary %q", w.String())
	}
	if strings.Contains(w.String(), "send it again") {
		t.Errorf("nothing was lost, yet the summary says to send again: %q", w.String())
	}
}

// TestRecordOTLPUnsentPointsAtTrace: spans the collector never took are in
// the trace file, and the summary says how to send them again.
func TestRecordOTLPUnsentPointsAtTrace(t *testing.T) {
	s, err := startStreamer(context.Background(), "127.0.0.1:1", "grpc", []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	s.Observe(1, []trace.Event{{Kind: trace.KindCall, API: trace.APICtxGetCurrent, PID: 1, TID: 1, Start: 10, End: 20}}, []string{""})
	var w bytes.Buffer
	finishStreamer(&w, s, "run.cuprof")
	if !strings.Contains(w.String(), "every event is in run.cuprof; send it again with: cuprof export run.cuprof --otlp=127.0.0.1:1") {
		t.Errorf("summary %q", w.String())
	}
}

// TestExportAndRecordHonourSDKDisabled: with OTEL_SDK_DISABLED=true export
// sends nothing (status 0, and says why), and record --otlp records
// without streaming.
func TestExportAndRecordHonourSDKDisabled(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		requests.Add(1)
	}))
	defer srv.Close()
	t.Setenv("OTEL_SDK_DISABLED", "true")
	var out, errb bytes.Buffer
	if err := run([]string{"export", otlpFixture, "--otlp=" + srv.URL, "--otlp-protocol", "http"}, nil, &out, &errb); err != nil {
		t.Fatalf("export: %v", err)
	}
	if !strings.Contains(errb.String(), "OTEL_SDK_DISABLED is true") || out.Len() != 0 {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
	if _, err := exec.LookPath("cc"); err == nil {
		errb.Reset()
		tr := filepath.Join(t.TempDir(), "t.cuprof")
		if err := run([]string{"record", "--sim", "--otlp=" + srv.URL, "--otlp-protocol", "http", "-o", tr, "--", "true"}, nil, &out, &errb); err != nil {
			t.Fatalf("record: %v %s", err, errb.String())
		}
		if !strings.Contains(errb.String(), "recording without streaming") || strings.Contains(errb.String(), "spans sent") {
			t.Errorf("record stderr %q", errb.String())
		}
		if _, err := os.Stat(tr); err != nil {
			t.Errorf("no trace: %v", err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the collector", n)
	}
}

// TestGRPCGzipIsTheFastOne: the binary's gRPC gzip compressor is
// internal/grpcgzip's (klauspost/compress at its fastest level), not
// grpc's default-level one.
func TestGRPCGzipIsTheFastOne(t *testing.T) {
	if got := fmt.Sprintf("%T", encoding.GetCompressor("gzip")); got != "*grpcgzip.compressor" {
		t.Errorf("gRPC's gzip compressor is %s", got)
	}
}
