package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/cbuild"
	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/internal/record"
)

type recordOptions struct {
	output   string
	sim      bool
	buffer   string
	timing   string
	whenFull string
	onExit   string
	poll     time.Duration
	progress bool
	stats    bool // record_stats.go
	// live OTLP export (cmd/cuprof/export.go)
	otlp, otlpProtocol string
	fleet              fleetOptions   // record_fleet.go
	python             pythonOptions  // record_python.go
	capture            captureOptions // record_capture.go
	passThrough        string         // API names whose calls pass through unrecorded
}

func newRecordCmd(g *globalOptions) *cobra.Command {
	o := &recordOptions{}
	cmd := &cobra.Command{
		Use:   "record [-o FILE] [--sim] [--buffer SIZE] -- CMD [ARGS...]",
		Short: "Run a program and record its CUDA driver calls and NVTX ranges",
		Long: `record runs CMD with cuprof's interposer shim preloaded and writes a .cuprof
trace of every wrapped driver call (contexts, streams, events, allocations,
pools, synchronizations, error checks, launches, copies) and NVTX range of the
program and of every process it starts. The exit status is the program's.

Without a CUDA driver on the machine (or with --sim) the program runs against
cuprof's simulated driver.`,
		Example: `  cuprof record -- python3 train.py
  cuprof record -o run.cuprof --buffer 256M -- ./bench`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("missing command: use cuprof record [flags] -- CMD ARGS")
			}
			if o.otlp == otlpFromEnv && looksLikeEndpoint(args[0]) {
				return usageErrorf("%q is not a program to run: a bare --otlp takes its endpoint from OTEL_EXPORTER_OTLP_ENDPOINT; give one as --otlp=%s", args[0], args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRecord(cmd, g, o, args)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "trace file to write (default cuprof-CMD-TIMESTAMP.cuprof)")
	cmd.Flags().BoolVar(&o.sim, "sim", false, "run against the simulated CUDA driver")
	cmd.Flags().BoolVar(&o.stats, "stats", false, "print a summary when the program has ended: top driver APIs and Python frames (or ranges), drops, lint findings")
	cmd.Flags().StringVar(&o.buffer, "buffer", "64M", "ring buffer per process (bytes, or with K, M, G)")
	cmd.Flags().BoolVar(&o.progress, "progress", false, "draw a live status line even when the program writes to the same terminal (its output then passes through a pseudo-terminal)")
	cmd.Flags().StringVar(&o.timing, "timing", "both", "clock reads per call: both (start and end) or end (half the overhead, no durations)")
	cmd.Flags().StringVar(&o.whenFull, "when-full", "wait", "when a ring is full: wait (the program waits for the recorder, nothing is dropped) or drop (events are dropped and counted, the program is never slowed)")
	cmd.Flags().StringVar(&o.onExit, "on-recorder-exit", "stop", "if cuprof itself dies (killed, out of memory): stop (the program gets SIGTERM) or continue (it runs on untraced); what was recorded is kept beside the output for cuprof recover")
	// How often the rings are drained: for bench/capture/hypotheses.sh.
	cmd.Flags().DurationVar(&o.poll, "poll-interval", 5*time.Millisecond, "how often the recorder drains the rings")
	_ = cmd.Flags().MarkHidden("poll-interval")
	otlpFlags(cmd, &o.otlp, &o.otlpProtocol, "also stream OTLP spans while recording, to ENDPOINT given as --otlp=ENDPOINT (bare: from OTEL_EXPORTER_OTLP_ENDPOINT)")
	fleetFlags(cmd, &o.fleet)
	pythonFlags(cmd, &o.python)
	captureFlags(cmd, &o.capture)
	cmd.Flags().StringVar(&o.passThrough, "pass-through", "",
		"hand calls of these driver APIs (comma-separated base names, e.g. cuCtxGetDevice) to the driver unrecorded, counting them per API; only APIs that query or use objects, not those that create, destroy or switch them")
	return cmd
}

// parseSize reads "65536", "256K", "64M", "1G" (powers of 1024).
func parseSize(s string) (uint64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := uint64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || v == 0 || v > math.MaxUint64/mult {
		return 0, usageErrorf("invalid --buffer %q: give a size such as 65536, 256K or 64M", s)
	}
	return v * mult, nil
}

func runRecord(cmd *cobra.Command, g *globalOptions, o *recordOptions, args []string) error {
	buffer, err := parseSize(o.buffer)
	if err != nil {
		return err
	}
	if o.timing != "both" && o.timing != "end" {
		return usageErrorf("invalid --timing %q: use both or end", o.timing)
	}
	whenFull, err := record.ParseWhenFull(o.whenFull)
	if err != nil {
		return usageErrorf("%v", err)
	}
	onExit, err := record.ParseOnRecorderExit(o.onExit)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if o.poll < 100*time.Microsecond || o.poll > time.Second {
		return usageErrorf("invalid --poll-interval %v: give 100us to 1s", o.poll)
	}
	// The output is checked before the program runs: a recording must not
	// be made only to find it cannot be written.
	out := o.output
	if out == "" {
		out = defaultRecordName(args[0], recordNow())
	}
	out, claimed, err := jobOutput(out, processNameEnv(), func(f string, a ...any) { fmt.Fprintf(g.info, f, a...) })
	if err != nil {
		return err
	}
	if !claimed && o.output == "" {
		if out, err = claimDefaultName(g, out); err != nil {
			return err
		}
		claimed = true
	}
	if claimed {
		defer output.Unclaim(out) // only while still empty: nothing was written
	} else if err := checkRecordOutput(g, out); err != nil {
		return err
	}
	opts := []record.Option{
		record.WithOutput(out),
		record.WithBuffer(buffer),
		record.WithSim(o.sim),
		record.WithEndOnlyTiming(o.timing == "end"),
		record.WithWhenFull(whenFull),
		record.WithOnRecorderExit(onExit),
		record.WithPollInterval(o.poll),
		record.WithVersion(version),
		record.WithForce(g.force),
		record.WithNotices(g.info),
		record.WithClaimedOutput(claimed),
	}
	opts = append(opts, o.python.options()...)
	capOpt, err := o.capture.options()
	if err != nil {
		return err
	}
	opts = append(opts, capOpt)
	if o.passThrough != "" {
		apis, err := record.ParsePassThrough(o.passThrough)
		if err != nil {
			return usageErrorf("%v", err)
		}
		opts = append(opts, record.WithPassThrough(apis))
	}
	if err := record.CheckOptions(opts...); err != nil {
		return &usageError{err} // a bad flag value: --python, --python-scope, --when-full ...
	}
	if _, err := findProgram(args[0]); err != nil {
		return err
	}
	if note := launcherNote(args); note != "" {
		fmt.Fprintln(g.info, note)
	}
	if note := otlpDisabledNote(o.otlp); note != "" {
		fmt.Fprintln(g.info, note)
	}
	streaming, err := startFleet(cmd.Context(), g, o.otlp, o.otlpProtocol, &o.fleet, args)
	if err != nil {
		return err
	}
	if streaming != nil {
		opts = append(opts, record.WithObserver(streaming))
	}
	// said once the recording is set up, right before the program starts:
	// a set-up that fails says only its error
	opts = append(opts, record.WithOnStart(func() {
		fmt.Fprintf(g.info, "cuprof: recording %s into %s (interrupt to stop; the trace is kept)\n", commandLine(args), out)
	}))
	if f, ok := g.stderr.(*os.File); ok && isTerminal(f) && !g.quiet {
		var once sync.Once
		cbuild.OnBuild = func(string) {
			once.Do(func() {
				fmt.Fprintln(g.stderr, "cuprof: compiling the capture shim for this version of cuprof (first run only, a few seconds)")
			})
		}
		defer func() { cbuild.OnBuild = nil }()
	}
	status, stdout, stderr := startStatus(g, o.progress)
	opts = append(opts, record.WithStdio(g.stdin, stdout, stderr))
	if status != nil {
		opts = append(opts, record.WithProgress(status.update))
	}
	res, err := record.Run(cmd.Context(), args, opts...)
	status.close()
	if res != nil && res.Rescued != "" {
		out = res.Rescued
	}
	streaming.finish(g.info, out)
	if err != nil {
		return err
	}
	summary(g.info, res, out)
	if o.stats && res.Rescued == "" && !g.quiet {
		writeRecordStats(g, out)
	}
	if res.Rescued != "" {
		fmt.Fprintf(g.stderr, "cuprof: could not write %s (%v); the recording was kept in %s instead\n",
			o.outputOr(out), res.WriteErr, res.Rescued)
	}
	if res.Events == 0 {
		fmt.Fprintln(g.info, "cuprof: "+noEventsReason(args[0], res))
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}

func summary(w io.Writer, res *record.Result, out string) {
	fmt.Fprintf(w, "cuprof: %d %s from %d %s written to %s", res.Events, plural(res.Events, "event", "events"),
		res.Processes, plural(res.Processes, "process", "processes"), out)
	other := uint64(0)
	for _, n := range res.OtherDrops {
		other += n
	}
	if d := res.Drops - res.SpillDrops - res.BadRecords - other; d > 0 {
		fmt.Fprintf(w, "; %d %s dropped (buffer full: raise --buffer, or --when-full wait)", d, plural(int(d), "event", "events"))
	}
	for _, reason := range slices.Sorted(maps.Keys(res.OtherDrops)) {
		n := res.OtherDrops[reason]
		if reason == record.DropNestedCall {
			fmt.Fprintf(w, "; %d driver %s made inside a wrapped call went to the driver unrecorded (a signal handler's, or another tool's callback such as CUPTI's)",
				n, plural(int(n), "call", "calls"))
			continue
		}
		switch reason {
		case record.DropNameNoRoom:
			fmt.Fprintf(w, "; %d %s did not fit the ring's 1 MiB string area: their events are recorded without a name (fewer distinct NVTX names)",
				n, plural(int(n), "name", "names"))
			continue
		case record.DropNameCut:
			fmt.Fprintf(w, "; %d %s longer than 65,535 bytes cut to their first 65,535", n, plural(int(n), "name", "names"))
			continue
		}
		fmt.Fprintf(w, "; %d %s dropped (%s)", n, plural(int(n), "event", "events"), reason)
	}
	if d := res.SpillDrops; d > 0 {
		fmt.Fprintf(w, "; %d %s lost to a full disk beside the output (free some space)", d, plural(int(d), "event", "events"))
	}
	if d := res.BadRecords; d > 0 {
		fmt.Fprintf(w, "; %d torn or bogus ring %s dropped", d, plural(int(d), "record", "records"))
	}
	if n := res.RinglessChildren; n > 0 {
		fmt.Fprintf(w, "; %d child %s could not record (a changed user, after setuid or setpriv, cannot write the ring directory): their calls until they exec'd or exited are counted as dropped, those of programs they exec'd are not seen (docs/capture.md, \"Faults\")",
			n, plural(int(n), "process", "processes"))
	}
	if res.FullWaits > 0 {
		fmt.Fprintf(w, "; threads waited %d %s for room in the ring (%s in all: raise --buffer to wait less)",
			res.FullWaits, plural(int(res.FullWaits), "time", "times"), res.FullWait.Round(time.Millisecond))
	}
	fmt.Fprintln(w)
}

// outputOr is the -o the user gave, else def.
func (o *recordOptions) outputOr(def string) string {
	if o.output != "" {
		return o.output
	}
	return def
}

// noEventsReason says why a recording has no events: the program could not
// be interposed on, or it never called the driver.
func noEventsReason(prog string, res *record.Result) string {
	path, err := exec.LookPath(prog)
	if err == nil {
		switch elfLinkage(path) {
		case linkStatic:
			return fmt.Sprintf("no CUDA driver calls recorded: %s is statically linked, so the shim (an LD_PRELOAD library) could not be loaded into it; record a dynamically linked build", prog)
		case linkSetuid:
			return fmt.Sprintf("no CUDA driver calls recorded: %s is set-user-ID, and the loader ignores LD_PRELOAD for it", prog)
		}
	}
	if res.Processes == 0 {
		return fmt.Sprintf("no CUDA driver calls recorded: no process of %s loaded the CUDA driver (libcuda.so.1) and called it; check that it uses the GPU when run like this (a CPU fallback, or a framework that found no device, makes no driver call)", prog)
	}
	return "no CUDA driver calls recorded: the program's processes loaded the shim but made no driver call it wraps"
}

type linkage int

const (
	linkDynamic linkage = iota
	linkStatic
	linkSetuid
)

// elfLinkage tells a statically linked or set-user-ID ELF program (which
// LD_PRELOAD cannot reach) from the rest; scripts and unreadable files count
// as dynamic.
func elfLinkage(path string) linkage {
	if st, err := os.Stat(path); err == nil && st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 && os.Geteuid() != 0 {
		return linkSetuid
	}
	if record.StaticELF(path) {
		return linkStatic
	}
	return linkDynamic
}

// commandLine is argv for a message, shortened past 60 characters.
func commandLine(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
