package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/exporters/perfetto"
	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/trace"
)

type timelineOptions struct {
	output string
	format string
}

func newTimelineCmd(g *globalOptions) *cobra.Command {
	o := &timelineOptions{}
	cmd := &cobra.Command{
		Use:   "timeline TRACE [-o FILE]",
		Short: "Write a Perfetto (or Chrome JSON) timeline of a trace",
		Long: `timeline writes TRACE as a timeline: per process, a track per thread with its
API calls and NVTX ranges as nested slices, object lifetimes on their own tracks,
bytes in use per device and pool as counters, and flows from each allocation to
its free. The default format is Perfetto protobuf: open it at ui.perfetto.dev.
--format chrome-json writes the legacy Chrome trace event JSON, for small traces.
-o - writes to standard output. Without -o the timeline is written to the
trace's name with .pftrace (.json) in the current directory, an existing file
of that name being kept as NAME.old. TRACE "-" reads standard input.`,
		Example: `  cuprof timeline run.cuprof -o run.pftrace
  cuprof timeline run.cuprof -o run.json --format chrome-json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTimeline(g, o, args[0])
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "file to write (default TRACE.pftrace; - for standard output)")
	cmd.Flags().StringVar(&o.format, "format", "", "perfetto or chrome-json (default: chrome-json for .json files, else perfetto)")
	return cmd
}

func runTimeline(g *globalOptions, o *timelineOptions, path string) error {
	format := o.format
	if format == "" {
		format = "perfetto"
		if strings.HasSuffix(strings.ToLower(o.output), ".json") {
			format = "chrome-json"
		}
	}
	newWriter := perfetto.NewWriter
	ext := ".pftrace"
	switch format {
	case "perfetto", "proto", "pftrace":
	case "chrome-json", "json":
		newWriter, ext = perfetto.NewChromeJSONWriter, ".json"
	default:
		return usageErrorf("unknown --format %q; use perfetto or chrome-json", format)
	}
	if o.output != "" {
		if err := checkOutput(g, o.output, path); err != nil {
			return err
		}
	}
	// The trace is read as a stream and the timeline written as the
	// analysis replays it: what is held is what is open, not the events.
	f, err := openTrace(g, path, warnAll)
	if err != nil {
		return err
	}
	defer f.Close()
	out := o.output
	if out == "" {
		if out, err = defaultOutput(g, path, ext); err != nil {
			return err
		}
	}
	var readErr error
	err = writeOutput(g, out, func(w io.Writer) error {
		tw := newWriter(w, f.Tables())
		total := f.NumEvents()
		// the writer's goroutine uses the second core: a merge ahead on a
		// goroutine of its own made it slower (bench/memory/results/
		// 2026-12-02k-pipeline)
		events := f.NewEventReader(trace.Sequential())
		pr := newReadProgress(g, "timeline", total, false, out == "-")
		tk := analysis.NewTracker(f.Tables(), tw.Options()...)
		// the size is said once a sixteenth of the events is written
		at := max(min(total, 1<<16), total/16)
		var n int64
		// the sequence called with the loop's body as a function, not
		// ranged over: a range's body checks the loop's state each event
		pr.wrap(events.All())(func(e *trace.Event) bool {
			tk.Step(e)
			if n++; n == at {
				sayTimelineSize(g, pr, ext, tw.Estimate(n, total))
			}
			return true
		})
		tk.Finish()
		pr.done()
		if readErr = events.Err(); readErr != nil {
			tw.Close() // its goroutines end; what it wrote is dropped with the output
			return readErr
		}
		return tw.Close()
	}, output.Direct()) // hundreds of MB never read back: past the page cache
	if readErr != nil {
		return traceError(path, readErr)
	}
	if err != nil {
		return err
	}
	if out != "-" {
		g.tell(g.info, "cuprof: open it at https://ui.perfetto.dev\n")
	}
	return nil
}

// The sizes past which timeline says how large its output will be: a
// Perfetto timeline past largeTimeline; Chrome JSON, which viewers load
// badly, past largeJSONTimeline with a warning. Variables for tests.
var (
	largeTimeline     int64 = 256 << 20
	largeJSONTimeline int64 = perfetto.LargeJSON
)

// sayTimelineSize says, when it is large, the size a timeline will have.
func sayTimelineSize(g *globalOptions, pr *readProgress, ext string, n int64) {
	mb := (n + 500_000) / 1_000_000
	switch {
	case ext == ".json" && n > largeJSONTimeline:
		pr.done()
		fmt.Fprintf(g.info, "cuprof: warning: the JSON timeline will be about %d MB; viewers load JSON past ~100 MB badly, use --format perfetto\n", mb)
	case ext != ".json" && n > largeTimeline:
		pr.done()
		fmt.Fprintf(g.info, "cuprof: the timeline will be about %d MB\n", mb)
	}
}

// same reports whether two paths name one file.
func same(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(sa, sb)
	}
	aa, _ := filepath.Abs(a)
	ab, _ := filepath.Abs(b)
	return aa == ab
}
