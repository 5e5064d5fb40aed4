// Package diff is what cuprof diff prints: the changes between two traces,
// per driver API (from their api-view profiles, flame.CompareAPIs) and per
// Python wrapper frame (from their reports' frame rows, report.FrameRows),
// as text tables, one JSON document or CSV blocks.
package diff

import (
	"cmp"
	"slices"

	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/report"
)

// Diff compares two traces, BASE and NEW.
type Diff struct {
	// APIs are the per-API changes, largest absolute change in total time
	// first.
	APIs []APIRow `json:"apis"`
	// Frames are the per-frame changes, largest absolute change in total
	// self time first; empty when neither trace has Python frames.
	Frames []FrameRow `json:"frames"`

	apis []flame.APIChange // for the text table
}

// Where a row's API or frame appears: In is one of these.
const (
	InBoth = "both"
	InBase = "base" // gone in NEW
	InNew  = "new"  // new in NEW
)

// APIRow is one driver API in BASE and NEW.
type APIRow struct {
	API         string  `json:"api"`
	In          string  `json:"in"` // InBoth, InBase or InNew
	CallsBase   int64   `json:"calls_base"`
	CallsNew    int64   `json:"calls_new"`
	MeanBaseNs  float64 `json:"mean_base_ns"`
	MeanNewNs   float64 `json:"mean_new_ns"`
	TotalBaseNs int64   `json:"total_base_ns"`
	TotalNewNs  int64   `json:"total_new_ns"`
	DeltaNs     int64   `json:"delta_ns"` // TotalNewNs - TotalBaseNs
	// Ratio is TotalNewNs/TotalBaseNs, null when BASE has no time.
	Ratio *float64 `json:"ratio"`
}

// FrameRow is one piece of Python-level code in BASE and NEW, keyed by its
// qualified name and source file (the line may move between the two): the
// report's frame rows of that key, summed.
type FrameRow struct {
	Frame string `json:"frame"` // qualified name
	File  string `json:"file"`  // source file, "" for native code
	// Where is file:line (NEW's line when the frame is in NEW) or the
	// module, as the report's frames table shows it.
	Where      string `json:"where"`
	Kind       string `json:"kind"` // "python" or "native"
	In         string `json:"in"`   // InBoth, InBase or InNew
	CallsBase  int    `json:"calls_base"`
	CallsNew   int    `json:"calls_new"`
	SelfBaseNs int64  `json:"self_base_ns"`
	SelfNewNs  int64  `json:"self_new_ns"`
	// SelfPerCallBaseNs and SelfPerCallNewNs are self time per call, 0
	// where the frame did not run.
	SelfPerCallBaseNs float64 `json:"self_per_call_base_ns"`
	SelfPerCallNewNs  float64 `json:"self_per_call_new_ns"`
	// DeltaPerCallNs is SelfPerCallNewNs - SelfPerCallBaseNs.
	DeltaPerCallNs float64 `json:"delta_per_call_ns"`
	// Ratio is SelfPerCallNewNs/SelfPerCallBaseNs, null when BASE has no
	// self time for the frame.
	Ratio *float64 `json:"ratio"`
}

// New returns the comparison of the per-API changes of two api-view
// profiles (flame.CompareAPIs, in its order) and the wrapper frame rows of
// the two traces' reports.
func New(apis []flame.APIChange, base, newp []report.FrameRow) *Diff {
	d := &Diff{APIs: []APIRow{}, Frames: compareFrames(base, newp), apis: apis}
	for _, c := range apis {
		row := APIRow{API: c.API, In: in(c.Base.Calls > 0 || c.Base.Time > 0, c.New.Calls > 0 || c.New.Time > 0),
			CallsBase: c.Base.Calls, CallsNew: c.New.Calls, MeanBaseNs: c.Base.Mean(), MeanNewNs: c.New.Mean(),
			TotalBaseNs: c.Base.Time, TotalNewNs: c.New.Time, DeltaNs: c.Delta()}
		if c.Base.Time != 0 {
			r := c.Ratio()
			row.Ratio = &r
		}
		d.APIs = append(d.APIs, row)
	}
	return d
}

func in(base, newp bool) string {
	switch {
	case base && newp:
		return InBoth
	case base:
		return InBase
	}
	return InNew
}

type frameKey struct{ frame, file string }

// side is one frame key's rows of one trace, summed.
type side struct {
	seen  bool
	calls int
	self  int64
	where string
	kind  string
}

func (s *side) add(r report.FrameRow) {
	if !s.seen {
		s.where, s.kind = r.Where(), r.Kind
	}
	s.seen = true
	s.calls += r.Calls
	s.self += r.SelfNs
}

func (s *side) perCall() float64 {
	if s.calls == 0 {
		return 0
	}
	return float64(s.self) / float64(s.calls)
}

func compareFrames(base, newp []report.FrameRow) []FrameRow {
	type pair struct{ base, newp side }
	by := map[frameKey]*pair{}
	var keys []frameKey
	get := func(r report.FrameRow) *pair {
		k := frameKey{r.Frame, r.File}
		p := by[k]
		if p == nil {
			p = &pair{}
			by[k] = p
			keys = append(keys, k)
		}
		return p
	}
	for _, r := range base {
		get(r).base.add(r)
	}
	for _, r := range newp {
		get(r).newp.add(r)
	}
	out := make([]FrameRow, 0, len(keys))
	for _, k := range keys {
		p := by[k]
		row := FrameRow{Frame: k.frame, File: k.file, In: in(p.base.seen, p.newp.seen),
			CallsBase: p.base.calls, CallsNew: p.newp.calls, SelfBaseNs: p.base.self, SelfNewNs: p.newp.self,
			SelfPerCallBaseNs: p.base.perCall(), SelfPerCallNewNs: p.newp.perCall()}
		row.Where, row.Kind = p.newp.where, p.newp.kind
		if !p.newp.seen {
			row.Where, row.Kind = p.base.where, p.base.kind
		}
		row.DeltaPerCallNs = row.SelfPerCallNewNs - row.SelfPerCallBaseNs
		if row.SelfPerCallBaseNs != 0 {
			r := row.SelfPerCallNewNs / row.SelfPerCallBaseNs
			row.Ratio = &r
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b FrameRow) int {
		if c := cmp.Compare(abs(b.SelfNewNs-b.SelfBaseNs), abs(a.SelfNewNs-a.SelfBaseNs)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Frame, b.Frame); c != 0 {
			return c
		}
		return cmp.Compare(a.File, b.File)
	})
	return out
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
