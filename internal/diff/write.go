package diff

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/internal/table"
)

// MaxFrameRows is how many frames the text table shows; JSON and CSV have
// them all.
const MaxFrameRows = 40

// WriteText prints the per-API table (flame.WriteAPIChanges) and, when
// either trace has Python frames, the per-frame table.
func WriteText(w io.Writer, d *Diff) error {
	if err := flame.WriteAPIChanges(w, d.apis); err != nil {
		return err
	}
	if len(d.Frames) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, "\nPython wrapper frames, self time per call (the frame itself, less the frames and driver calls inside)\n"); err != nil {
		return err
	}
	t := &table.Table{Header: []string{"Frame", "Calls base", "Calls new", "Self/call base", "Self/call new", "Delta",
		"Ratio", "Where"}, Left: []bool{true, false, false, false, false, false, false, true}, Indent: "  "}
	for i, f := range d.Frames {
		if i == MaxFrameRows {
			break
		}
		base, newp, delta := quantity.Duration(f.SelfPerCallBaseNs), quantity.Duration(f.SelfPerCallNewNs), quantity.SignedDuration(f.DeltaPerCallNs)
		ratio := "-" // no self time in BASE to compare with
		switch {
		case f.In == InNew:
			base, delta, ratio = "-", "-", "new"
		case f.In == InBase:
			newp, delta, ratio = "-", "-", "gone"
		case f.Ratio != nil:
			ratio = fmt.Sprintf("%.2fx", *f.Ratio)
		}
		t.Add(f.Frame, strconv.Itoa(f.CallsBase), strconv.Itoa(f.CallsNew), base, newp, delta, ratio, f.Where)
	}
	if err := t.Write(w); err != nil {
		return err
	}
	if n := len(d.Frames) - MaxFrameRows; n > 0 {
		if _, err := fmt.Fprintf(w, "  %d more frames (see --format json or csv)\n", n); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes d as one indented JSON document (durations in ns),
// followed by a newline.
func WriteJSON(w io.Writer, d *Diff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteCSV writes d as two CSV blocks, apis and frames, each row starting
// with its block's name, the blocks apart by an empty line (as cuprof
// report's CSV).
func WriteCSV(w io.Writer, d *Diff) error {
	cw := csv.NewWriter(w)
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	ratio := func(r *float64) string {
		if r == nil {
			return ""
		}
		return f(*r)
	}
	cw.Write([]string{"section", "api", "in", "calls_base", "calls_new", "mean_base_ns", "mean_new_ns",
		"total_base_ns", "total_new_ns", "delta_ns", "ratio"})
	for _, a := range d.APIs {
		cw.Write([]string{"apis", a.API, a.In, i64(a.CallsBase), i64(a.CallsNew), f(a.MeanBaseNs), f(a.MeanNewNs),
			i64(a.TotalBaseNs), i64(a.TotalNewNs), i64(a.DeltaNs), ratio(a.Ratio)})
	}
	cw.Write(nil)
	cw.Write([]string{"section", "frame", "file", "where", "kind", "in", "calls_base", "calls_new", "self_base_ns",
		"self_new_ns", "self_per_call_base_ns", "self_per_call_new_ns", "delta_per_call_ns", "ratio"})
	for _, r := range d.Frames {
		cw.Write([]string{"frames", r.Frame, r.File, r.Where, r.Kind, r.In, strconv.Itoa(r.CallsBase),
			strconv.Itoa(r.CallsNew), i64(r.SelfBaseNs), i64(r.SelfNewNs), f(r.SelfPerCallBaseNs),
			f(r.SelfPerCallNewNs), f(r.DeltaPerCallNs), ratio(r.Ratio)})
	}
	cw.Flush()
	return cw.Error()
}
