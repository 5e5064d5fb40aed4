package analysis

import (
	"fmt"
	"sort"

	"github.com/cuprof/cuprof/trace"
)

// top returns the innermost open scope of th, or nil.
func top(th *threadState) *scope {
	if n := len(th.scopes); n > 0 {
		return &th.scopes[n-1]
	}
	return nil
}

// openScope opens the push range, span or frame e on its thread.
func (tr *Tracker) openScope(i int, e *trace.Event, th *threadState) {
	a := tr.a
	parentRange, parentPath, outer := int32(-1), noPath, -1
	parentFrame, parentScope, end := NoFrame, NoScope, e.End
	if t := top(th); t != nil {
		parentRange, parentPath, parentFrame, parentScope, outer = t.rng, t.path, t.frame, t.scope, t.event
		if e.Kind != trace.KindRangePush && end > t.end {
			// a span or frame cannot outlive the scope it is in: cut it at
			// that scope's end, so that the stack stays a stack
			end = t.end
		}
	}
	// The scope is filled in its place on the stack, field by field: a
	// scope built aside and appended stalled on store forwarding (a third
	// of openScope's own samples), as did a Range literal copied into its
	// row.
	th.scopes = append(th.scopes, scope{})
	s := &th.scopes[len(th.scopes)-1]
	s.start, s.end, s.rng, s.event, s.frame, s.scope = e.Start, end, -1, i, parentFrame, parentScope
	switch e.Kind {
	case trace.KindFrame:
		s.kind, s.code, s.flags = scopeFrame, e.Code, e.Flags
		s.native = tr.a.code(e.Code).Kind == trace.CodeNative
		s.hooks = tr.cost.hiddenNs(e)
		s.rng, s.path = parentRange, parentPath
		s.frame = tr.frameChild(s.frame, e.Code)
		s.scope = tr.scopeChild(scopeNode{parent: s.scope, frame: true, code: e.Code})
	default:
		s.scope = tr.scopeChild(scopeNode{parent: s.scope, name: e.Name, domain: e.Domain})
		s.kind = scopeSpan
		if e.Kind == trace.KindRangePush {
			s.kind, s.end, end = scopePush, open, -1
		}
		depth := 0
		if parentRange >= 0 {
			depth = a.Ranges[parentRange].Depth + 1
		}
		s.path = tr.pathChild(parentPath, e.Name, e.Domain)
		s.rng = tr.newRange()
		r := &a.Ranges[s.rng]
		r.PID, r.TID, r.Start, r.End, r.Name, r.Domain = e.PID, e.TID, e.Start, end, e.Name, e.Domain
		r.Depth, r.Origin, r.Parent, r.Path, r.Stack, r.Scope = depth, e.Kind, parentRange, s.path, s.frame, s.scope
		r.Open, r.Close, r.Outer, r.EndTID = i, -1, outer, e.TID
	}
}

// expire closes the scopes on top of th's stack that ended before t.
func (tr *Tracker) expire(th *threadState, t int64) {
	for n := len(th.scopes); n > 0 && th.scopes[n-1].end < t; n = len(th.scopes) {
		tr.closeScope(th)
	}
}

// closeScope closes the innermost scope of th: its times become final and
// are added to the scope around it.
func (tr *Tracker) closeScope(th *threadState) {
	n := len(th.scopes)
	s := &th.scopes[n-1] // not copied (a stall): nothing appends to the stack before it is read
	th.scopes = th.scopes[:n-1]
	hooks := s.hooks
	if s.kind == scopeFrame {
		hooks += tr.cost.insideNs(s.native)
	}
	incl := s.end - s.start - tr.cost.enclosed(s.calls, hooks)
	if incl < 0 || s.end < s.start {
		incl = 0
	}
	times := Times{InclusiveNs: incl, SelfNs: max(incl-s.child, 0), DriverNs: s.driver, Calls: int(s.calls),
		OffPathNs: s.offPath}
	outer := -1
	if p := top(th); p != nil {
		outer = p.event
		p.calls += s.calls
		p.hooks += s.hooks
		if s.kind == scopeFrame {
			ev := tr.cost.PyEventNs
			if s.native {
				ev = tr.cost.PyCEventNs
			}
			p.hooks += 2 * ev
			if s.calls == 0 {
				p.offPath += incl
			}
		}
		p.driver += s.driver
		p.child += incl
	}
	if s.kind != scopeFrame {
		rt := &tr.a.Ranges[s.rng].Times
		rt.InclusiveNs, rt.SelfNs, rt.DriverNs, rt.Calls, rt.OffPathNs = times.InclusiveNs, times.SelfNs, times.DriverNs,
			times.Calls, times.OffPathNs
		tr.rangeEnded(s.rng)
		return
	}
	st := &tr.a.frames[s.frame].stats
	st.Activations++
	st.InclusiveNs += times.InclusiveNs
	st.SelfNs += times.SelfNs
	st.DriverNs += times.DriverNs
	st.Calls += times.Calls
	st.OffPathNs += times.OffPathNs
	if s.flags&trace.FrameUnwound != 0 {
		st.Unwound++
	}
	if s.flags&trace.FrameOpen != 0 {
		st.Open++
	}
	if tr.cfg.onFrame != nil {
		tr.frame = Frame{Open: s.event, Outer: outer, PID: th.pid, TID: th.tid, Code: s.code, Start: s.start, End: s.end,
			Flags: s.flags, Stack: s.frame, Path: s.path, Scope: s.scope, Slot: s.slot, Times: times}
		tr.cfg.onFrame(&tr.frame)
	}
}

func (tr *Tracker) rangeEnded(r int32) {
	if tr.cfg.onRange != nil {
		tr.cfg.onRange(&tr.a.Ranges[r])
	}
	if tr.cfg.forget {
		tr.closedRanges = append(tr.closedRanges, r)
	}
}

// newRange adds a zero range to the ranges (in a free row with Forget) and
// returns its index, for the caller to fill.
func (tr *Tracker) newRange() int32 {
	if n := len(tr.freeRanges); n > 0 {
		j := tr.freeRanges[n-1]
		tr.freeRanges = tr.freeRanges[:n-1]
		tr.a.Ranges[j] = Range{}
		return j
	}
	tr.a.Ranges = append(tr.a.Ranges, Range{})
	return int32(len(tr.a.Ranges) - 1)
}

// pop closes the innermost push range of th still open. It stays on the
// stack until the thread moves past the pop, so events at the pop's time
// are still inside it.
func (tr *Tracker) pop(i int, e *trace.Event, th *threadState) {
	for j := len(th.scopes) - 1; j >= 0; j-- {
		s := &th.scopes[j]
		if s.kind != scopePush || s.end != open {
			continue
		}
		s.end = e.Start
		r := &tr.a.Ranges[s.rng]
		r.End, r.Close, r.EndTID = e.Start, i, e.TID
		return
	}
	tr.a.RangeProblems = append(tr.a.RangeProblems, trace.RangeProblem{Event: i, Reason: "pop with no open range on its thread"})
}

// startRange opens an NVTX start/end range; it encloses the events of its thread
// that no push/pop range or span encloses, until it ends.
func (tr *Tracker) startRange(i int, e *trace.Event, th *threadState) {
	a := tr.a
	k := rangeKey{e.PID, e.ID}
	if _, dup := tr.started[k]; dup {
		a.RangeProblems = append(a.RangeProblems, trace.RangeProblem{Event: i, Reason: fmt.Sprintf("range id %d started twice", e.ID)})
		return
	}
	fr := NoFrame
	if t := top(th); t != nil {
		fr = t.frame
	}
	path := tr.pathChild(noPath, e.Name, e.Domain)
	r := tr.newRange()
	a.Ranges[r] = Range{
		Range: trace.Range{PID: e.PID, TID: e.TID, Start: e.Start, End: -1, Name: e.Name, Domain: e.Domain,
			Depth: -1, Origin: trace.KindRangeStart, ID: e.ID},
		Parent: -1, Path: path, Stack: fr, Open: i, Close: -1, Outer: -1, EndTID: e.TID,
	}
	tr.started[k] = r
	th.loose = append(th.loose, r)
}

// endRange ends the start/end range with e's ID, on any thread of its process.
func (tr *Tracker) endRange(i int, e *trace.Event) {
	a := tr.a
	k := rangeKey{e.PID, e.ID}
	r, ok := tr.started[k]
	if !ok {
		a.RangeProblems = append(a.RangeProblems, trace.RangeProblem{Event: i, Reason: fmt.Sprintf("end of unknown range id %d", e.ID)})
		return
	}
	delete(tr.started, k)
	rg := &a.Ranges[r]
	rg.End, rg.Close, rg.EndTID = e.Start, i, e.TID
	starter := tr.thread(rg.PID, rg.TID)
	for j, x := range starter.loose {
		if x == r {
			starter.loose = append(starter.loose[:j], starter.loose[j+1:]...)
			break
		}
	}
	tr.rangeEnded(r)
}

// The tries' lookups (pathChild, scopeChild, frameChild) ask first for the
// child a node got last: loops open the same ranges and frames under the
// same parents again and again, and the maps' keys (two or three IDs, one
// with padding) hash in several times the cost of that comparison.

// lastChild is a trie node's child found last: its key and its ID (0 when
// none yet).
type lastChild[K comparable, ID ~uint32] struct {
	key K
	id  ID
}

// remember makes id, with key k, the child of parent found last; nodes is
// how many the trie has (the cache grows to it).
func remember[K comparable, ID ~uint32](last *[]lastChild[K, ID], nodes int, parent, id ID, k K) {
	if int(parent) >= len(*last) {
		*last = append(*last, make([]lastChild[K, ID], nodes-len(*last))...)
	}
	(*last)[parent] = lastChild[K, ID]{k, id}
}

// pathChild returns the path of a range (name, domain) inside parent.
func (tr *Tracker) pathChild(parent PathID, name, domain trace.StringID) PathID {
	// (the caches' keys compared field by field here: == on a type
	// parameter compares through the instance's dictionary)
	if int(parent) < len(tr.lastPath) {
		if c := &tr.lastPath[parent]; c.id != 0 && c.key.name == name && c.key.domain == domain {
			return c.id
		}
	}
	k := pathEdge{parent, name, domain}
	id, ok := tr.pathIx[k]
	if !ok {
		id = PathID(len(tr.a.paths))
		tr.a.paths = append(tr.a.paths, pathNode{parent: parent, name: name, domain: domain})
		tr.pathIx[k] = id
	}
	remember(&tr.lastPath, len(tr.a.paths), parent, id, k)
	return id
}

// scopeChild returns the scope of n (a range or frame inside n.parent).
func (tr *Tracker) scopeChild(n scopeNode) ScopeID {
	if int(n.parent) < len(tr.lastScope) {
		if c := &tr.lastScope[n.parent]; c.id != 0 && c.key.frame == n.frame && c.key.name == n.name &&
			c.key.domain == n.domain && c.key.code == n.code {
			return c.id
		}
	}
	id, ok := tr.scopeIx[n]
	if !ok {
		id = ScopeID(len(tr.a.scopes))
		tr.a.scopes = append(tr.a.scopes, n)
		tr.scopeIx[n] = id
	}
	remember(&tr.lastScope, len(tr.a.scopes), n.parent, id, n)
	return id
}

// frameChild returns the stack of a frame running code called from parent.
func (tr *Tracker) frameChild(parent FrameID, code trace.CodeID) FrameID {
	if int(parent) < len(tr.lastFrame) {
		if c := &tr.lastFrame[parent]; c.id != 0 && c.key.code == code {
			return c.id
		}
	}
	k := frameEdge{parent, code}
	id, ok := tr.frameIx[k]
	if !ok {
		id = FrameID(len(tr.a.frames))
		rec := false
		for q := parent; q != NoFrame; q = tr.a.frames[q].parent {
			if tr.a.frames[q].code == code {
				rec = true
				break
			}
		}
		tr.a.frames = append(tr.a.frames, frameNode{parent: parent, code: code, recursive: rec})
		tr.frameIx[k] = id
	}
	remember(&tr.lastFrame, len(tr.a.frames), parent, id, k)
	return id
}

// sortedThreads returns the threads by process and thread ID, so that what
// Finish closes comes out in the same order every time.
func (tr *Tracker) sortedThreads() []*threadState {
	ths := make([]*threadState, 0, len(tr.threads))
	for _, th := range tr.threads {
		ths = append(ths, th)
	}
	sort.Slice(ths, func(i, j int) bool {
		if ths[i].pid != ths[j].pid {
			return ths[i].pid < ths[j].pid
		}
		return ths[i].tid < ths[j].tid
	})
	return ths
}
