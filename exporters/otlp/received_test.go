package otlp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// receivedFixture is a trace whose received spans testdata/received.golden
// holds.
type receivedFixture struct {
	name  string
	build func(t *testing.T) *trace.Trace
}

// receivedFixtures lists every text trace of the consumers' testdata (as
// analysis/consumers_test.go finds them), the built traces and random
// traces of several lengths.
func receivedFixtures(t *testing.T) []receivedFixture {
	var fs []receivedFixture
	var paths []string
	for _, dir := range []string{"../../analysis/testdata", "../../internal/report/testdata", "../../internal/lint/testdata",
		"../../flame/testdata", "testdata", "../../exporters/perfetto/testdata"} {
		ms, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
		paths = append(paths, ms...)
	}
	for _, p := range paths {
		if strings.Contains(filepath.Base(p), ".golden") {
			continue
		}
		if data, err := os.ReadFile(p); err != nil || !strings.HasPrefix(string(data), trace.TextHeader) {
			continue // not a trace
		}
		name := strings.TrimPrefix(filepath.ToSlash(p), "../../")
		fs = append(fs, receivedFixture{name, func(t *testing.T) *trace.Trace { return tracetest.ReadText(t, p) }})
	}
	fs = append(fs,
		receivedFixture{"PythonWrapper", func(*testing.T) *trace.Trace { return tracetest.PythonWrapper(5) }},
		receivedFixture{"PythonTrace", func(*testing.T) *trace.Trace { return tracetest.PythonTrace() }},
		receivedFixture{"LoopTrace", func(*testing.T) *trace.Trace { return tracetest.LoopTrace(300) }},
		receivedFixture{"AllocFreePairs", func(*testing.T) *trace.Trace { return tracetest.AllocFreePairs(500) }},
	)
	for seed := uint64(1); seed <= 24; seed++ {
		n := 200 + int(seed)*173
		fs = append(fs, receivedFixture{fmt.Sprintf("random-%d-%d", seed, n), func(*testing.T) *trace.Trace {
			return tracetest.Random(seed, n)
		}})
	}
	return fs
}

// receivedDigest is what a collector received, independent of how the
// spans were cut into requests and in which order the requests arrived:
// per resource (its attributes and scope), its spans ordered by span ID,
// each deterministically encoded, hashed.
func receivedDigest(t *testing.T, reqs []*collectorpb.ExportTraceServiceRequest) (int, string) {
	t.Helper()
	type span struct{ id, enc []byte }
	type res struct {
		head  []byte
		spans []span
	}
	byHead := map[string]*res{}
	var order []string
	det := proto.MarshalOptions{Deterministic: true}
	n := 0
	for _, req := range reqs {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				head := &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaUrl,
					ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl}}}
				hb, err := det.Marshal(head)
				if err != nil {
					t.Fatal(err)
				}
				r := byHead[string(hb)]
				if r == nil {
					r = &res{head: hb}
					byHead[string(hb)] = r
					order = append(order, string(hb))
				}
				for _, s := range ss.Spans {
					sb, err := det.Marshal(s)
					if err != nil {
						t.Fatal(err)
					}
					r.spans = append(r.spans, span{s.SpanId, sb})
					n++
				}
			}
		}
	}
	sort.Strings(order) // resources by content, not by arrival
	h := sha256.New()
	for _, k := range order {
		r := byHead[k]
		sort.Slice(r.spans, func(i, j int) bool { return bytes.Compare(r.spans[i].id, r.spans[j].id) < 0 })
		fmt.Fprintf(h, "resource %d\n", len(r.head))
		h.Write(r.head)
		for _, s := range r.spans {
			fmt.Fprintf(h, "span %d\n", len(s.enc))
			h.Write(s.enc)
		}
	}
	return n, fmt.Sprintf("%x", h.Sum(nil)[:12])
}

// TestCollectorReceivesTheSameSpans exports every fixture trace and random
// traces to a local collector over gRPC and HTTP, and streams them as the
// recorder would (over HTTP, a few events per Observe), and compares what
// the collector received (names, IDs, parents, times, attributes, links,
// status, resource and scope; not the cut into requests nor their order)
// with testdata/received.golden, written by the exporter before its spans
// were encoded directly (go test -update rewrites it; a fixture added since
// is only listed).
func TestCollectorReceivesTheSameSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("exports about 60 traces three ways")
	}
	var b strings.Builder
	fs := receivedFixtures(t)
	if len(fs) < 40 {
		t.Fatalf("only %d fixtures found", len(fs))
	}
	for _, fx := range fs {
		tr := fx.build(t)
		for _, p := range protocols {
			r := &receiver{keep: true}
			ep := r.start(t, p)
			st, err := Export(context.Background(), tr, WithEndpoint(ep), WithProtocol(p), WithBatchBytes(16<<10),
				WithTimeout(30*time.Second))
			if err != nil || st.Failed != 0 {
				t.Fatalf("%s over %s: %+v, %v", fx.name, p, st, err)
			}
			n, d := receivedDigest(t, r.requests)
			if n != st.Spans {
				t.Fatalf("%s over %s: %d spans received, %d built", fx.name, p, n, st.Spans)
			}
			fmt.Fprintf(&b, "export-%s %s %d %s\n", p, fx.name, n, d)
		}
		r := &receiver{keep: true}
		ep := r.start(t, ProtocolHTTP)
		meta := tr.Meta // what a recording knows when it starts: no GPUs, capture nor drops yet
		meta.GPUs, meta.Capture = nil, ""
		s, err := NewStreamer(context.Background(), meta, WithEndpoint(ep), WithProtocol(ProtocolHTTP),
			WithIdentity("received"), WithBatchBytes(16<<10), WithQueue(1<<14), WithTimeout(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		s.ObserveCode(tr.Code, tr.Strings)
		observeAll(s, tr, 5)
		st, err := s.Close(context.Background())
		if err != nil || st.Dropped+st.Failed != 0 {
			t.Fatalf("%s streamed: %+v, %v", fx.name, st, err)
		}
		n, d := receivedDigest(t, r.requests)
		if n != st.Spans {
			t.Fatalf("%s streamed: %d spans received, %d built", fx.name, n, st.Spans)
		}
		fmt.Fprintf(&b, "stream %s %d %s\n", fx.name, n, d)
	}
	const path = "testdata/received.golden"
	if update.On() {
		update.Check(t, path, []byte(b.String()))
		return
	}
	// A fixture added since the golden was written has nothing to be
	// compared with: it is listed, and -update adds it.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	want := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(l); len(f) == 4 {
			want[f[0]+" "+f[1]] = f[2] + " " + f[3]
		}
	}
	compared := 0
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		f := strings.Fields(l)
		w, ok := want[f[0]+" "+f[1]]
		switch {
		case !ok:
			t.Logf("%s %s: not in %s (go test -update adds it)", f[0], f[1], path)
		case w != f[2]+" "+f[3]:
			t.Errorf("%s %s: received %s %s, %s has %s", f[0], f[1], f[2], f[3], path, w)
		default:
			compared++
		}
	}
	if compared < 3*40 {
		t.Errorf("only %d of the golden's %d lines compared", compared, len(want))
	}
}
