package otlp

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// TestResourceFromEnvironment: OTEL_RESOURCE_ATTRIBUTES adds to every
// resource (percent-decoded, overriding cuprof's value of a key), and
// OTEL_SERVICE_NAME wins over a service.name among them, as in the SDKs.
func TestResourceFromEnvironment(t *testing.T) {
	tr := readFixture(t, "small.txt")
	for _, tc := range []struct {
		service, attrs string
		want           map[string]string
	}{
		{"", "", map[string]string{"service.name": "unknown_service:python3", "telemetry.sdk.name": "cuprof", "telemetry.sdk.language": "go", "telemetry.sdk.version": "test"}},
		{"", "service.name=from-attrs,deployment.environment=prod%20eu", map[string]string{"service.name": "from-attrs", "deployment.environment": "prod eu"}},
		{"trainer", "service.name=from-attrs,team=ml,bad", map[string]string{"service.name": "trainer", "team": "ml"}},
	} {
		t.Setenv("OTEL_SERVICE_NAME", tc.service)
		t.Setenv("OTEL_RESOURCE_ATTRIBUTES", tc.attrs)
		rs, err := Collect(tr, WithVersion("test"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.SchemaUrl != SchemaURL || !strings.HasPrefix(SchemaURL, "https://opentelemetry.io/schemas/1.") {
				t.Errorf("schema URL %q, want %q", r.SchemaUrl, SchemaURL)
			}
			for _, ss := range r.ScopeSpans {
				if ss.SchemaUrl != SchemaURL {
					t.Errorf("scope schema URL %q", ss.SchemaUrl)
				}
			}
			got := map[string]string{}
			n := 0
			for _, kv := range r.Resource.Attributes {
				got[kv.Key] = kv.Value.GetStringValue()
				if kv.Key == "service.name" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%+v: %d service.name attributes", tc, n)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%+v: %s = %q, want %q", tc, k, got[k], v)
				}
			}
			if _, ok := got["bad"]; ok {
				t.Errorf("malformed pair kept")
			}
		}
	}
}

func TestHeadersFromEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "api-key=secret%3D1,x-team=ml")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-team=gpu")
	h := envHeaders()
	if h["api-key"] != "secret=1" || h["x-team"] != "gpu" || len(h) != 2 {
		t.Errorf("headers %v", h)
	}
}

// FuzzParsePairs: any environment value parses without a panic into
// non-empty, trimmed keys, one value per key, and a pair written back
// (key=escaped value) reads the same.
func FuzzParsePairs(f *testing.F) {
	for _, s := range []string{"", "a=b", "service.name=x,deployment.environment=prod%20eu", "bad,=v,k=%zz, k = v ", "a=b=c,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		keys, values := parsePairs(s)
		if len(keys) != len(values) {
			t.Fatalf("%d keys, %d values", len(keys), len(values))
		}
		for i, k := range keys {
			if k == "" || strings.TrimSpace(k) != k || strings.ContainsAny(k, ",=") {
				t.Fatalf("key %q", k)
			}
			if strings.ContainsAny(values[i], "\x00") && !strings.Contains(s, "%00") && !strings.Contains(s, "\x00") {
				t.Fatalf("value %q from %q", values[i], s)
			}
			k2, v2 := parsePairs(k + "=" + url.PathEscape(values[i]))
			if len(k2) != 1 || k2[0] != k || v2[0] != values[i] {
				t.Fatalf("round trip of %q=%q: %q %q", k, values[i], k2, v2)
			}
		}
	})
}

// TestSDKDisabled: OTEL_SDK_DISABLED=true makes NewClient and NewStreamer
// refuse with ErrSDKDisabled (nothing is sent); other values do not.
func TestSDKDisabled(t *testing.T) {
	for _, v := range []string{"true", "TRUE", " True "} {
		t.Setenv("OTEL_SDK_DISABLED", v)
		if _, err := NewClient(context.Background(), WithEndpoint("127.0.0.1:1")); !errors.Is(err, ErrSDKDisabled) {
			t.Errorf("OTEL_SDK_DISABLED=%q: NewClient %v", v, err)
		}
		if _, err := NewStreamer(context.Background(), trace.Meta{}, WithEndpoint("127.0.0.1:1")); !errors.Is(err, ErrSDKDisabled) {
			t.Errorf("OTEL_SDK_DISABLED=%q: NewStreamer %v", v, err)
		}
	}
	for _, v := range []string{"false", "1", ""} {
		t.Setenv("OTEL_SDK_DISABLED", v)
		cl, err := NewClient(context.Background(), WithEndpoint("127.0.0.1:1"))
		if err != nil {
			t.Errorf("OTEL_SDK_DISABLED=%q: %v", v, err)
			continue
		}
		cl.Close(context.Background())
	}
}
