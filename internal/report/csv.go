package report

import (
	"encoding/csv"
	"io"
	"strconv"
)

// WriteCSV writes r as CSV blocks, one per section (see the package doc).
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	for i, t := range CSVTables(r) {
		if i > 0 {
			cw.Write(nil)
		}
		cw.Write(append([]string{"section"}, t.Header...))
		for _, row := range t.Rows {
			cw.Write(append([]string{t.Name}, row...))
		}
	}
	cw.Flush()
	return cw.Error()
}

// CSVTable is one table of the report as CSV: its name (the section
// column of WriteCSV), header and rows.
type CSVTable struct {
	Name   string
	Header []string
	Rows   [][]string
}

// WriteCSVTable writes one table as a plain CSV file: the header, then the
// rows, without WriteCSV's section column (what pandas.read_csv loads in
// one read).
func WriteCSVTable(w io.Writer, t CSVTable) error {
	cw := csv.NewWriter(w)
	cw.Write(t.Header)
	cw.WriteAll(t.Rows)
	cw.Flush()
	return cw.Error()
}

// CSVTables are the report's tables in WriteCSV's order: apis, categories,
// device_apis and device_objects (with more than one device), objects,
// processes, threads, ranges, set_current, frames (Python traces), drops,
// overhead.
func CSVTables(r *Report) []CSVTable {
	var tables []CSVTable
	block := func(section string, header []string, rows [][]string) {
		tables = append(tables, CSVTable{Name: section, Header: header, Rows: rows})
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	apiHeader := []string{"api", "category", "count", "total_ns", "percent", "mean_ns", "median_ns", "p99_ns", "min_ns", "max_ns", "errors"}
	apiRow := func(a APIRow) []string {
		return []string{a.API, a.Category, itoa(a.Count), i64(a.TotalNs), f(a.Percent), f(a.MeanNs),
			i64(a.MedianNs), i64(a.P99Ns), i64(a.MinNs), i64(a.MaxNs), itoa(a.Errors)}
	}
	objHeader := []string{"kind", "created", "destroyed", "ended_implicitly", "alive_at_exit", "lifetime_median_ns", "lifetime_p99_ns", "churn", "bytes"}
	objRow := func(o ObjectRow) []string {
		return []string{o.Kind, itoa(o.Created), itoa(o.Destroyed), itoa(o.Implicit), itoa(o.Alive),
			i64(o.LifetimeMedianNs), i64(o.LifetimeP99Ns), itoa(o.Churn), strconv.FormatUint(o.Bytes, 10)}
	}

	var rows [][]string
	for _, a := range r.APIs {
		rows = append(rows, apiRow(a))
	}
	block("apis", apiHeader, rows)

	rows = nil
	for _, c := range r.Categories {
		rows = append(rows, []string{c.Category, itoa(c.Count), i64(c.TotalNs), f(c.Percent), itoa(c.Errors)})
	}
	block("categories", []string{"category", "count", "total_ns", "percent", "errors"}, rows)

	if len(r.Devices) > 0 {
		rows = nil
		var objs [][]string
		for _, d := range r.Devices {
			dv := strconv.Itoa(int(d.Device))
			for _, a := range d.APIs {
				rows = append(rows, append([]string{dv}, apiRow(a)...))
			}
			for _, o := range d.Objects {
				objs = append(objs, append([]string{dv}, objRow(o)...))
			}
		}
		block("device_apis", append([]string{"device"}, apiHeader...), rows)
		block("device_objects", append([]string{"device"}, objHeader...), objs)
	}

	rows = nil
	for _, o := range r.Objects {
		rows = append(rows, objRow(o))
	}
	block("objects", objHeader, rows)

	rows = nil
	for _, p := range r.Processes {
		rows = append(rows, []string{u32(p.PID), u32(p.PPID), p.Command, itoa(p.Threads), itoa(p.Calls),
			i64(p.TotalNs), strconv.Itoa(int(p.ExitCode))})
	}
	block("processes", []string{"pid", "ppid", "command", "threads", "calls", "total_ns", "exit_code"}, rows)

	rows = nil
	for _, t := range r.Threads {
		rows = append(rows, []string{u32(t.PID), u32(t.TID), t.Name, itoa(t.Calls), i64(t.TotalNs),
			itoa(t.Errors), strconv.FormatUint(t.Dropped, 10)})
	}
	block("threads", []string{"pid", "tid", "name", "calls", "total_ns", "errors", "dropped"}, rows)

	rows = nil
	for _, rg := range r.Ranges {
		rows = append(rows, []string{rg.Domain, rg.Name, itoa(rg.Count), i64(rg.TotalNs), f(rg.MeanNs)})
	}
	block("ranges", []string{"domain", "name", "count", "total_ns", "mean_ns"}, rows)

	rows = nil
	for _, sc := range r.SetCurrent {
		rows = append(rows, []string{sc.Kind, itoa(sc.Count), i64(sc.TotalNs), i64(sc.MedianNs), i64(sc.P99Ns)})
	}
	block("set_current", []string{"kind", "count", "total_ns", "median_ns", "p99_ns"}, rows)

	if len(r.Frames) > 0 {
		rows = nil
		for _, fr := range r.Frames {
			rows = append(rows, []string{fr.Frame, fr.Kind, fr.Module, fr.File, strconv.FormatUint(uint64(fr.Line), 10),
				itoa(fr.Calls), i64(fr.InclusiveNs), i64(fr.SelfNs), i64(fr.DriverNs), itoa(fr.DriverCalls),
				f(fr.SelfPerCall), i64(fr.OffPathNs), itoa(fr.Unwound)})
		}
		block("frames", []string{"frame", "kind", "module", "file", "line", "calls", "inclusive_ns", "self_ns",
			"driver_ns", "driver_calls", "self_per_call_ns", "off_path_ns", "unwound"}, rows)
	}

	if len(r.Sites) > 0 {
		rows = nil
		for _, s := range r.Sites {
			rows = append(rows, []string{s.Site, itoa(s.Calls), i64(s.TotalNs), itoa(s.Errors)})
		}
		block("call_sites", []string{"site", "calls", "total_ns", "errors"}, rows)
	}
	if len(r.Named) > 0 {
		rows = nil
		for _, n := range r.Named {
			rows = append(rows, []string{n.Name, n.Kind, n.Handle, u32(n.PID), strconv.Itoa(int(n.Device))})
		}
		block("named_objects", []string{"name", "kind", "handle", "pid", "device"}, rows)
	}

	rows = nil
	for _, d := range r.Drops.PerThread {
		rows = append(rows, []string{u32(d.PID), u32(d.TID), strconv.FormatUint(d.Events, 10), d.Reason})
	}
	block("drops", []string{"pid", "tid", "events", "reason"}, rows)

	o := r.Overhead
	ov := [][]string{{f(o.InsideNs), f(o.AddedNs), strconv.FormatBool(o.Subtracted), i64(o.SubtractedNs), i64(o.TotalAddedNs),
		itoa(r.Meta.Calls), strconv.FormatUint(r.Drops.Total, 10)}}
	lossCols := []string{"", "", ""}
	if r.Loss != nil {
		lossCols = []string{i64(r.Loss.Offset), i64(r.Loss.Bytes), r.Loss.Reason}
	}
	ov[0] = append(ov[0], lossCols...)
	ov[0] = append(ov[0], f(o.InPlaceNs), i64(o.InPlaceCalls))
	block("overhead", []string{"inside_ns", "added_ns", "subtracted", "subtracted_ns", "total_added_ns", "calls", "dropped",
		"loss_offset", "loss_bytes", "loss_reason", "in_place_ns", "in_place_calls"}, ov)
	return tables
}
