package main

import (
	"errors"
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
		Use:   "timeline TRACE -o FILE",
		Short: "Write a Perfetto (or Chrome JSON) timeline of a trace",
		Long: `timeline writes TRACE as a timeline: per process, a track per thread with its
API calls and NVTX ranges as nested slices, object lifetimes on their own tracks,
bytes in use per device and pool as counters, and flows from each allocation to
its free. The default format is Perfetto protobuf: open it at ui.perfetto.dev.
--format chrome-json writes the legacy Chrome trace event JSON, for small traces.
-o - writes to standard output.`,
		Example: `  cuprof timeline run.cuprof -o run.pftrace
  cuprof timeline run.cuprof -o run.json --format chrome-json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTimeline(g, o, args[0])
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "file to write (- for standard output)")
	cmd.Flags().StringVar(&o.format, "format", "", "perfetto or chrome-json (default: chrome-json for .json files, else perfetto)")
	return cmd
}

func runTimeline(g *globalOptions, o *timelineOptions, path string) error {
	if o.output == "" {
		return errors.New("no output file; pass -o FILE (or -o - for standard output)")
	}
	format := o.format
	if format == "" {
		format = "perfetto"
		if strings.HasSuffix(strings.ToLower(o.output), ".json") {
			format = "chrome-json"
		}
	}
	var write func(io.Writer, *trace.Trace) error
	switch format {
	case "perfetto", "proto", "pftrace":
		write = perfetto.Write
	case "chrome-json", "json":
		write = perfetto.WriteChromeJSON
	default:
		return fmt.Errorf("unknown --format %q; use perfetto or chrome-json", format)
	}
	if o.output != "-" {
		if same(o.output, path) {
			return fmt.Errorf("output %s is the trace itself; choose another -o", o.output)
		}
	}
	t, err := trace.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read trace: %w", err)
	}
	if t.Loss != nil {
		fmt.Fprintf(g.stderr, "warning: the trace file is damaged; %d bytes after offset %d were not read (%s); the timeline covers what was read\n",
			t.Loss.Bytes, t.Loss.Offset, t.Loss.Reason)
	}
	if format != "perfetto" && format != "proto" && format != "pftrace" {
		if n := perfetto.EstimateChromeJSON(t); n > perfetto.LargeJSON {
			fmt.Fprintf(g.stderr, "warning: the JSON timeline will be about %d MB; viewers load JSON past ~100 MB badly, use --format perfetto\n", n>>20)
		}
	}
	if o.output == "-" {
		return write(g.stdout, t)
	}
	return writeFileAtomic(o.output, func(w io.Writer) error { return write(w, t) })
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

// writeFileAtomic writes path through a private temporary file in its
// directory, renamed into place when complete; the file is 0600.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".cuprof-timeline-*")
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
