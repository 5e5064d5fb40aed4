package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/exporters/perfetto"
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
	var write func(io.Writer, *trace.Trace) error
	ext := ".pftrace"
	switch format {
	case "perfetto", "proto", "pftrace":
		write = perfetto.Write
	case "chrome-json", "json":
		write, ext = perfetto.WriteChromeJSON, ".json"
	default:
		return usageErrorf("unknown --format %q; use perfetto or chrome-json", format)
	}
	if o.output != "" {
		if err := checkOutput(g, o.output, path); err != nil {
			return err
		}
	}
	t, err := loadTrace(g, path, warnAll)
	if err != nil {
		return err
	}
	if ext == ".json" {
		// analysed once: the size is said before the write
		c := perfetto.NewChromeJSON(t)
		if n := c.Size(); n > perfetto.LargeJSON {
			fmt.Fprintf(g.info, "cuprof: warning: the JSON timeline will be about %d MB; viewers load JSON past ~100 MB badly, use --format perfetto\n", n>>20)
		}
		write = func(w io.Writer, _ *trace.Trace) error { return c.Write(w) }
	}
	out := o.output
	if out == "" {
		if out, err = defaultOutput(g, path, ext); err != nil {
			return err
		}
	}
	if err := writeOutput(g, out, func(w io.Writer) error { return write(w, t) }); err != nil {
		return err
	}
	if out != "-" {
		g.tell(g.stdout, "wrote %s; open it at https://ui.perfetto.dev\n", out)
	}
	return nil
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
