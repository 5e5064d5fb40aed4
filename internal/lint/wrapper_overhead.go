package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/trace"
)

// Wrapper overhead: a Python-level frame (a Python function, or a C callable
// called from Python) with driver calls under it whose own time per call
// exceeds the time per call of the driver calls under it: the wrapper costs
// more than what it wraps. Its own time is its self time plus the time of
// the frames directly inside it that reach no driver call (an options
// object, a weakref.finalize, a Python error check), so the rule reads the
// same whether or not the capture recorded those frames. Times are package
// analysis's: the calibrated cost of the calls and Python events inside is
// taken out. wrapperMin activations of the code (over all its stacks) make
// a finding. Cost: the wrapper's own time.
const wrapperMin = 3

type wrapperOverhead struct{}

var _ Rule = wrapperOverhead{}

func (wrapperOverhead) ID() string { return "wrapper-overhead" }

func (wrapperOverhead) Doc() string {
	return "Python wrapper frames whose own time per call exceeds the driver time under them"
}

type wrapperCheck struct {
	f *Facts
	// the first driver call with a frame of each code on its Python stack,
	// and the stacks already seen with one
	example map[trace.CodeID]call
	seen    map[analysis.FrameID]bool
}

func (wrapperOverhead) Check(f *Facts) Check {
	return &wrapperCheck{f: f, example: map[trace.CodeID]call{}, seen: map[analysis.FrameID]bool{}}
}

func (c *wrapperCheck) Event(e *Event) {
	s := e.Frame
	if s == analysis.NoFrame || c.seen[s] || e.Kind != trace.KindCall {
		return
	}
	c.seen[s] = true
	a := e.Analysis()
	for q := s; q != analysis.NoFrame; q = a.FrameParent(q) {
		if _, ok := c.example[a.FrameCode(q)]; !ok {
			c.example[a.FrameCode(q)] = callOf(e)
		}
	}
}

func (c *wrapperCheck) Findings() []Finding {
	f := c.f
	a := f.Analysis
	if a.Stacks() <= 1 {
		return nil
	}
	example := c.example
	var out []Finding
	for _, c := range a.ByCode() {
		if c.Calls == 0 || c.Activations < wrapperMin {
			continue
		}
		own := c.SelfNs + c.OffPathNs
		n := float64(c.Activations)
		if float64(own)/n <= float64(c.DriverNs)/n {
			continue
		}
		i, ok := example[c.Code]
		if !ok {
			continue
		}
		name := f.codeName(c.Code)
		fd := f.finding(wrapperOverhead{}.ID(), Warning, i, i)
		fd.Count, fd.CostNs = c.Activations, own
		fd.Message = fmt.Sprintf("%s takes %s per call of its own (self %s", name,
			quantity.Duration(float64(own)/n), quantity.Duration(float64(c.SelfNs)/n))
		if c.OffPathNs > 0 {
			fd.Message += fmt.Sprintf(", plus %s in frames under it that make no driver call",
				quantity.Duration(float64(c.OffPathNs)/n))
		}
		fd.Message += fmt.Sprintf("), more than the %s per call of the driver calls under it (%s per call in all, %s)",
			quantity.Duration(float64(c.DriverNs)/n), quantity.Duration(float64(c.InclusiveNs)/n),
			plural(c.Activations, "call"))
		fd.Fix = wrapperFix(f, c.Code, c.Activations)
		out = append(out, fd)
	}
	return out
}

// wrapperFix says what to look at in a wrapper: the frames under it that
// make no driver call, heaviest first, and the usual suspects.
func wrapperFix(f *Facts, code trace.CodeID, activations int) string {
	a := f.Analysis
	offPath := map[trace.CodeID]int64{}
	for s := analysis.FrameID(1); int(s) < a.Stacks(); s++ {
		p := a.FrameParent(s)
		if st := a.FrameStats(s); p != analysis.NoFrame && a.FrameCode(p) == code && st.Calls == 0 {
			offPath[a.FrameCode(s)] += st.InclusiveNs
		}
	}
	type child struct {
		code trace.CodeID
		ns   int64
	}
	var kids []child
	for c, ns := range offPath {
		kids = append(kids, child{c, ns})
	}
	sort.Slice(kids, func(i, j int) bool {
		if kids[i].ns != kids[j].ns {
			return kids[i].ns > kids[j].ns
		}
		return kids[i].code < kids[j].code
	})
	var b strings.Builder
	b.WriteString("look at what " + f.codeName(code) + " does besides calling the driver")
	if len(kids) > 0 {
		b.WriteString(": ")
		for i, k := range kids {
			if i == 3 {
				b.WriteString(", ...")
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%s per call)", f.codeName(k.code), quantity.Duration(float64(k.ns)/float64(activations)))
		}
	}
	b.WriteString("; the usual costs are registering a weakref.finalize per object, building an options object " +
		"per call, and checking the CUresult in Python after each call: reuse or cache them, check errors in " +
		"C/Cython, or give the common case a lean path")
	return b.String()
}
