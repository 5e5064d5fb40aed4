package collectortest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
)

// The cuprof command line against a real collector receiver: the binary is
// built from the main module once.

var (
	cuprofOnce sync.Once
	cuprofBin  string
	cuprofErr  error
)

func cuprof(t *testing.T) string {
	t.Helper()
	cuprofOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cuprof-cli-")
		if err != nil {
			cuprofErr = err
			return
		}
		cuprofBin = filepath.Join(dir, "cuprof")
		cmd := exec.Command("go", "build", "-o", cuprofBin, "./cmd/cuprof")
		cmd.Dir = "../../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			cuprofErr = err
			t.Logf("%s", out)
		}
	})
	if cuprofErr != nil {
		t.Skipf("cannot build cuprof: %v", cuprofErr)
	}
	return cuprofBin
}

// runCuprof runs the binary with only the given OTEL_* variables set.
func runCuprof(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cuprof(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return so.String(), se.String(), code
}

// resources returns service.name and one other attribute of every resource
// the sink received, and the number of spans.
func resources(sink *consumertest.TracesSink, key string) (services, values map[string]bool, spans int) {
	services, values = map[string]bool{}, map[string]bool{}
	for _, td := range sink.AllTraces() {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			a := rs.Resource().Attributes()
			if v, ok := a.Get("service.name"); ok {
				services[v.Str()] = true
			}
			if v, ok := a.Get(key); ok {
				values[v.Str()] = true
			}
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				spans += rs.ScopeSpans().At(j).Spans().Len()
			}
		}
	}
	return services, values, spans
}

// TestCLIExportFromEnvironmentAlone: export runs with only
// OTEL_EXPORTER_OTLP_ENDPOINT (and the protocol) set, and the resource
// takes OTEL_SERVICE_NAME over the service.name of OTEL_RESOURCE_ATTRIBUTES.
func TestCLIExportFromEnvironmentAlone(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(proto, func(t *testing.T) {
			g, h, sink := collector(t)
			ep := g
			if proto != "grpc" {
				ep = h
			}
			stdout, stderr, code := runCuprof(t, []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + ep,
				"OTEL_EXPORTER_OTLP_PROTOCOL=" + proto,
				"OTEL_SERVICE_NAME=trainer",
				"OTEL_RESOURCE_ATTRIBUTES=service.name=ignored,deployment.environment=ci%20run",
			}, "export", "../testdata/small.txt")
			if code != 0 {
				t.Fatalf("export: status %d\n%s%s", code, stdout, stderr)
			}
			services, envs, spans := resources(sink, "deployment.environment")
			if spans != 34 || !strings.Contains(stdout, "spans: 34 sent, 0 failed") {
				t.Errorf("collector got %d spans; stdout %q", spans, stdout)
			}
			if len(services) != 1 || !services["trainer"] || len(envs) != 1 || !envs["ci run"] {
				t.Errorf("resources: service.name %v, deployment.environment %v", services, envs)
			}
		})
	}
}

// TestCLIRecordBareOTLP: record --otlp without a value streams to the
// environment's endpoint, and the form export used to accept
// ("--otlp host:port") is refused before anything runs.
func TestCLIRecordBareOTLP(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler for the shim")
	}
	g, _, sink := collector(t)
	bin := cuprof(t)
	out := filepath.Join(t.TempDir(), "run.cuprof")
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + g, "OTEL_SERVICE_NAME=bench"}
	_, stderr, code := runCuprof(t, env, "record", "--sim", "--otlp", "-o", out, "--",
		bin, "demo", "--run-example", "-n", "3")
	if code != 0 {
		t.Fatalf("record: status %d\n%s", code, stderr)
	}
	services, _, spans := resources(sink, "")
	if spans == 0 || !services["bench"] || !strings.Contains(stderr, "cuprof: otlp: ") {
		t.Errorf("collector got %d spans from %v\n%s", spans, services, stderr)
	}

	addr := strings.TrimPrefix(g, "http://")
	before := len(sink.AllTraces())
	marker := filepath.Join(t.TempDir(), "ran")
	for _, args := range [][]string{
		{"record", "--sim", "--otlp", addr, "--", "touch", marker},
		{"export", "../testdata/small.txt", "--otlp", addr},
	} {
		_, stderr, code := runCuprof(t, nil, args...)
		if code != 2 || !strings.Contains(stderr, "give one as --otlp="+addr) {
			t.Errorf("%v: status %d, stderr %q", args, code, stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("record ran the program after an endpoint taken as the command")
	}
	if len(sink.AllTraces()) != before {
		t.Error("spans were sent")
	}
	// And the endpoint given properly works on both.
	if _, stderr, code := runCuprof(t, nil, "export", "../testdata/small.txt", "--otlp="+addr, "--otlp-protocol", "grpc"); code != 0 {
		t.Errorf("export --otlp=%s: status %d %s", addr, code, stderr)
	}
	if _, err := net.Dial("tcp", addr); err != nil {
		t.Fatal(err)
	}
}
