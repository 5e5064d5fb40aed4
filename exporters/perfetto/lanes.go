package perfetto

import (
	"strconv"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// lanes are the lane groups and what is on their lanes, kept where the
// records are rendered (the pipe's renderer), as are the names objects were
// given: the Writer hands over where an interval starts (pipe.place), the
// names (pipe.objectName), and the lifetimes and start/end ranges that ended
// (pipe.lifetime, pipe.rangeDone), which are drawn on the lanes they were
// placed on, if any (an eighth of the replay's goroutine's instructions, on
// the busier core).
type lanes struct {
	groups   map[groupKey]*laneGroup
	of       map[int]laneSpot // live object (creating event) or open start/end range (opener) -> lane
	names    map[nameKey]trace.StringID
	nextJSON uint64 // Chrome JSON tids of lanes
}

// place adds where an interval starting at start in the group (pid's,
// kind, g) is placed: the lane of the object created by the event at key
// (kind uuidGroup, g its kind) or the start/end range it opened (kind
// uuidRangeGroup). Placing it may declare tracks: the flush of owed to
// owedAt goes first (owed nil: none), and a tick due at start.
func (p *pipe) place(pid uint32, kind, g uint64, start int64, key int, owed *track, owedAt int64) {
	tick := p.tickAt(start)
	r := p.next()
	r.kind, r.argN, r.tick, r.nameID = recPlace, 0, tick, pid
	r.tr, r.t, r.a, r.b, r.u = owed, start, kind<<8|g, uint64(owedAt), int64(key)
}

// objectName adds the name an object of proc's was given.
func (p *pipe) objectName(proc *track, kind trace.Object, handle uint64, name trace.StringID) {
	r := p.slot()
	r.kind, r.argN, r.tick = recName, 0, false
	r.tr, r.a, r.b, r.nameID = proc, handle, uint64(name), uint32(kind)
}

// rangeDone adds the end of a start/end range r.
func (p *pipe) rangeDone(rg *analysis.Range) {
	r := p.slot()
	r.kind, r.argN, r.tick = recRangeDone, 0, false
	r.t, r.u, r.b, r.a, r.nameID = rg.Start, rg.End, uint64(rg.Open), uint64(rg.Domain), uint32(rg.Name)
}

// renderPlace places an interval (a place record).
func (p *pipe) renderPlace(r *rec) {
	if r.tr != nil {
		p.out.flush(int64(r.b), r.tr, false)
	}
	p.lanes.of[int(r.u)] = p.placeOn(p.procs[r.nameID], r.a>>8, r.a&0xff, r.t)
}

// renderRangeDone draws the start/end range of a rangeDone record on its
// lane.
func (p *pipe) renderRangeDone(r *rec) {
	spot, ok := p.lanes.of[int(r.b)]
	if !ok {
		return
	}
	delete(p.lanes.of, int(r.b))
	args := p.args[:0]
	if d := p.t.String(trace.StringID(r.a)); d != "" {
		args = append(args, arg{key: keyDomain, str: d})
	}
	p.args = args
	tr, end := p.finishOnLane(spot, r.t, r.u)
	name := trace.StringID(r.nameID)
	p.out.complete(tr, r.t, end, sliceName{s: p.t.String(name), kind: nameString, id: uint32(name)}, catRange, args)
}

// placeOn returns the lane of an interval starting at start in the group
// (proc's, kind, g), declaring the group and lane tracks it needs.
func (p *pipe) placeOn(proc *track, kind, g uint64, start int64) laneSpot {
	pid := proc.pid
	k := laneGroupKey(pid, kind, g)
	lg := p.lanes.groups[k]
	if lg == nil {
		name := "NVTX start/end ranges"
		if kind == uuidGroup {
			name = trace.Object(g).String() + " lifetimes"
		}
		lg = &laneGroup{tr: &track{up: proc, kind: trackGroup, name: name, pid: pid,
			order: 1_000_000 + int(kind)*1000 + int(g)}}
		p.lanes.groups[k] = lg
		p.declareHere(lg.tr)
	}
	for len(lg.busy) > 0 && lg.busy[0].end <= start {
		heapPush(&lg.free, heapPop(&lg.busy, laneEndLess).lane, intLess)
	}
	if len(lg.free) > 0 {
		return laneSpot{lg, heapPop(&lg.free, intLess)}
	}
	lane := len(lg.lanes)
	tr := &track{up: lg.tr, kind: trackLane,
		name: lg.tr.name + " #" + strconv.Itoa(lane), pid: pid, order: lane, jsonID: p.lanes.nextJSON}
	p.lanes.nextJSON++
	lg.lanes = append(lg.lanes, tr)
	p.declareHere(tr)
	return laneSpot{lg, lane}
}

// finishOnLane frees the lane of an interval whose end is known from its
// end on (its start if later) and returns the lane's track and that end:
// the caller writes the interval there next.
func (p *pipe) finishOnLane(s laneSpot, start, end int64) (*track, int64) {
	end = max(end, start)
	heapPush(&s.g.busy, laneEnd{end, s.lane}, laneEndLess)
	return s.g.lanes[s.lane], end
}
