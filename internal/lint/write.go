package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/internal/quantity"
)

// Summary counts findings by severity.
type Summary struct {
	Findings int   `json:"findings"`
	Errors   int   `json:"errors"`
	Warnings int   `json:"warnings"`
	Infos    int   `json:"info"`
	CostNs   int64 `json:"cost_ns"` // sum of the findings' estimated costs
}

// Summarize counts fs.
func Summarize(fs []Finding) Summary {
	s := Summary{Findings: len(fs)}
	for i := range fs {
		switch fs[i].Severity {
		case Error:
			s.Errors++
		case Warning:
			s.Warnings++
		default:
			s.Infos++
		}
		s.CostNs += fs[i].CostNs
	}
	return s
}

// WriteText prints findings for people: a summary line, then per finding its
// severity, rule, message, count and cost, where, an example call and the fix.
func WriteText(w io.Writer, fs []Finding) error {
	var b strings.Builder
	s := Summarize(fs)
	if s.Findings == 0 {
		b.WriteString("cuprof lint: no findings\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "cuprof lint: %s (%s, %s, %d info), estimated cost %s\n",
		plural(s.Findings, "finding"), plural(s.Errors, "error"), plural(s.Warnings, "warning"), s.Infos,
		quantity.Duration(float64(s.CostNs)))
	for _, f := range fs {
		fmt.Fprintf(&b, "\n%s %s: %s\n", strings.ToUpper(f.Severity.String()), f.Rule, f.Message)
		fmt.Fprintf(&b, "  count:   %d, estimated cost %s\n", f.Count, quantity.Duration(float64(f.CostNs)))
		fmt.Fprintf(&b, "  where:   %s\n", whereText(f.Where))
		fmt.Fprintf(&b, "  example: %s at +%s (t=%d) took %s\n", f.Example.API,
			quantity.Duration(float64(f.Example.OffsetNs)), f.Example.TimeNs, quantity.Duration(float64(f.Example.DurationNs)))
		fmt.Fprintf(&b, "  fix:     %s\n", f.Fix)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func whereText(w Where) string {
	var parts []string
	if w.Python != "" {
		parts = append(parts, "python "+w.Python)
	}
	if w.Range != "" {
		parts = append(parts, "range "+w.Range)
	}
	if w.Rank != nil {
		r := fmt.Sprintf("rank %d", *w.Rank)
		if w.Host != "" {
			r += " on " + w.Host
		}
		parts = append(parts, r)
	}
	th := fmt.Sprintf("thread %d/%d", w.PID, w.TID)
	if w.Thread != "" {
		th += " (" + w.Thread + ")"
	}
	parts = append(parts, th)
	switch {
	case w.Function != "" && w.Function != w.Caller:
		parts = append(parts, "caller "+w.Function+" ("+w.Caller+")")
	case w.Caller != "":
		parts = append(parts, "caller "+w.Caller)
	}
	if w.Object != "" {
		parts = append(parts, "object "+strconv.Quote(w.Object))
	}
	return strings.Join(parts, ", ")
}

// document is the JSON form of a lint run.
type document struct {
	Summary  Summary   `json:"summary"`
	Findings []Finding `json:"findings"`
}

// WriteJSON writes {"summary": {...}, "findings": [...]} (findings in Run's
// order, [] when none), indented, followed by a newline. Field names are
// stable; severities are "info", "warning" or "error"; times are integer ns.
func WriteJSON(w io.Writer, fs []Finding) error {
	if fs == nil {
		fs = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(document{Summary: Summarize(fs), Findings: fs})
}
