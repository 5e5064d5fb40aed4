package lifecycle

import (
	"strings"

	"github.com/cuprof/cuprof/trace"
)

// Enclosing answers which user range (NVTX push/pop, start/end, or cudawrap
// span) encloses each event of a trace.
type Enclosing struct {
	t      *trace.Trace
	Ranges []trace.Range // as returned by t.Ranges()
	parent []int32       // per range: the range enclosing it on its thread, -1
	of     []int32       // per event: innermost enclosing range, -1
}

// NewEnclosing resolves the ranges of t and the innermost range around each
// event. Push/pop ranges and spans enclose the events of their own thread
// from Start to End inclusive; a start/end range encloses events of the
// thread that started it when no push/pop range or span does. Events must be
// in trace.SortEvents order.
func NewEnclosing(t *trace.Trace) *Enclosing {
	rs, _ := t.Ranges()
	en := &Enclosing{t: t, Ranges: rs, parent: make([]int32, len(rs)), of: make([]int32, len(t.Events))}
	byThread := map[threadKey][]int32{} // range indexes by thread, in Start order
	for i := range rs {
		k := threadKey{rs[i].PID, rs[i].TID}
		byThread[k] = append(byThread[k], int32(i))
	}
	next := map[threadKey]int{}
	stack := map[threadKey][]int32{} // nested ranges open now
	loose := map[threadKey][]int32{} // start/end ranges open now
	for i := range t.Events {
		e := &t.Events[i]
		k := threadKey{e.PID, e.TID}
		rl := byThread[k]
		// open every range of this thread that starts at or before e
		for n := next[k]; n < len(rl) && rs[rl[n]].Start <= e.Start; n++ {
			r := rl[n]
			if rs[r].Origin == trace.KindRangeStart {
				loose[k] = append(loose[k], r)
			} else {
				st := stack[k]
				for len(st) > 0 && rs[st[len(st)-1]].End < rs[r].Start {
					st = st[:len(st)-1]
				}
				en.parent[r] = -1
				if len(st) > 0 {
					en.parent[r] = st[len(st)-1]
				}
				stack[k] = append(st, r)
			}
			next[k] = n + 1
		}
		st := stack[k]
		for len(st) > 0 && rs[st[len(st)-1]].End < e.Start {
			st = st[:len(st)-1]
		}
		stack[k] = st
		en.of[i] = -1
		if len(st) > 0 {
			en.of[i] = st[len(st)-1]
			continue
		}
		ls := loose[k][:0]
		for _, r := range loose[k] {
			if rs[r].End >= e.Start {
				ls = append(ls, r)
			}
		}
		loose[k] = ls
		if len(ls) > 0 {
			en.of[i] = ls[len(ls)-1]
		}
	}
	for i := range rs {
		if rs[i].Origin == trace.KindRangeStart {
			en.parent[i] = -1
		}
	}
	return en
}

// Range returns the innermost range enclosing event i, or nil.
func (en *Enclosing) Range(i int) *trace.Range {
	if i < 0 || i >= len(en.of) || en.of[i] < 0 {
		return nil
	}
	return &en.Ranges[en.of[i]]
}

// Name returns the name of the innermost range enclosing event i, "" when none.
func (en *Enclosing) Name(i int) string {
	if r := en.Range(i); r != nil {
		return en.t.String(r.Name)
	}
	return ""
}

// Path returns the names of the ranges enclosing event i, outermost first,
// joined by "/"; "" when none.
func (en *Enclosing) Path(i int) string {
	if i < 0 || i >= len(en.of) {
		return ""
	}
	var names []string
	for r := en.of[i]; r >= 0; r = en.parent[r] {
		names = append(names, en.t.String(en.Ranges[r].Name))
	}
	for l, h := 0, len(names)-1; l < h; l, h = l+1, h-1 {
		names[l], names[h] = names[h], names[l]
	}
	return strings.Join(names, "/")
}
