package perfetto

import (
	"io"
	"math"
	"runtime"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/handoff"
	"github.com/cuprof/cuprof/trace"
)

// pipe takes the Writer's records (a timeline's calls: queue.go) and hands
// them to another goroutine, where the threadQueues it wraps order and
// render them: the replay and the Writer's bookkeeping run on one core, the
// thread tracks' queues, the encoding and the write system calls on
// another. The records are rendered in the order they were made, by the one
// sink, so the output is the same byte for byte.
//
// Records go in batches of pipeBatch; pipeBatches of them exist, so the
// replay is at most that far ahead of the output and the memory is fixed.
// Where one goroutine runs at a time (GOMAXPROCS 1) a full batch is
// rendered where it was filled (inline).
//
// What the Writer's goroutine writes and what the renderer's writes are on
// cache lines of their own: sharing one cost a stall at most records (5-8 %
// of the timeline's CPU profile at three instructions).
type pipe struct {
	out *threadQueues
	t   *trace.Trace // its tables name lifetimes

	// the Writer's
	cur    *batch
	to     *handoff.Pipe[*batch] // to the renderer; nil until a batch is full
	sized  chan int64            // the sink's size after a batch that asked for it
	final  int64                 // the size, once finished
	inline bool
	// the counters are due to the time tickT before the next record
	// (tickDue)
	tickT   int64
	tickDue bool
	// the call site named last (callerName)
	lastCaller struct {
		pid  uint32
		addr uint64
		name string
	}

	_ [cacheLines]byte

	// the renderer's: a lifetime's name and arguments, a call's name, what
	// numbers the tracks, the counters
	name     []byte
	args     []arg
	callName sliceName
	nextUUID uint64
	ctr      counters

	_ [cacheLines]byte
}

// cacheLines is room for two cache lines (the pairs that processors fetch
// together): what separates what one goroutine writes from another's.
const cacheLines = 128

const (
	pipeBatch   = 4096
	pipeBatches = 4
)

// A batch is records, the arguments they carry and the text of lifetimes'
// names (which the Writer makes in a buffer it reuses).
type batch struct {
	recs    []rec // pipeBatch of them; past n, those of a batch before
	n       int
	args    []arg
	text    []byte
	askSize bool
}

type recKind uint8

const (
	recDeclare recKind = iota
	recCall
	recOpen
	recClose
	recMark
	recFlush
	recComplete
	recCounter
	recLifetime
	recDelta
	recTick
)

// rec is one call of the timeline, in 104 bytes. Its fields by kind (each
// has tr): call: t, u the end, the name, cat, c, a and b the flows out and
// in, call (ends), flushed; open: t, the name, cat, the
// arguments, flushed; close: t, the arguments; mark: t and s; flush: t,
// call (all); complete: t and u the start and end, the name, cat, the
// arguments; counter: t and u the value; lifetime: t and u the start and
// end, a the handle, b the kind and the label, nameID the end's reason,
// c.size the bytes, c.device, c.stream the pool; delta (a change of a
// bytes-in-use counter): tr the process, t, u the bytes added (or taken
// back), b the order, a the pool, c.device, nameID the kind, call
// DefaultPool; tick: t. A name is nameKind with nameID and
// s, or for a lifetime's, a the handle, b the kind and the label, nameID
// the length of its text. The arguments (argN) and lifetimes' texts are
// those of the batch, in the order of the records.
type rec struct {
	kind     recKind
	call     bool
	flushed  bool
	tick     bool // the counters' values before t go first
	cat      category
	nameKind nameKind
	argN     uint16
	nameID   uint32
	tr       *track
	t, u     int64
	a, b     uint64
	s        string
	c        callFields
}

// pipeline returns the pipe of the records rendered to out: rendered on a
// goroutine of their own when the process can run two goroutines at once.
func pipeline(t *trace.Trace, out sink) *pipe {
	return &pipe{out: &threadQueues{out: out}, t: t, cur: &batch{recs: make([]rec, pipeBatch)},
		inline: runtime.GOMAXPROCS(0) < 2, ctr: counters{mem: map[analysis.MemoryKey]*memCounter{},
			devs: map[devKey]*devCounter{}, flushed: math.MinInt64}}
}

// start starts the renderer, when the first batch is full: a timeline of
// fewer records is rendered where finish is called, and a Writer dropped
// before that leaves no goroutine behind.
func (p *pipe) start() {
	p.sized = make(chan int64)
	spares := make([]*batch, pipeBatches-1)
	for i := range spares {
		spares[i] = &batch{recs: make([]rec, pipeBatch)}
	}
	p.to = handoff.Start(spares, func(b *batch) *batch {
		ask := b.askSize
		p.renderBatch(b)
		if ask {
			p.sized <- p.out.size()
		}
		return b
	})
}

// renderBatch has the sink render the records of b and empties b.
func (p *pipe) renderBatch(b *batch) {
	var args []arg
	rest, text := b.args, b.text
	for i := range b.recs[:b.n] {
		r := &b.recs[i]
		if r.tick && len(p.ctr.deltas) > 0 && p.ctr.deltas[0].t < r.t { // most ticks have nothing due
			p.flushCounters(r.t)
		}
		args = nil
		if r.argN != 0 { // most records have none
			args, rest = rest[:r.argN], rest[r.argN:]
		}
		switch r.kind {
		case recDeclare:
			p.number(r.tr)
			p.out.declare(r.tr)
			continue
		case recClose:
			p.out.close(r.t, r.tr, args)
			continue
		case recMark:
			p.out.mark(r.t, r.tr, r.s)
			continue
		case recFlush:
			p.out.flush(r.t, r.tr, r.call)
			continue
		case recCounter:
			p.out.counter(r.t, r.tr, r.u)
			continue
		case recLifetime:
			p.renderLifetime(r)
			continue
		case recDelta:
			k := analysis.MemoryKey{PID: r.tr.pid, Device: r.c.device, Kind: trace.Object(r.nameID), Pool: r.a, DefaultPool: r.call}
			p.ctr.addDelta(r.t, int(r.b), p.ctr.counter(k, r.tr), r.u)
			continue
		case recTick:
			p.flushCounters(r.t)
			continue
		case recCall:
			// the name by its fields, handed by pointer: a sliceName
			// made here and passed by value was copied as it was
			// being stored, and the copy stalled on store forwarding
			// (3 % of the timeline's CPU profile)
			n := &p.callName
			n.s, n.kind, n.id = r.s, nameAPI, r.nameID
			p.out.call(r.t, r.tr, n, r.cat, &r.c, r.a, r.b, r.u, r.call, r.flushed)
			continue
		}
		n := sliceName{s: r.s, kind: r.nameKind, id: r.nameID}
		if n.kind == nameObject {
			n.id = 0
			n.b, text = text[:r.nameID], text[r.nameID:]
			n.obj = objName{handle: r.a, kind: uint32(r.b >> 32), label: trace.StringID(r.b)}
		}
		switch r.kind {
		case recOpen:
			p.out.open(r.t, r.tr, n, r.cat, args, r.flushed)
		default:
			p.out.complete(r.tr, r.t, r.u, n, r.cat, args)
		}
	}
	b.n, b.args, b.text, b.askSize = 0, b.args[:0], b.text[:0], false
}

// add returns the next record of the batch being filled, sending the batch
// on when it is full.
func (p *pipe) add(k recKind, t int64, tr *track) *rec {
	r := p.slot()
	// the whole record in one store, the fields not given zero: the
	// renderer does not clear the records (nor the arguments) it has read,
	// a second pass over the memory the replay's core writes next; what
	// they point to (tracks, the tables' names) lives as long as the Writer
	*r = rec{kind: k, t: t, tr: tr}
	return r
}

// slot returns the next record of the batch being filled, as the last
// batch left it: the caller stores all of it that the record's kind has,
// and argN and tick. A tick that is due goes before it.
func (p *pipe) slot() *rec {
	if p.tickDue {
		p.putTick()
	}
	return p.next()
}

// next is slot without the tick.
func (p *pipe) next() *rec {
	b := p.cur
	if b.n == len(b.recs) {
		b = p.send()
	}
	b.n++
	return &b.recs[b.n-1]
}

// send sends the batch being filled on and returns the next one to fill.
func (p *pipe) send() *batch {
	if p.inline {
		p.renderBatch(p.cur)
		return p.cur
	}
	if p.to == nil {
		p.start()
	}
	p.cur = p.to.Hand(p.cur)
	return p.cur
}

func (p *pipe) addArgs(r *rec, args []arg) {
	if len(args) > 0 {
		r.argN = uint16(len(args))
		// one by one: a copy of the slice (typedslicecopy, a call of
		// memmove for a few 32-byte arguments) was 4 % of the Chrome
		// JSON timeline's CPU profile
		//lint:ignore S1011 measured: the loop is faster here (above)
		for i := range args {
			p.cur.args = append(p.cur.args, args[i])
		}
	}
}

func (p *pipe) addName(r *rec, n sliceName) {
	r.s, r.nameKind, r.nameID = n.s, n.kind, n.id
	if n.kind == nameObject {
		r.nameID, r.a, r.b = uint32(len(n.b)), n.obj.handle, uint64(n.obj.kind)<<32|uint64(n.obj.label)
		p.cur.text = append(p.cur.text, n.b...)
	}
}

func (p *pipe) declare(tr *track) { p.add(recDeclare, 0, tr) }

// number numbers a track as it is declared: 1, 2, ... in the order of
// declaration (small numbers are short in every record), and gives it its
// parent's number.
func (p *pipe) number(tr *track) {
	p.nextUUID++
	tr.uuid = p.nextUUID
	if tr.up != nil {
		tr.parent = tr.up.uuid
	}
}

// tick says that the counters' values at the times before t are due before
// the next record: the Writer's event at t begins (or, with t the largest
// time, the timeline ends). Ticks with no record between them are one, at
// the latest of their times.
func (p *pipe) tick(t int64) {
	if p.tickDue {
		t = max(t, p.tickT)
	}
	p.tickT, p.tickDue = t, true
}

// putTick adds the record of the tick that is due.
func (p *pipe) putTick() {
	p.tickDue = false
	r := p.next()
	r.kind, r.argN, r.tick, r.t = recTick, 0, false, p.tickT
}

// tickAt says whether the tick due, if one is, is at t, taking it: then
// the record at t made next carries it (rec.tick), most ticks, where a
// record of their own would make a third of the records. A tick due at
// another time is put as a record of its own.
func (p *pipe) tickAt(t int64) bool {
	if !p.tickDue {
		return false
	}
	if p.tickT != t {
		p.putTick()
		return false
	}
	p.tickDue = false
	return true
}

// delta adds a change of bytes in use of the allocation o of the process
// proc, at t: its bytes from its create call's Start, taken back at its
// End. Changes at one time apply in the order of the objects' creation,
// adds first (order).
func (p *pipe) delta(proc *track, o *analysis.Object, t int64, order int, bytes int64) {
	r := p.slot()
	r.kind, r.argN, r.tick, r.call, r.nameID = recDelta, 0, false, o.DefaultPool, uint32(o.Kind)
	r.tr, r.t, r.u, r.a, r.b = proc, t, bytes, o.Pool, uint64(order)
	r.c.device = o.Device
}

// call adds the record of a call's slice, of the call ev on tr, named and
// filed as api says, the flows not 0 out of it and into it: the timeline's
// call (see threadQueues.call) with the call's fields as its arguments and
// its end at its End (its Start if before).
func (p *pipe) call(ev *analysis.Event, tr *track, api *apiSlice, flowOut, flowIn uint64, ends, flushed bool) {
	tick := p.tickAt(ev.Start)
	b := p.cur // next, inlined: most records are calls'
	if b.n == len(b.recs) {
		b = p.send()
	}
	b.n++
	r := &b.recs[b.n-1]
	r.tick = tick
	// every field, one by one: a composite literal is built on the stack
	// and copied (twice the instructions); a call's record is most of the
	// records, and passing its name and arguments to here took more than
	// storing them
	r.kind, r.call, r.flushed, r.cat, r.nameKind, r.argN, r.nameID = recCall, ends, flushed, api.cat, nameAPI, 0, uint32(ev.API)
	r.tr, r.t, r.u, r.a, r.b, r.s = tr, ev.Start, max(ev.End, ev.Start), flowOut, flowIn, api.name
	r.c.handle, r.c.stream, r.c.size, r.c.device, r.c.result = ev.Handle, ev.Stream, ev.Size, ev.Device, ev.Result
	r.c.caller = ""
	if ev.Caller != 0 {
		r.c.caller = p.callerName(ev)
	}
}

// callerName is the name of ev's call site (analysis.CallSite.Name), kept
// for the site seen last: a call site makes its calls in a row.
func (p *pipe) callerName(ev *analysis.Event) string {
	if p.lastCaller.name == "" || p.lastCaller.addr != ev.Caller || p.lastCaller.pid != ev.PID {
		p.lastCaller.pid, p.lastCaller.addr, p.lastCaller.name = ev.PID, ev.Caller, ev.CallSite().Name()
	}
	return p.lastCaller.name
}

func (p *pipe) open(t int64, tr *track, name sliceName, cat category, args []arg, flushed bool) {
	tick := p.tickAt(t)
	r := p.add(recOpen, t, tr)
	r.cat, r.flushed, r.tick = cat, flushed, tick
	p.addName(r, name)
	p.addArgs(r, args)
}

func (p *pipe) close(t int64, tr *track, args []arg) { p.addArgs(p.add(recClose, t, tr), args) }

func (p *pipe) mark(t int64, tr *track, name string) {
	tick := p.tickAt(t)
	r := p.add(recMark, t, tr)
	r.s, r.tick = name, tick
}

func (p *pipe) flush(t int64, tr *track, all bool) { p.add(recFlush, t, tr).call = all }

func (p *pipe) complete(tr *track, start, end int64, name sliceName, cat category, args []arg) {
	r := p.add(recComplete, start, tr)
	r.u, r.cat = end, cat
	p.addName(r, name)
	p.addArgs(r, args)
}

// lifetime adds the complete slice of o's lifetime on tr, from its Start to
// end, label the name it was given (0 none). What the slice is named and
// its arguments are made where it is rendered (renderLifetime), from the
// object's fields: a tenth of the replay's core was spent making them.
func (p *pipe) lifetime(tr *track, o *analysis.Object, end int64, label trace.StringID) {
	r := p.slot()
	r.kind, r.call, r.flushed, r.tick, r.cat, r.nameKind, r.argN, r.nameID = recLifetime, false, false, false, catLifetime, nameObject, 0, uint32(o.Reason)
	r.tr, r.t, r.u, r.a, r.b = tr, o.Start, end, o.Handle, uint64(o.Kind)<<32|uint64(label)
	r.c.handle, r.c.stream, r.c.size, r.c.device, r.c.caller = o.Handle, o.Pool, o.Bytes, o.Device, ""
}

// renderLifetime renders the lifetime r: a complete slice named
// "KIND 0xHANDLE", or "NAME (KIND 0xHANDLE)" for an object named while it
// lived, made in a buffer (a writer looks it up by what it says, so most
// lifetimes make no string), with the handle, how it ended, and its
// bytes, device and pool, those it has.
func (p *pipe) renderLifetime(r *rec) {
	kind, label := trace.Object(r.b>>32), trace.StringID(r.b)
	b := p.name[:0]
	if label != 0 {
		b = append(append(b, p.t.String(label)...), " ("...)
	}
	b = append(append(b, kind.String()...), " 0x"...)
	b = appendHex(b, r.a)
	if label != 0 {
		b = append(b, ')')
	}
	p.name = b
	name := sliceName{b: b, kind: nameObject, obj: objName{r.a, uint32(kind), label}}
	args := append(p.args[:0], arg{key: keyHandle, kind: argHex, num: int64(r.a)},
		arg{key: keyEnd, str: analysis.EndReason(r.nameID).String()})
	if r.c.size != 0 {
		args = append(args, arg{key: keyBytes, kind: argInt, num: int64(r.c.size)})
	}
	if r.c.device != trace.NoDevice {
		args = append(args, arg{key: keyDevice, kind: argInt, num: int64(r.c.device)})
	}
	if r.c.stream != 0 {
		args = append(args, arg{key: keyPool, kind: argHex, num: int64(r.c.stream)})
	}
	p.args = args
	p.out.complete(r.tr, r.t, r.u, name, catLifetime, args)
}

// size waits for the records so far to be rendered and returns the size
// of the output.
func (p *pipe) size() int64 {
	if p.tickDue && p.cur != nil {
		p.putTick()
	}
	switch {
	case p.cur == nil:
		return p.final
	case p.to == nil:
		p.renderBatch(p.cur)
		return p.out.size()
	}
	p.cur.askSize = true
	p.send()
	return <-p.sized
}

func (p *pipe) finish() error {
	if p.tickDue {
		p.putTick()
	}
	if p.to == nil {
		p.renderBatch(p.cur)
	} else {
		p.to.Send(p.cur)
		p.to.Close() // the renderer is done with the sink: it is finished here
	}
	err := p.out.finish()
	p.cur = nil
	p.final = p.out.size()
	return err
}

// blockWriter writes the sinks' output blocks. With two goroutines to
// spare it writes each block on a goroutine of its own while the next is
// filled (the write system calls cost as much as the encoding: page cache
// copies of 80 to 230 bytes an event); else it writes it where it is.
//
// Until it is closed it writes whole multiples of blockSize, from the
// start of a block, and carries the rest of the block (part of a packet or
// an event) to the start of the next one: a large allocation is
// page-aligned, so a direct output (output.Direct) writes the blocks
// from where they are instead of copying them to a buffer of its own.
type blockWriter struct {
	w      io.Writer
	size   int // of a block
	err    error
	closed bool
	to     *handoff.Pipe[[]byte] // to the writing goroutine; nil until the first block
	werr   error                 // that goroutine's first error, read once it is closed
}

// writeBlocks is the number of blocks a blockWriter cycles through.
const writeBlocks = 3

func newBlockWriter(w io.Writer, size int) (*blockWriter, []byte) {
	return &blockWriter{w: w, size: size}, make([]byte, 0, size)
}

// start starts the goroutine that writes, at the first block: a Writer
// dropped before that leaves none behind.
func (bw *blockWriter) start() {
	spares := make([][]byte, writeBlocks-1)
	for i := range spares {
		spares[i] = make([]byte, 0, bw.size)
	}
	bw.to = handoff.Start(spares, func(b []byte) []byte {
		if bw.werr == nil {
			_, bw.werr = bw.w.Write(b)
		}
		return b[:0]
	})
}

// write writes b (or has it written): all of it once closed, else its
// whole multiples of blockSize. It returns the block to fill next, which
// starts with the rest of b. It returns the first error of a write, once
// it is known: a write on the writer's goroutine is known at close.
func (bw *blockWriter) write(b []byte) ([]byte, error) {
	whole := len(b)
	if !bw.closed && whole >= blockSize {
		whole -= whole % blockSize
	}
	if bw.to == nil && !bw.closed && runtime.GOMAXPROCS(0) >= 2 {
		bw.start()
	}
	if bw.to == nil {
		if bw.err == nil {
			_, bw.err = bw.w.Write(b[:whole])
		}
		return b[:copy(b, b[whole:])], bw.err
	}
	next := bw.to.Hand(b[:whole])
	// b is the writer's now, which only reads it until it is handed back
	return append(next, b[whole:]...), nil
}

// close waits for the blocks to be written and returns the first error.
// Blocks written after it are written where they are filled: the last
// block of an output is written after close, so that an output of one
// block starts no goroutine.
func (bw *blockWriter) close() error {
	if bw.to != nil {
		bw.to.Close()
		bw.err = bw.werr
		bw.to = nil
	}
	bw.closed = true
	return bw.err
}
