package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/exporters/otlp"
	"github.com/cuprof/cuprof/internal/lifecycle"
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
		Use:   "export TRACE --otlp [ENDPOINT]",
		Short: "Send a trace to an OpenTelemetry collector as OTLP spans",
		Long: `export sends every API call, NVTX range and object lifetime of TRACE as OTLP
spans (attributes: docs/attributes.md). ENDPOINT is host:port (plain text) or
an http:// or https:// URL; without it the standard OTEL_EXPORTER_OTLP_* variables
apply (default localhost:4317 for grpc, localhost:4318 for http). The trace file
is only read. Exporting the same file twice sends the same span IDs.`,
		Example: `  cuprof export run.cuprof --otlp
  cuprof export run.cuprof --otlp collector:4317
  cuprof export run.cuprof --otlp https://otlp.example.com:4318 --protocol http`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			// "--otlp host:port" parses as a bare --otlp and a second argument
			if len(args) == 2 {
				if o.otlp != otlpFromEnv {
					return fmt.Errorf("unexpected argument %q; export takes one trace file", args[1])
				}
				o.otlp = args[1]
			}
			return runExport(cmd.Context(), g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.otlp, "otlp", "", "send OTLP spans to ENDPOINT (bare: from OTEL_EXPORTER_OTLP_ENDPOINT)")
	f.Lookup("otlp").NoOptDefVal = otlpFromEnv
	f.StringVar(&o.protocol, "protocol", "", "grpc or http (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)")
	f.DurationVar(&o.timeout, "timeout", 0, "time limit of each request (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10s)")
	f.DurationVar(&o.retryFor, "retry-for", 15*time.Second, "how long to retry a request the collector fails transiently")
	f.StringArrayVar(&o.headers, "header", nil, "extra request header KEY=VALUE (repeatable)")
	return cmd
}

func runExport(ctx context.Context, g *globalOptions, o *exportOptions, path string) error {
	if o.otlp == "" {
		return errors.New("nothing to export to; pass --otlp [ENDPOINT]")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	opts := []otlp.Option{otlp.WithVersion(version), otlp.WithRetryFor(o.retryFor)}
	if o.otlp != otlpFromEnv {
		opts = append(opts, otlp.WithEndpoint(o.otlp))
	}
	if o.protocol != "" {
		p, ok := otlp.ParseProtocol(o.protocol)
		if !ok {
			return fmt.Errorf("unknown --protocol %q; use grpc or http", o.protocol)
		}
		opts = append(opts, otlp.WithProtocol(p))
	}
	if o.timeout > 0 {
		opts = append(opts, otlp.WithTimeout(o.timeout))
	}
	if len(o.headers) > 0 {
		h := map[string]string{}
		for _, kv := range o.headers {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("bad --header %q; use KEY=VALUE", kv)
			}
			h[k] = v
		}
		opts = append(opts, otlp.WithHeaders(h))
	}
	t, err := trace.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read trace: %w", err)
	}
	lifecycle.AttributeDevices(t)
	cl, err := otlp.NewClient(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close(context.WithoutCancel(ctx))
	st, err := otlp.ExportTo(ctx, cl, t, opts...)
	fmt.Fprintf(g.stdout, "spans: %d sent, %d failed, in %d requests to %s (%s)\n",
		st.Sent, st.Failed, st.Batches, cl.Endpoint(), cl.Protocol())
	if t.Loss != nil {
		fmt.Fprintf(g.stderr, "warning: the trace file is damaged; %d bytes after offset %d were not read (%s)\n",
			t.Loss.Bytes, t.Loss.Offset, t.Loss.Reason)
	}
	return err
}

// The streamer is the recorder's observer.
var _ record.Observer = (*otlp.Streamer)(nil)

// otlpStreamFlags adds record's --otlp and --otlp-protocol flags.
func otlpStreamFlags(cmd *cobra.Command, endpoint, protocol *string) {
	f := cmd.Flags()
	f.StringVar(endpoint, "otlp", "", "also stream OTLP spans while recording, to ENDPOINT given as --otlp=ENDPOINT (bare: from OTEL_EXPORTER_OTLP_ENDPOINT)")
	f.Lookup("otlp").NoOptDefVal = otlpFromEnv
	f.StringVar(protocol, "otlp-protocol", "", "grpc or http (default: OTEL_EXPORTER_OTLP_PROTOCOL, else grpc)")
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
	opts := []otlp.Option{otlp.WithVersion(version), otlp.WithRetryFor(2 * time.Second)}
	if endpoint != otlpFromEnv {
		opts = append(opts, otlp.WithEndpoint(endpoint))
	}
	if protocol != "" {
		p, ok := otlp.ParseProtocol(protocol)
		if !ok {
			return nil, fmt.Errorf("unknown --otlp-protocol %q; use grpc or http", protocol)
		}
		opts = append(opts, otlp.WithProtocol(p))
	}
	host, _ := os.Hostname()
	var ts unix.Timespec
	meta := trace.Meta{Host: host, Command: argv, CuprofVersion: version}
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
		meta.MonoStart = ts.Nano()
		meta.WallStart = time.Now().UnixNano()
	}
	return otlp.NewStreamer(ctx, meta, opts...)
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
