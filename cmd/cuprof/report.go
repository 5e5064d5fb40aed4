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
	step   string // job report (report_job.go)
	svg    string
	// job report: Parquet tables
	parquet      string
	parquetCalls bool
}

func newReportCmd(g *globalOptions) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report TRACE... | FOLDER",
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
directory DIR: files pandas.read_csv loads in one read. Tables: ` + strings.Join(reportTables, ", ") + `.

Several traces, or a folder of them (a job's ranks, one trace per rank or per
host), give the job report: who each rank is (rank, local rank, world size,
host, pid, job), per API and per wrapper frame a row per rank (calls, median,
p99, total host time), the ranks that stand out (robust z over the ranks'
medians, totals and p99s) with the lint finding of theirs that explains it,
and host time per rank and step (--step NAME, --svg FILE). Traces are read in
parallel, each into a small summary; a trace that cannot be read is named and
skipped, the others reported, and the status is then 1.`,
		Example: `  cuprof report run.cuprof
  cuprof report run.cuprof --format json | jq '.apis[0]'
  cuprof report run.cuprof --format csv > run.csv
  cuprof report run.cuprof --table apis > apis.csv
  mkdir tables && cuprof report run.cuprof --format csv -o tables
  cuprof report job/4242/ --svg steps.svg
  cuprof report job/4242/ --format json | jq '.outliers'`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isJob(args) {
				return runJobReport(g, o, args)
			}
			if o.step != "" || o.svg != "" || o.parquet != "" || o.parquetCalls {
				return usageErrorf("--step, --svg and --parquet are for a job's report: give several traces or a folder")
			}
			return runReport(g, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "text", "output format: text, json or csv")
	f.BoolVar(&o.raw, "raw", false, "show call times as recorded, without subtracting the profiler's cost")
	f.StringVar(&o.table, "table", "", "write only this table, as plain CSV: "+strings.Join(reportTables, ", "))
	f.StringVar(&o.step, "step", "", "job report: the NVTX range that is a step (default: the outermost range most ranks repeat)")
	f.StringVar(&o.svg, "svg", "", "job report: also draw host time per rank and step into this SVG file")
	f.StringVar(&o.parquet, "parquet", "", "job report: also write its tables as Parquet files into this folder (ranks, rank_apis, rank_frames)")
	f.BoolVar(&o.parquetCalls, "parquet-calls", false, "job report: with --parquet, also every call of every trace (calls.parquet)")
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
