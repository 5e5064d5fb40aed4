package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/exporters/otlp"
	_ "github.com/cuprof/cuprof/internal/grpcgzip" // gRPC's gzip at the OTLP/HTTP sender's level
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/trace"
)

// otlpFromEnv is the value of a bare --otlp: the endpoint comes from
// OTEL_EXPORTER_OTLP_* or the default.
const otlpFromEnv = "env"

type exportOptions struct {
	otlp     string
	protocol string
	timeout  time.Duration
	retryFor time.Duration
	headers  []string
}

func newExportCmd(g *globalOptions) *cobra.Command {
	o := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export TRACE [--otlp[=ENDPOINT]]",
		Short: "Send a trace to an OpenTelemetry collector as OTLP spans",
		Long: `export sends every API call, NVTX range and object lifetime of TRACE as OTLP
spans (attributes: docs/attributes.md). ENDPOINT is host:port (plain text) or
an http:// or https:// URL, given as --otlp=ENDPOINT. Without it (a bare --otlp,
or no --otlp at all) the standard OTEL_EXPORTER_OTLP_* variables apply, as in
the OpenTelemetry SDKs: endpoint, protocol, headers, timeout, compression,
certificates, insecure (default localhost:4317 for grpc, localhost:4318 for
http; uncompressed unless OTEL_EXPORTER_OTLP_COMPRESSION=gzip, as in the SDKs).
OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES set resource attributes.
TRACE "-" reads standard input; the trace file is only read. Exporting the
same file twice sends the same span IDs.`,
		Example: `  cuprof export run.cuprof --otlp
  OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317 cuprof export run.cuprof
  cuprof export run.cuprof --otlp=collector:4317
  cuprof export run.cuprof --otlp=https://otlp.example.com:4318 --otlp-protocol http`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && o.otlp == otlpFromEnv && looksLikeEndpoint(args[1]) {
				return usageErrorf("unexpected argument %q: a bare --otlp takes its endpoint from OTEL_EXPORTER_OTLP_ENDPOINT; give one as --otlp=%s", args[1], args[1])
			}
			return usageArgs(cobra.ExactArgs(1))(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.Context(), g, o, args[0])
		},
	}
	f := cmd.Flags()
	otlpFlags(cmd, &o.otlp, &o.protocol, "send OTLP spans to ENDPOINT, given as --otlp=ENDPOINT (bare: from OTEL_EXPORTER_OTLP_ENDPOINT)")
	f.StringVar(&o.protocol, "protocol", "", "deprecated: use --otlp-protocol")
	f.MarkHidden("protocol")
	f.DurationVar(&o.timeout, "timeout", 0, "time limit of each request (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10s)")
	f.DurationVar(&o.retryFor, "retry-for", 15*time.Second, "how long to retry a request the collector fails transiently")
	f.StringArrayVar(&o.headers, "header", nil, "extra request header KEY=VALUE (repeatable; added to OTEL_EXPORTER_OTLP_HEADERS)")
	return cmd
}

// endpointFromEnv reports whether the environment names an OTLP endpoint.
func endpointFromEnv() bool {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if strings.TrimSpace(os.Getenv(v)) != "" {
			return true
		}
	}
	return false
}

// looksLikeEndpoint reports whether s is a URL or host:port, which cannot be
// a trace file or a program meant to be run.
func looksLikeEndpoint(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	host, port, ok := strings.Cut(s, ":")
	if !ok || host == "" || strings.ContainsAny(host, "/") {
		return false
	}
	_, err := strconv.ParseUint(port, 10, 16)
	return err == nil
}

// otlpOptions are the client options of --otlp and --otlp-protocol.
func otlpOptions(endpoint, protocol string) ([]otlp.Option, error) {
	var opts []otlp.Option
	if endpoint != "" && endpoint != otlpFromEnv {
		opts = append(opts, otlp.WithEndpoint(endpoint))
	}
	if protocol != "" {
		p, ok := otlp.ParseProtocol(protocol)
		if !ok {
			return nil, usageErrorf("unknown --otlp-protocol %q; use grpc or http", protocol)
		}
		opts = append(opts, otlp.WithProtocol(p))
	}
	return opts, nil
}

func runExport(ctx context.Context, g *globalOptions, o *exportOptions, path string) error {
	if o.otlp == "" {
		if !endpointFromEnv() {
			return usageErrorf("nothing to export to; pass --otlp=ENDPOINT, or --otlp with OTEL_EXPORTER_OTLP_ENDPOINT set")
		}
		o.otlp = otlpFromEnv
	}
	if ctx == nil {
		ctx = context.Background()
	}
	opts, err := otlpOptions(o.otlp, o.protocol)
	if err != nil {
		return err
	}
	opts = append(opts, otlp.WithVersion(version), otlp.WithRetryFor(o.retryFor))
	if o.timeout > 0 {
		opts = append(opts, otlp.WithTimeout(o.timeout))
	}
	if len(o.headers) > 0 {
		h := map[string]string{}
		for _, kv := range o.headers {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usageErrorf("bad --header %q; use KEY=VALUE", kv)
			}
			h[k] = v
		}
		opts = append(opts, otlp.WithHeaders(h))
	}
	// The trace is read as a stream, twice: once for its identity (the
	// seed of the span IDs), once to build the spans, sent as they fill.
	// What is in memory is the batches being built and sent (up to
	// --parallel of about 3 MB encoded, several times that as messages);
	// a soft memory limit makes the collector reclaim each one soon after
	// it is sent, instead of letting the heap double first.
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(exportMemoryLimit))
	}
	f, err := openTrace(g, path, warnAll)
	if err != nil {
		return err
	}
	defer f.Close()
	cl, err := otlp.NewClient(ctx, opts...)
	if errors.Is(err, otlp.ErrSDKDisabled) {
		fmt.Fprintf(g.info, "cuprof: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer cl.Close(context.WithoutCancel(ctx))
	var readErr error
	pr := newReadProgress(g, "export", f.NumEvents(), true, false)
	defer pr.done()
	events := func(ro ...trace.ReadOption) iter.Seq[*trace.Event] {
		r := f.NewEventReader(ro...)
		seq := pr.wrap(r.All())
		// seq is handed yield itself, not ranged over: a loop here would
		// be one more call per event, in each of the two passes
		return func(yield func(*trace.Event) bool) {
			seq(yield)
			if err := r.Err(); err != nil && readErr == nil {
				readErr = err
			}
		}
	}
	// The first pass, for the span IDs' seed, merges the events on this
	// goroutine (trace.Sequential): a hash of each event is all it does
	// with them, and the read pipeline's hand-over of blocks to it from
	// the other core cost more than it took off (at 5M events the pass
	// took 0.124 s and 0.124 CPU s sequential, 0.135 s and 0.137 CPU s
	// pipelined). The second, which builds the spans, keeps the pipeline.
	opts = append(opts, otlp.WithIdentity(otlp.IdentityOf(f.Tables(), events(trace.Sequential()))))
	st, err := otlp.ExportStream(ctx, cl, f.Tables(), func() iter.Seq[*trace.Event] { return events() }, opts...)
	pr.done()
	if readErr != nil {
		return traceError(path, readErr)
	}
	fmt.Fprintf(g.stdout, "spans: %d sent, %d failed, in %d %s to %s (%s)\n",
		st.Sent, st.Failed, st.Batches, plural(st.Batches, "request", "requests"), cl.Endpoint(), cl.Protocol())
	return err
}

// exportMemoryLimit is the soft memory limit of cuprof export (GOMEMLIMIT
// overrides it): about what its batches in flight need, so that its peak
// stays within 200 MB.
const exportMemoryLimit = 150 << 20

// The streamer is the recorder's observer.
var _ record.Observer = (*otlp.Streamer)(nil)

// otlpFlags adds --otlp[=ENDPOINT] and --otlp-protocol, the same on record
// and export. A bare --otlp never takes the next argument.
func otlpFlags(cmd *cobra.Command, endpoint, protocol *string, usage string) {
	f := cmd.Flags()
	f.StringVar(endpoint, "otlp", "", usage)
	f.Lookup("otlp").NoOptDefVal = otlpFromEnv
	f.StringVar(protocol, "otlp-protocol", "", "OTLP transport: grpc or http (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)")
}

// startStreamer starts the live OTLP exporter of cuprof record; nil when
// endpoint is "". It never blocks the recording: see otlp.Streamer.
func startStreamer(ctx context.Context, endpoint, protocol string, argv []string) (*otlp.Streamer, error) {
	if endpoint == "" {
		return nil, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	opts, err := otlpOptions(endpoint, protocol)
	if err != nil {
		return nil, err
	}
	opts = append(opts, otlp.WithVersion(version), otlp.WithRetryFor(2*time.Second))
	host, _ := os.Hostname()
	var ts unix.Timespec
	meta := trace.Meta{Host: host, Command: argv, CuprofVersion: version}
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
		meta.MonoStart = ts.Nano()
		meta.WallStart = time.Now().UnixNano()
	}
	s, err := otlp.NewStreamer(ctx, meta, opts...)
	if errors.Is(err, otlp.ErrSDKDisabled) {
		return nil, nil // record says so (otlpDisabledNote) and records without streaming
	}
	return s, err
}

// otlpDisabledNote says, for record --otlp, that OTEL_SDK_DISABLED stops the
// streaming ("" when it does not).
func otlpDisabledNote(endpoint string) string {
	if endpoint == "" {
		return ""
	}
	if otlp.SDKDisabled() {
		return fmt.Sprintf("cuprof: %v; recording without streaming", otlp.ErrSDKDisabled)
	}
	return ""
}

// finishStreamer sends what is left (waiting at most a few seconds) and
// reports the counts; a collector problem is a warning, never a failure of
// the recording.
func finishStreamer(w io.Writer, s *otlp.Streamer, trace string) {
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := s.Close(ctx)
	fmt.Fprintf(w, "cuprof: otlp: %d spans sent, %d dropped (queue full), %d failed, to %s\n",
		st.Sent, st.Dropped, st.Failed, s.Endpoint())
	if st.Dropped+st.Failed > 0 {
		fmt.Fprintf(w, "cuprof: otlp: every event is in %s; send it again with: cuprof export %s --otlp=%s\n",
			trace, trace, s.Endpoint())
	}
	if err != nil {
		fmt.Fprintf(w, "cuprof: warning: %v\n", err)
	}
}
