package main

import (
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/trace"
)

// statsTop is how many APIs, frames or ranges record --stats lists.
const statsTop = 5

// writeRecordStats is record --stats: what nsys prints at the end of a
// run, from the trace just written, read back as a stream through the same
// report and lint the commands use. A trace that cannot be read is a
// warning: the recording itself succeeded.
func writeRecordStats(g *globalOptions, path string) {
	f, err := openTrace(g, path, 0)
	if err != nil {
		fmt.Fprintf(g.info, "cuprof: warning: --stats: %v\n", err)
		return
	}
	defer f.Close()
	rd := f.NewEventReader()
	r := report.BuildFrom(f.Tables(), rd.All(), report.Options{})
	if err := rd.Err(); err != nil {
		fmt.Fprintf(g.info, "cuprof: warning: --stats: %v\n", traceError(path, err))
		return
	}
	fs := lint.Stream(f.Tables(), func() iter.Seq[*trace.Event] { return f.NewEventReader().All() })
	writeStats(g.info, path, r, fs)
}

// writeStats prints the summary of r and the findings fs.
func writeStats(w io.Writer, path string, r *report.Report, fs []lint.Finding) {
	fmt.Fprintf(w, "cuprof: stats of %s: %d calls, %d %s, %s\n", path, r.Meta.Calls, len(r.Processes),
		plural(len(r.Processes), "process", "processes"), quantity.Duration(float64(r.Meta.SpanNs)))
	if len(r.APIs) > 0 {
		fmt.Fprintln(w, "  top driver APIs by time:")
		for i, a := range r.APIs {
			if i == statsTop {
				fmt.Fprintf(w, "    ... %d more (cuprof report %s)\n", len(r.APIs)-statsTop, path)
				break
			}
			fmt.Fprintf(w, "    %-28s %7d calls %9s %5.1f%%  median %s\n", a.API, a.Count,
				quantity.Duration(float64(a.TotalNs)), a.Percent, quantity.Duration(float64(a.MedianNs)))
		}
	}
	switch {
	case len(r.Frames) > 0:
		fmt.Fprintln(w, "  top Python frames by self time:")
		for i, fr := range r.Frames {
			if i == statsTop {
				break
			}
			fmt.Fprintf(w, "    %-40s %7d calls  self %9s  inclusive %9s\n", fr.Frame, fr.Calls,
				quantity.Duration(float64(fr.SelfNs)), quantity.Duration(float64(fr.InclusiveNs)))
		}
	case len(r.Ranges) > 0:
		fmt.Fprintln(w, "  top ranges by time:")
		for i, rg := range r.Ranges {
			if i == statsTop {
				break
			}
			fmt.Fprintf(w, "    %-40s %7d times %9s\n", rg.Name, rg.Count, quantity.Duration(float64(rg.TotalNs)))
		}
	}
	fmt.Fprintf(w, "  drops: %d %s", r.Drops.Total, plural(int(r.Drops.Total), "event", "events"))
	if r.Drops.Total == 0 {
		fmt.Fprint(w, " (none lost)")
	}
	fmt.Fprintln(w)
	s := lint.Summarize(fs)
	if s.Findings == 0 {
		fmt.Fprintln(w, "  lint: no findings")
		return
	}
	var rules []string
	seen := map[string]bool{}
	for _, f := range fs {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			rules = append(rules, f.Rule)
		}
	}
	fmt.Fprintf(w, "  lint: %d %s (%d %s, %d %s, %d info; %s), estimated cost %s: cuprof lint %s\n",
		s.Findings, plural(s.Findings, "finding", "findings"), s.Errors, plural(s.Errors, "error", "errors"),
		s.Warnings, plural(s.Warnings, "warning", "warnings"), s.Infos, strings.Join(rules, ", "),
		quantity.Duration(float64(s.CostNs)), path)
}
