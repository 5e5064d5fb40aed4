package perfetto

import (
	"io"
	"runtime"

	"github.com/cuprof/cuprof/trace"
)

// pipe is a sink that hands the records it is given to another goroutine,
// where the sink it wraps renders and writes them: the replay and the
// Writer's bookkeeping run on one core, the encoding and the write system
// calls on another. The records are rendered in the order they were made,
// by the one sink, so the output is the same byte for byte.
//
// Records go in batches of pipeBatch; pipeBatches of them exist, so the
// replay is at most that far ahead of the output and the memory is fixed.
type pipe struct {
	out   sink
	cur   *batch
	full  chan *batch // to the renderer, in order
	free  chan *batch // rendered, to be filled again
	sized chan int64  // the sink's size after a batch that asked for it
	done  chan error  // the sink's finish, once full is closed
	final int64       // the size, once finished
}

const (
	pipeBatch   = 4096
	pipeBatches = 4
)

// A batch is records, the arguments they carry and the text of lifetimes'
// names (which the Writer makes in a buffer it reuses).
type batch struct {
	recs    []rec // pipeBatch of them, zero past n
	n       int
	args    []arg
	text    []byte
	askSize bool
}

type recKind uint8

const (
	recDeclare recKind = iota
	recBegin
	recEnd
	recComplete
	recInstant
	recCounter
)

// rec is one call of the sink, in 72 bytes. Its fields by kind: begin: t,
// u the duration, the name, cat, the arguments, a and b the flows out and
// in; end: t, the arguments, call; complete: t and u the start and end, the
// name, cat, the arguments; instant: t and s; counter: t and u the value. A
// name is nameKind with nameID and s, or for a lifetime's, a the handle, b
// the kind and the label, nameID the length of its text. The arguments
// (argN) and lifetimes' texts are those of the batch, in the order of the
// records.
type rec struct {
	kind     recKind
	call     bool
	cat      category
	nameKind nameKind
	argN     uint16
	nameID   uint32
	tr       *track
	t, u     int64
	a, b     uint64
	s        string
}

var _ sink = (*pipe)(nil)

// pipeline returns out behind a pipe when the process can run two
// goroutines at once, else out itself.
func pipeline(out sink) sink {
	if runtime.GOMAXPROCS(0) < 2 {
		return out
	}
	return &pipe{out: out, cur: &batch{recs: make([]rec, pipeBatch)}}
}

// start starts the renderer, when the first batch is full: a timeline of
// fewer records is rendered where finish is called, and a Writer dropped
// before that leaves no goroutine behind.
func (p *pipe) start() {
	p.full, p.free = make(chan *batch, pipeBatches), make(chan *batch, pipeBatches)
	p.sized, p.done = make(chan int64), make(chan error, 1)
	for i := 1; i < pipeBatches; i++ {
		p.free <- &batch{recs: make([]rec, pipeBatch)}
	}
	go p.render()
}

// render runs on its own goroutine until full is closed.
func (p *pipe) render() {
	for b := range p.full {
		ask := b.askSize
		p.renderBatch(b)
		if ask {
			p.sized <- p.out.size()
		}
		p.free <- b
	}
	p.done <- p.out.finish()
}

// renderBatch has the sink render the records of b and empties b.
func (p *pipe) renderBatch(b *batch) {
	var args []arg
	rest, text := b.args, b.text
	for i := range b.recs[:b.n] {
		r := &b.recs[i]
		args, rest = rest[:r.argN], rest[r.argN:]
		switch r.kind {
		case recDeclare:
			p.out.declare(r.tr)
			continue
		case recEnd:
			p.out.end(r.t, r.tr, args, r.call)
			continue
		case recInstant:
			p.out.instant(r.t, r.tr, r.s)
			continue
		case recCounter:
			p.out.counter(r.t, r.tr, r.u)
			continue
		}
		n := sliceName{s: r.s, kind: r.nameKind, id: r.nameID}
		if n.kind == nameObject {
			n.id = 0
			n.b, text = text[:r.nameID], text[r.nameID:]
			n.obj = objName{handle: r.a, kind: uint32(r.b >> 32), label: trace.StringID(r.b)}
		}
		if r.kind == recBegin {
			p.out.begin(r.t, r.tr, n, r.cat, args, r.a, r.b, r.u)
		} else {
			p.out.complete(r.tr, r.t, r.u, n, r.cat, args)
		}
	}
	clear(b.recs[:b.n]) // the zero records add fills; what they pointed to is not kept
	clear(b.args)
	b.n, b.args, b.text, b.askSize = 0, b.args[:0], b.text[:0], false
}

// add returns the next record of the batch being filled, sending the batch
// on when it is full.
func (p *pipe) add(k recKind, t int64, tr *track) *rec {
	b := p.cur
	if b.n == len(b.recs) {
		p.send()
		b = p.cur
	}
	r := &b.recs[b.n]
	b.n++
	r.kind, r.t, r.tr = k, t, tr
	return r
}

func (p *pipe) send() {
	if p.full == nil {
		p.start()
	}
	p.full <- p.cur
	p.cur = <-p.free
}

func (p *pipe) addArgs(r *rec, args []arg) {
	if len(args) > 0 {
		r.argN = uint16(len(args))
		p.cur.args = append(p.cur.args, args...)
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

func (p *pipe) begin(t int64, tr *track, name sliceName, cat category, args []arg, flowOut, flowIn uint64, dur int64) {
	r := p.add(recBegin, t, tr)
	r.u, r.cat, r.a, r.b = dur, cat, flowOut, flowIn
	p.addName(r, name)
	p.addArgs(r, args)
}

func (p *pipe) end(t int64, tr *track, args []arg, call bool) {
	r := p.add(recEnd, t, tr)
	r.call = call
	p.addArgs(r, args)
}

func (p *pipe) complete(tr *track, start, end int64, name sliceName, cat category, args []arg) {
	r := p.add(recComplete, start, tr)
	r.u, r.cat = end, cat
	p.addName(r, name)
	p.addArgs(r, args)
}

func (p *pipe) instant(t int64, tr *track, name string) { p.add(recInstant, t, tr).s = name }

func (p *pipe) counter(t int64, tr *track, v int64) { p.add(recCounter, t, tr).u = v }

// size waits for the records so far to be rendered and returns the size
// of the output.
func (p *pipe) size() int64 {
	switch {
	case p.cur == nil:
		return p.final
	case p.full == nil:
		p.renderBatch(p.cur)
		return p.out.size()
	}
	p.cur.askSize = true
	p.send()
	return <-p.sized
}

func (p *pipe) finish() error {
	var err error
	if p.full == nil {
		p.renderBatch(p.cur)
		err = p.out.finish()
	} else {
		p.full <- p.cur
		close(p.full)
		err = <-p.done
	}
	p.cur = nil
	p.final = p.out.size()
	return err
}

// blockWriter writes the sinks' output blocks. With two goroutines to
// spare it writes each block on a goroutine of its own while the next is
// filled (the write system calls cost as much as the encoding: page cache
// copies of 80 to 230 bytes an event); else it writes it where it is.
type blockWriter struct {
	w      io.Writer
	size   int // of a block
	err    error
	closed bool
	full   chan []byte // blocks to write, in order
	free   chan []byte // written blocks, to be filled again
	done   chan error
}

// writeBlocks is the number of blocks a blockWriter cycles through.
const writeBlocks = 3

func newBlockWriter(w io.Writer, size int) (*blockWriter, []byte) {
	return &blockWriter{w: w, size: size}, make([]byte, 0, size)
}

// start starts the goroutine that writes, at the first block: a Writer
// dropped before that leaves none behind.
func (bw *blockWriter) start() {
	bw.full, bw.free, bw.done = make(chan []byte, writeBlocks), make(chan []byte, writeBlocks), make(chan error, 1)
	for i := 1; i < writeBlocks; i++ {
		bw.free <- make([]byte, 0, bw.size)
	}
	go bw.run()
}

func (bw *blockWriter) run() {
	var err error
	for b := range bw.full {
		if err == nil {
			_, err = bw.w.Write(b)
		}
		bw.free <- b[:0]
	}
	bw.done <- err
}

// write writes b (or has it written) and returns an empty block to fill
// next. It returns the first error of a write, once it is known: a write
// on the writer's goroutine is known at close.
func (bw *blockWriter) write(b []byte) ([]byte, error) {
	if bw.full == nil && !bw.closed && runtime.GOMAXPROCS(0) >= 2 {
		bw.start()
	}
	if bw.full == nil {
		if bw.err == nil {
			_, bw.err = bw.w.Write(b)
		}
		return b[:0], bw.err
	}
	bw.full <- b
	return <-bw.free, nil
}

// close waits for the blocks to be written and returns the first error.
// Blocks written after it are written where they are filled: the last
// block of an output is written after close, so that an output of one
// block starts no goroutine.
func (bw *blockWriter) close() error {
	if bw.full != nil {
		close(bw.full)
		bw.err = <-bw.done
		bw.full = nil
	}
	bw.closed = true
	return bw.err
}
