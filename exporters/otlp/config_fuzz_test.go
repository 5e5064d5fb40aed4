package otlp

import (
	"strings"
	"testing"
)

// FuzzConfigFromEnv: the protocol and endpoint read from the
// OpenTelemetry variables are one of the two protocols or a one-line error
// naming the value and the fix, and a non-empty endpoint; nothing panics.
func FuzzConfigFromEnv(f *testing.F) {
	f.Add("grpc", "", "")
	f.Add(" HTTP/protobuf ", "http://collector:4318/", "")
	f.Add("http", "", "https://x.example/v1/traces")
	f.Add("thrift", "localhost:4317", "")
	f.Add("\n", "\t", " ")
	f.Fuzz(func(t *testing.T, protocol, endpoint, tracesEndpoint string) {
		if strings.ContainsRune(protocol+endpoint+tracesEndpoint, 0) {
			return // not a value an environment can hold
		}
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tracesEndpoint)
		c := newConfig(nil)
		p, err := c.resolvedProtocol()
		if err != nil {
			if msg := err.Error(); strings.TrimSpace(protocol) == "" || strings.Count(msg, "\n") > strings.Count(protocol, "\n") ||
				!strings.Contains(msg, "use grpc or http/protobuf") {
				t.Fatalf("protocol %q: %v", protocol, err)
			}
			return
		}
		if p != ProtocolGRPC && p != ProtocolHTTP {
			t.Fatalf("protocol %q read as %q", protocol, p)
		}
		if want, ok := ParseProtocol(protocol); strings.TrimSpace(protocol) != "" && (!ok || want != p) {
			t.Fatalf("protocol %q read as %q, ParseProtocol says %q %v", protocol, p, want, ok)
		}
		if c.displayEndpoint(p) == "" {
			t.Fatalf("no endpoint for %q %q", endpoint, tracesEndpoint)
		}
	})
}
