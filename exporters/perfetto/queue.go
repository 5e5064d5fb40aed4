package perfetto

import "slices"

// timeline takes the Writer's records: a sink's, but for the slices of
// thread tracks, which it takes whole (a call with its end, the begin of a
// range, span or frame, the end of one, an instant) and puts in their
// track's order itself (threadQueues), where they are rendered: on the
// pipe's goroutine, not the replay's. A record flushed says that a flush
// of its track at its time went before it.
type timeline interface {
	// declare writes a track's description.
	declare(tr *track)
	// call flushes tr to t, begins a call's slice at t with the
	// arguments of c, queues its end at end when ends, and flushes tr to t
	// again.
	call(t int64, tr *track, name *sliceName, cat category, c *callFields, flowOut, flowIn uint64, end int64, ends, flushed bool)
	// open flushes tr to t and begins a range's, span's or frame's slice.
	open(t int64, tr *track, name sliceName, cat category, args []arg, flushed bool)
	// close queues the end, at t with args, of tr's innermost slice
	// whose end is not queued yet.
	close(t int64, tr *track, args []arg)
	// mark flushes tr to t and queues an instant at t.
	mark(t int64, tr *track, name string)
	// flush writes tr's queued records that nothing to come can precede:
	// those before t and the slices' ends at t; all of them with all.
	flush(t int64, tr *track, all bool)
	complete(tr *track, start, end int64, name sliceName, cat category, args []arg)
	counter(t int64, tr *track, v int64)
	// finish ends the output; it returns the first write error.
	finish() error
	// size returns the bytes rendered so far.
	size() int64
}

// threadQueues renders a timeline to a sink: each thread track's ends and
// instants wait on its queue until the track is flushed past their time.
type threadQueues struct {
	out sink
	q   []threadQueue // by track uuid
}

var _ timeline = (*threadQueues)(nil)

// threadQueue is a thread track's records waiting for their time.
type threadQueue struct {
	pend []op // sorted by op.before from head on
	head int
	args []arg // end arguments of pending records
	seq  uint64
}

// op is a record of a thread's track waiting for its time: a slice's end
// or an instant. Records of a track go out in the order (t, class, seq):
// by time, instants after the slices' begins and ends at the same time,
// else in the order they were made.
type op struct {
	t      int64
	seq    uint64 // class in the top bit
	call   bool   // the end of a call's slice
	mark   bool
	name   string // instants
	argOff uint32 // end arguments in threadQueue.args
	argN   uint32
}

const instantClass = 1 << 63

func (o *op) before(p *op) bool {
	if o.t != p.t {
		return o.t < p.t
	}
	return o.seq < p.seq
}

func (tq *threadQueues) of(tr *track) *threadQueue {
	if int(tr.uuid) >= len(tq.q) {
		tq.q = append(tq.q, make([]threadQueue, int(tr.uuid)+1-len(tq.q))...)
	}
	return &tq.q[tr.uuid]
}

func (tq *threadQueues) declare(tr *track) { tq.out.declare(tr) }

func (tq *threadQueues) call(t int64, tr *track, name *sliceName, cat category, c *callFields, flowOut, flowIn uint64, end int64, ends, flushed bool) {
	q := tq.of(tr)
	if !flushed && q.due(t) {
		tq.flushQueue(q, t, tr, false)
	}
	tq.out.call(t, tr, name, cat, c, flowOut, flowIn, end-t)
	if ends {
		q.addEnd(end, true, nil)
	}
	if q.due(t) {
		tq.flushQueue(q, t, tr, false)
	}
}

// due says whether flushQueue(q, t, tr, false) has a record to write: an
// inlined test before it, as most calls' ends are after the next record of
// their thread. (A queue it emptied was emptied, so one with no record due
// needs nothing else of it.)
func (q *threadQueue) due(t int64) bool {
	return q.head < len(q.pend) && q.pend[q.head].t <= t
}

func (tq *threadQueues) open(t int64, tr *track, name sliceName, cat category, args []arg, flushed bool) {
	if !flushed {
		tq.flushQueue(tq.of(tr), t, tr, false)
	}
	tq.out.begin(t, tr, name, cat, args, 0, 0, -1)
}

func (tq *threadQueues) close(t int64, tr *track, args []arg) { tq.of(tr).addEnd(t, false, args) }

func (tq *threadQueues) mark(t int64, tr *track, name string) {
	q := tq.of(tr)
	tq.flushQueue(q, t, tr, false)
	q.seq++
	q.insert(op{t: t, seq: instantClass | q.seq, mark: true, name: name})
}

func (tq *threadQueues) flush(t int64, tr *track, all bool) { tq.flushQueue(tq.of(tr), t, tr, all) }

func (tq *threadQueues) complete(tr *track, start, end int64, name sliceName, cat category, args []arg) {
	tq.out.complete(tr, start, end, name, cat, args)
}

func (tq *threadQueues) counter(t int64, tr *track, v int64) { tq.out.counter(t, tr, v) }
func (tq *threadQueues) finish() error                       { return tq.out.finish() }
func (tq *threadQueues) size() int64                         { return tq.out.size() }

// addEnd queues the end of a slice at t with args.
func (q *threadQueue) addEnd(t int64, call bool, args []arg) {
	q.seq++
	var off, n uint32
	if len(args) > 0 {
		off, n = uint32(len(q.args)), uint32(len(args))
		q.args = append(q.args, args...)
	}
	if k := len(q.pend); k == q.head || q.pend[k-1].t < t || q.pend[k-1].t == t && q.pend[k-1].seq < q.seq {
		// after every record queued (most ends): stored in place, field
		// by field; an op made on the stack and copied stalled on store
		// forwarding (5 % of the timeline's CPU profile)
		q.pend = slices.Grow(q.pend, 1)[:k+1]
		o := &q.pend[k]
		o.t, o.seq, o.call, o.mark, o.name, o.argOff, o.argN = t, q.seq, call, false, "", off, n
		return
	}
	q.insert(op{t: t, seq: q.seq, call: call, argOff: off, argN: n})
}

func (q *threadQueue) insert(o op) {
	q.pend = append(q.pend, o)
	i := len(q.pend) - 1
	for i > q.head && o.before(&q.pend[i-1]) {
		q.pend[i] = q.pend[i-1]
		i--
	}
	q.pend[i] = o
}

// flushQueue writes the records of q, tr's, that nothing to come can
// precede: those before t, and the slices' ends at t (a record still to
// come on tr is at t or later, and at t an instant comes after the
// slices). all writes every record.
func (tq *threadQueues) flushQueue(q *threadQueue, t int64, tr *track, all bool) {
	for q.head < len(q.pend) {
		o := &q.pend[q.head]
		if !all && (o.t > t || o.t == t && o.seq&instantClass != 0) {
			break
		}
		if o.mark {
			tq.out.instant(o.t, tr, o.name)
		} else {
			tq.out.end(o.t, tr, q.args[o.argOff:o.argOff+o.argN], o.call)
		}
		q.head++
	}
	if q.head == len(q.pend) {
		q.pend, q.head, q.args = q.pend[:0], 0, q.args[:0]
	}
}
