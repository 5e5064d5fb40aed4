package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cuprof/cuprof/internal/report"
)

// reportTables are the names of report.CSVTables, for --table.
var reportTables = []string{"apis", "categories", "device_apis", "device_objects", "objects", "processes",
	"threads", "ranges", "set_current", "frames", "call_sites", "named_objects", "drops", "overhead"}

// runReportFiles is report with --table or -o: one table as plain CSV, one
// NAME.csv per table into a directory, or the whole report into a file.
func runReportFiles(g *globalOptions, o *reportOptions, path string) error {
	if o.table != "" && !slices.Contains(reportTables, o.table) {
		return usageErrorf("unknown --table %q; use one of %s", o.table, strings.Join(reportTables, ", "))
	}
	csvOut := o.table != "" || o.format == "csv"
	if o.table != "" && o.format != "text" && o.format != "csv" {
		return usageErrorf("--table writes CSV; drop --format %s", o.format)
	}
	intoDir := false
	if o.output != "" && o.output != "-" {
		st, err := os.Stat(o.output)
		intoDir = err == nil && st.IsDir() || strings.HasSuffix(o.output, "/")
	}
	switch {
	case intoDir && !(o.format == "csv" && o.table == ""):
		return usageErrorf("-o %s is a directory: that takes --format csv (one file per table); give a file name otherwise", o.output)
	case intoDir:
		if st, err := os.Stat(o.output); err != nil || !st.IsDir() {
			return fmt.Errorf("output directory %s does not exist; create it first", o.output)
		}
	case o.output != "":
		if err := checkOutput(g, o.output, path); err != nil {
			return err
		}
	}
	f, err := openTrace(g, path, warnAll)
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
	out := o.output
	if out == "" {
		out = "-"
	}
	if !csvOut {
		write, err := formatWriter(o.format, format[*report.Report]{"text", report.WriteText},
			format[*report.Report]{"json", report.WriteJSON})
		if err != nil {
			return err
		}
		return writeOutput(g, out, func(w io.Writer) error { return write(w, r) })
	}
	tables := report.CSVTables(r)
	if o.table != "" {
		for _, t := range tables {
			if t.Name == o.table {
				return writeOutput(g, out, func(w io.Writer) error { return printableFormat(report.WriteCSVTable)(w, t) })
			}
		}
		return fmt.Errorf("%s has no %s table (device_* need calls on more than one device, frames a Python trace)", inputName(path), o.table)
	}
	if !intoDir {
		return writeOutput(g, out, func(w io.Writer) error { return printableFormat(report.WriteCSV)(w, r) })
	}
	for _, t := range tables {
		name := filepath.Join(o.output, t.Name+".csv")
		if err := writeOutput(g, name, func(w io.Writer) error { return printableFormat(report.WriteCSVTable)(w, t) }); err != nil {
			return err
		}
	}
	g.tell(g.info, "cuprof: wrote %d tables into %s: %s\n", len(tables), o.output, strings.Join(tableNames(tables), ", "))
	return nil
}

func tableNames(ts []report.CSVTable) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names
}
