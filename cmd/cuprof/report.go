package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/report"
)

type reportOptions struct {
	format string
	raw    bool
	table  string // report_tables.go
	output string
}

func newReportCmd(g *globalOptions) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report TRACE",
		Short: "Summarize a trace: per-API times, objects, threads, ranges, drops",
		Long: `report prints the tables of a trace: every driver API with its count, total,
share of time, mean, median, p99, min, max and errors (like nsys' cuda_api_sum),
per-category totals, per-device tables when calls of more than one device
appear, an object lifecycle table per kind (created, destroyed, alive at exit,
lifetime median/p99, churn = created and destroyed within 1 ms), processes and
threads, NVTX ranges, dropped events, and the profiler's own cost.

Call times have the profiler's calibrated in-call cost subtracted (clamped at
0) unless --raw is given. TRACE "-" reads standard input. Median and p99 are nearest-rank percentiles.
--format json writes one stable JSON document (durations in ns); --format csv
writes one block per table, each row starting with the table's name.
--table NAME writes that one table as a plain CSV file (to standard output,
or -o FILE), and --format csv -o DIR one NAME.csv per table into the
directory DIR: files pandas.read_csv loads in one read. Tables: ` + strings.Join(reportTables, ", ") + `.`,
		Example: `  cuprof report run.cuprof
  cuprof report run.cuprof --format json | jq '.apis[0]'
  cuprof report run.cuprof --format csv > run.csv
  cuprof report run.cuprof --table apis > apis.csv
  mkdir tables && cuprof report run.cuprof --format csv -o tables`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output format: text, json or csv")
	f.BoolVar(&o.raw, "raw", false, "show call times as recorded, without subtracting the profiler's cost")
	f.StringVar(&o.table, "table", "", "write only this table, as plain CSV: "+strings.Join(reportTables, ", "))
	f.StringVarP(&o.output, "output", "o", "", "write to this file instead of standard output; with --format csv and a directory, one NAME.csv per table")
	return cmd
}

func runReport(g *globalOptions, o *reportOptions, path string) error {
	if o.table != "" || o.output != "" {
		return runReportFiles(g, o, path)
	}
	write, err := formatWriter(o.format, format[*report.Report]{"text", report.WriteText},
		format[*report.Report]{"json", report.WriteJSON}, format[*report.Report]{"csv", report.WriteCSV})
	if err != nil {
		return err
	}
	warns := warnAll
	if o.format == "text" {
		warns = 0 // the tables say both
	}
	// the trace is read as a stream: the report keeps no per-event state,
	// so memory does not grow with the trace's length
	f, err := openTrace(g, path, warns)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := f.NewEventReader()
	pr := newReadProgress(g, "report", f.NumEvents(), false, false)
	r := report.BuildFrom(f.Tables(), pr.wrap(rd.All()), report.Options{Raw: o.raw})
	pr.done()
	if err := rd.Err(); err != nil {
		return traceError(path, err)
	}
	if err := write(g.stdout, r); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	return nil
}
