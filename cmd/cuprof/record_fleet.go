package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/exporters/otlp"
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/trace"
)

// Signals of record --otlp (docs/cli.md, record): spans, the per-call
// stream of before; metrics, the aggregates; tail, spans of capture
// ranges and of calls far out in their API's tail; profiles, the flame
// graph's profile sent to a profile store.
const (
	signalSpans    = "spans"
	signalMetrics  = "metrics"
	signalTail     = "tail"
	signalProfiles = "profiles"
)

var allSignals = []string{signalSpans, signalMetrics, signalTail, signalProfiles}

type fleetOptions struct {
	signals      string // --otlp-signals, "" when not given
	profileStore string // --profile-store
	interval     time.Duration
}

func fleetFlags(cmd *cobra.Command, o *fleetOptions) {
	f := cmd.Flags()
	f.StringVar(&o.signals, "otlp-signals", "", "what --otlp sends, comma-separated: spans (one per call, for short runs), metrics (histograms per API, device and wrapper frame, every interval), tail (spans of capture ranges and of calls far out in their API's tail), profiles (the flame graph's profile, to --profile-store) (default: spans, or what OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER say)")
	f.StringVar(&o.profileStore, "profile-store", "", "base URL of a Pyroscope-compatible profile store (its POST /ingest) for --otlp-signals=profiles")
	f.DurationVar(&o.interval, "otlp-interval", 0, "how often metrics are sent (default: OTEL_METRIC_EXPORT_INTERVAL, else 10s)")
}

// parseSignals reads --otlp-signals, or without it the OpenTelemetry
// variables: OTEL_TRACES_EXPORTER=none drops spans, OTEL_METRICS_EXPORTER=otlp
// adds metrics. A signal whose variable is "none" is left out with a note.
func parseSignals(flag string, note io.Writer) (map[string]bool, error) {
	traces := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	metrics := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")))
	set := map[string]bool{}
	if strings.TrimSpace(flag) == "" {
		if traces != "none" {
			set[signalSpans] = true
		} else {
			fmt.Fprintln(note, "cuprof: OTEL_TRACES_EXPORTER=none: no spans are sent")
		}
		if metrics == "otlp" {
			set[signalMetrics] = true
		}
		return set, nil
	}
	for _, s := range strings.Split(flag, ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if !slices.Contains(allSignals, s) {
			return nil, usageErrorf("unknown signal %q in --otlp-signals; use a comma-separated list of %s", s, strings.Join(allSignals, ", "))
		}
		set[s] = true
	}
	for _, s := range []string{signalSpans, signalTail} {
		if set[s] && traces == "none" {
			fmt.Fprintf(note, "cuprof: OTEL_TRACES_EXPORTER=none: no %s are sent\n", s)
			delete(set, s)
		}
	}
	if set[signalMetrics] && metrics == "none" {
		fmt.Fprintln(note, "cuprof: OTEL_METRICS_EXPORTER=none: no metrics are sent")
		delete(set, signalMetrics)
	}
	return set, nil
}

// fleet is what record --otlp runs beside the recording: the span
// streamer, the aggregator, or both.
type fleet struct {
	streamer *otlp.Streamer
	agg      *otlp.Aggregator
}

// Observe implements record.Observer: both see every event.
func (f *fleet) Observe(pid uint32, events []trace.Event, strs []string) {
	if f.streamer != nil {
		f.streamer.Observe(pid, events, strs)
	}
	if f.agg != nil {
		f.agg.Observe(pid, events, strs)
	}
}

// ObserveCode implements record.CodeObserver.
func (f *fleet) ObserveCode(code []trace.Code, strs []string) {
	if f.streamer != nil {
		f.streamer.ObserveCode(code, strs)
	}
	if f.agg != nil {
		f.agg.ObserveCode(code, strs)
	}
}

var (
	_ record.Observer     = (*fleet)(nil)
	_ record.CodeObserver = (*fleet)(nil)
)

// startFleet starts what --otlp and --otlp-signals ask for; nil when
// endpoint is "" or nothing is to be sent.
func startFleet(ctx context.Context, g *globalOptions, endpoint, protocol string, fo *fleetOptions, argv []string) (*fleet, error) {
	if endpoint == "" {
		if fo.signals != "" || fo.profileStore != "" {
			return nil, usageErrorf("--otlp-signals and --profile-store need --otlp (bare: the endpoint from OTEL_EXPORTER_OTLP_ENDPOINT)")
		}
		return nil, nil
	}
	set, err := parseSignals(fo.signals, g.info)
	if err != nil {
		return nil, err
	}
	if set[signalProfiles] && fo.profileStore == "" {
		return nil, usageErrorf("--otlp-signals=profiles needs --profile-store=URL (a Pyroscope-compatible store's base URL, e.g. http://pyroscope:4040)")
	}
	if fo.profileStore != "" && !set[signalProfiles] {
		return nil, usageErrorf("--profile-store is for --otlp-signals=profiles; add profiles to the list")
	}
	if fo.interval < 0 || (fo.interval > 0 && fo.interval < 100*time.Millisecond) {
		return nil, usageErrorf("invalid --otlp-interval %v: give 100ms or more", fo.interval)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	f := &fleet{}
	if set[signalSpans] {
		if f.streamer, err = startStreamer(ctx, endpoint, protocol, argv); err != nil {
			return nil, err
		}
	}
	if set[signalMetrics] || set[signalTail] || set[signalProfiles] {
		opts, err := otlpOptions(endpoint, protocol)
		if err != nil {
			return nil, err
		}
		opts = append(opts, otlp.WithVersion(version), otlp.WithRetryFor(5*time.Second))
		var aopts []otlp.AggregateOption
		if fo.interval > 0 {
			aopts = append(aopts, otlp.WithInterval(fo.interval))
		}
		if set[signalTail] {
			aopts = append(aopts, otlp.WithTailSpans(0))
		}
		if set[signalProfiles] {
			aopts = append(aopts, otlp.WithProfiles(fo.profileStore))
		}
		host, _ := os.Hostname()
		meta := trace.Meta{Host: host, Command: argv, CuprofVersion: version}
		var ts unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
			meta.MonoStart, meta.WallStart = ts.Nano(), time.Now().UnixNano()
		}
		f.agg, err = otlp.NewAggregator(ctx, meta, opts, aopts...)
		if errors.Is(err, otlp.ErrSDKDisabled) {
			f.agg = nil
		} else if err != nil {
			if f.streamer != nil {
				f.streamer.Close(context.Background())
			}
			return nil, err
		}
	}
	if f.streamer == nil && f.agg == nil {
		return nil, nil
	}
	return f, nil
}

// finish sends what is left and reports what was sent and lost; a
// collector problem is a warning, never a failure of the recording.
func (f *fleet) finish(w io.Writer, tracePath string) {
	if f == nil {
		return
	}
	finishStreamer(w, f.streamer, tracePath)
	if f.agg == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := f.agg.Close(ctx)
	fmt.Fprintf(w, "cuprof: otlp metrics: %d calls and %d frames aggregated, %d %s sent, %d failed (%d calls' aggregates lost), to %s\n",
		st.Calls, st.Frames, st.Exports, plural(int(st.Exports), "export", "exports"), st.FailedExports, st.LostCalls, f.agg.Endpoint())
	if t := st.TailSpans; t.Made > 0 {
		fmt.Fprintf(w, "cuprof: otlp tail spans: %d made, %d sent, %d failed, %d dropped (queue full)\n", t.Made, t.Sent, t.Failed, t.Dropped)
	}
	if p := st.Profiles; p.Sent+p.Failed > 0 {
		fmt.Fprintf(w, "cuprof: profile: %d sent, %d failed (%d stacks)\n", p.Sent, p.Failed, p.Samples)
	}
	if st.LostCalls > 0 || st.TailSpans.Failed+st.TailSpans.Dropped > 0 || st.Profiles.Failed > 0 {
		fmt.Fprintf(w, "cuprof: otlp: every event is in %s: its report, flame and lint are whole\n", tracePath)
	}
	if err != nil {
		fmt.Fprintf(w, "cuprof: warning: %v\n", err)
	} else if st.LastError != nil {
		fmt.Fprintf(w, "cuprof: warning: otlp metrics: the last export that failed: %v\n", st.LastError)
	}
}
