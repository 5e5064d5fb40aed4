package job

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/internal/table"
)

// WriteJSON writes r as JSON, one object with the fields of Report, each
// element of its long lists on a line of its own, written as it is
// encoded: a job of a thousand ranks of thousands of steps is never one
// buffer.
func WriteJSON(w io.Writer, r *Report) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var err error
	put := func(s string) {
		if err == nil {
			_, err = bw.WriteString(s)
		}
	}
	val := func(v any) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			_, err = bw.Write(b)
		}
	}
	list := func(name string, n int, elem func(i int) any) {
		put(",\n" + strconv.Quote(name) + ": [")
		for i := 0; i < n; i++ {
			if i > 0 {
				put(",")
			}
			put("\n  ")
			val(elem(i))
		}
		put("\n]")
	}
	put("{\n\"traces\": ")
	val(r.Traces)
	put(",\n\"jobs\": ")
	val(r.Jobs)
	put(",\n\"hosts\": ")
	val(r.Hosts)
	list("ranks", len(r.Ranks), func(i int) any { return r.Ranks[i] })
	list("apis", len(r.APIs), func(i int) any { return r.APIs[i] })
	list("frames", len(r.Frames), func(i int) any { return r.Frames[i] })
	list("outliers", len(r.Outliers), func(i int) any { return r.Outliers[i] })
	put(",\n\"steps\": ")
	if r.Steps == nil {
		put("null")
	} else {
		put("{\"name\": ")
		val(r.Steps.Name)
		list("ranks", len(r.Steps.Ranks), func(i int) any { return r.Steps.Ranks[i] })
		put("}")
	}
	put(",\n\"clocks\": ")
	val(r.Clocks)
	put(",\n\"notes\": ")
	val(r.Notes)
	put(",\n\"skipped\": ")
	val(r.Skipped)
	list("processes", len(r.Procs), func(i int) any { return r.Procs[i] })
	put("\n}\n")
	if err == nil {
		err = bw.Flush()
	}
	return err
}

func dur(ns int64) string { return quantity.Duration(float64(ns)) }

// allRanksUpTo is how many ranks the text tables show one row each for;
// past it they show the fastest, the median and the slowest ranks.
const allRanksUpTo = 32

// WriteText writes the job report as text tables.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	jobs := strings.Join(r.Jobs, ", ")
	if jobs == "" {
		jobs = "(no job id)"
	}
	p("Job %s: %d %s on %d %s, from %d %s (%d skipped)\n", jobs, len(r.Ranks), plural(len(r.Ranks), "process", "processes"),
		len(r.Hosts), plural(len(r.Hosts), "host", "hosts"), r.Traces, plural(r.Traces, "trace", "traces"), len(r.Skipped))
	p("Clocks: %s\n", r.Clocks.Text)
	for _, n := range r.Notes {
		if n != r.Clocks.Text {
			p("Note: %s\n", n)
		}
	}

	p("\nOutliers (ranks far above the median rank: robust z = (value - median) / (1.4826 MAD))\n")
	if len(r.Outliers) == 0 {
		if len(r.Ranks) < minRanks {
			p("  none told: fewer than %d ranks\n", minRanks)
		} else {
			p("  none\n")
		}
	} else {
		t := &table.Table{Header: []string{"Rank", "Host", "API or frame", "Metric", "Rank's", "Median rank's", "z", "Explained by"},
			Left: []bool{false, true, true, true, false, false, false, true}, Indent: "  "}
		for _, o := range r.Outliers {
			name := o.API
			if o.Frame != "" {
				name = "frame " + o.Frame
			}
			why := "-"
			if o.Finding != nil {
				why = o.Finding.Rule + " (lint: costs " + dur(o.Finding.CostNs) + ")"
			}
			t.Add(o.Label, o.Host, name, o.Metric, dur(o.ValueNs), dur(o.JobNs), strconv.FormatFloat(o.Score, 'f', 1, 64), why)
		}
		writeTable(&b, t)
	}

	p("\nRanks\n")
	t := &table.Table{Header: []string{"Rank", "Local", "World", "Host", "PID", "Job", "Calls", "Host time", "Trace"},
		Left: []bool{false, false, false, true, false, true, false, false, true}, Indent: "  "}
	for _, rk := range r.Ranks {
		t.Add(rk.Label, opt(rk.LocalRank), opt(rk.WorldSize), rk.Host, strconv.FormatUint(uint64(rk.PID), 10), dash(rk.Job),
			strconv.Itoa(rk.Calls), dur(rk.TotalNs), rk.File)
	}
	writeTable(&b, t)

	section := func(title string, rows []Row) {
		if len(rows) == 0 {
			return
		}
		p("\n%s\n", title)
		for _, row := range rows {
			p("  %s: %d calls, median %s, p99 %s, total %s\n", row.Name, row.Calls, dur(row.MedianNs), dur(row.P99Ns), dur(row.TotalNs))
			t := &table.Table{Header: []string{"Rank", "Calls", "Median", "P99", "Total"}, Indent: "    "}
			for _, rs := range shown(row.Ranks) {
				if rs.Label == "" {
					t.Add("...", "", "", "", "")
					continue
				}
				t.Add(rs.Label, strconv.Itoa(rs.Calls), dur(rs.MedianNs), dur(rs.P99Ns), dur(rs.TotalNs))
			}
			writeTable(&b, t)
		}
	}
	section("APIs by rank (host time per call, the profiler's cost taken out)", r.APIs)
	section("Wrapper frames by rank (each activation's own cost: self time and Python work beside the driver)", r.Frames)

	if s := r.Steps; s != nil {
		p("\nSteps (NVTX range %q: each rank's k-th step is step k; its length on its host)\n", s.Name)
		n := 0
		for _, rs := range s.Ranks {
			n = max(n, len(rs.Steps))
		}
		show := min(n, 12)
		head := []string{"Rank"}
		for k := 0; k < show; k++ {
			head = append(head, strconv.Itoa(k+1))
		}
		if n > show {
			head = append(head, "...")
		}
		head = append(head, "Median", "Max")
		t := &table.Table{Header: head, Indent: "  "}
		for _, rs := range s.Ranks {
			row := []string{rs.Label}
			var all []int64
			for k, st := range rs.Steps {
				all = append(all, st.Ns)
				if k < show {
					row = append(row, dur(st.Ns))
				}
			}
			for len(row) < show+1 {
				row = append(row, "-")
			}
			if n > show {
				row = append(row, "")
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			row = append(row, dur(all[len(all)/2]), dur(all[len(all)-1]))
			t.Add(row...)
		}
		writeTable(&b, t)
	}
	if len(r.Skipped) > 0 {
		p("\nSkipped traces\n")
		for _, s := range r.Skipped {
			p("  %s: %s\n", s.File, s.Error)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shown is the ranks a text table shows: all up to allRanksUpTo, else the
// three fastest, the median and the three slowest by median, with "..."
// rows (an empty label) between.
func shown(rs []RankStat) []RankStat {
	if len(rs) <= allRanksUpTo {
		return rs
	}
	s := append([]RankStat(nil), rs...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].MedianNs < s[j].MedianNs })
	m := len(s) / 2
	out := append([]RankStat{}, s[:3]...)
	out = append(out, RankStat{}, s[m], RankStat{})
	return append(out, s[len(s)-3:]...)
}

func writeTable(b *strings.Builder, t *table.Table) { _ = t.Write(b) }

func opt(v *int) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(*v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// WriteStepsSVG draws the steps table as a heatmap: a row per rank, a
// column per step, each cell's colour its length against the median
// rank's length of that step (white: the median; red: twice or more).
func WriteStepsSVG(w io.Writer, r *Report) error {
	s := r.Steps
	if s == nil {
		return fmt.Errorf("the traces have no steps (no NVTX range repeated on a rank)")
	}
	n := 0
	for _, rs := range s.Ranks {
		n = max(n, len(rs.Steps))
	}
	med := make([]int64, n)
	for k := 0; k < n; k++ {
		var v []int64
		for _, rs := range s.Ranks {
			if k < len(rs.Steps) {
				v = append(v, rs.Steps[k].Ns)
			}
		}
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		med[k] = v[len(v)/2]
	}
	cw, ch := 10, 8
	if len(s.Ranks) > 128 {
		ch = 2
	}
	left, top := 70, 30
	width, height := left+n*cw+10, top+len(s.Ranks)*ch+20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="10">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="4" y="14">%s: step length per rank, against the median rank (white 1x, red 2x or more)</text>`+"\n", escape(s.Name))
	for i, rs := range s.Ranks {
		y := top + i*ch
		if ch >= 8 || i%16 == 0 {
			fmt.Fprintf(&b, `<text x="4" y="%d">rank %s</text>`+"\n", y+ch, escape(rs.Label))
		}
		for k, st := range rs.Steps {
			ratio := 1.0
			if med[k] > 0 {
				ratio = float64(st.Ns) / float64(med[k])
			}
			g := 255 - int(255*min(max(ratio-1, 0), 1))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="rgb(255,%d,%d)"><title>rank %s step %d: %s</title></rect>`+"\n",
				left+k*cw, y, cw, ch, g, g, escape(rs.Label), k+1, dur(st.Ns))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
