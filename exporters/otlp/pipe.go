package otlp

import (
	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/handoff"
)

// Export's spans are encoded on a goroutine of their own, so that the
// replay (decoding, the analysis' state machines) and the encoding each
// have a core: the builder's callbacks copy what a span is made from
// (eventRec, or the ended Range, Frame or Object, which are values) into
// a chunk, and the encoder makes the spans of each chunk, in the order of
// the callbacks, exactly as the builder makes them inline. The pipe has
// pipeChunks chunks, so a slow encoder (or a collector that holds the
// encoder through emit's back-pressure) holds the replay. With one
// core (GOMAXPROCS 1) the builder encodes inline, as the timeline does; so
// does the Streamer: its tables grow while it runs.

// withInlineEncoding has BuildStream encode on the replay's goroutine: the
// pipe's memory is its pipeChunks chunks, made at its start, while the
// heap at any moment also holds whatever the encoder is in the middle of,
// which a test of what the builder keeps per event cannot tell apart.
func withInlineEncoding() Option { return optionFunc(func(c *config) { c.inline = true }) }

// pipeChunk is how many records a chunk holds before it is handed over:
// about 150 KB of them, which the encoder reads while they are still in a
// cache near the replay's core (chunks of 4096 records, 600 KB, cost export
// 5-10 % more CPU on the 2-core VM of docs/benchmarks.md, 512 no less).
const pipeChunk = 1024

// pipeChunks is how many chunks the pipe cycles: the one being filled,
// those waiting for the encoder and the one it encodes.
const pipeChunks = 4

// Kinds of a chunk's records.
const (
	recEvent uint8 = iota
	recRange
	recFrame
	recObject
)

// chunk is records in callback order: order names each one's kind, the
// records of each kind are in their slice, in order.
type chunk struct {
	order   []uint8
	events  []eventRec
	ranges  []analysis.Range
	frames  []analysis.Frame
	objects []analysis.Object
}

func (c *chunk) reset() {
	c.order, c.events, c.ranges, c.frames, c.objects = c.order[:0], c.events[:0], c.ranges[:0], c.frames[:0], c.objects[:0]
}

// spanPipe carries chunks from the replay to the encoder.
type spanPipe struct {
	chunk *chunk // being filled by the replay
	to    *handoff.Pipe[*chunk]
}

// startPipe makes b hand its records to an encoder goroutine until
// stopPipe. Every chunk there will be is made here, so the memory the
// pipe holds is the same from start to end, not up to the encoder's pace.
func (b *builder) startPipe() {
	spares := make([]*chunk, pipeChunks-1)
	for i := range spares {
		spares[i] = &chunk{}
	}
	b.pipe = &spanPipe{chunk: &chunk{}, to: handoff.Start(spares, func(c *chunk) *chunk {
		b.encode(c)
		c.reset()
		return c
	})}
}

// queued appends a record of kind k to the chunk being filled, among recs
// (the chunk's slice of that kind), and returns it to be filled in, every
// field of it: it may hold a record of the chunk's last use. The caller
// then calls filled.
func queued[T any](p *spanPipe, k uint8, recs *[]T) *T {
	p.chunk.order = append(p.chunk.order, k)
	r := *recs
	if len(r) < cap(r) {
		r = r[:len(r)+1]
	} else {
		var zero T
		r = append(r, zero)
	}
	*recs = r
	return &r[len(r)-1]
}

// filled hands the chunk over once full.
func (p *spanPipe) filled() {
	if len(p.chunk.order) >= pipeChunk {
		p.chunk = p.to.Hand(p.chunk)
	}
}

// stopPipe hands over the last records and waits until the encoder has
// made every span; b encodes inline after.
func (b *builder) stopPipe() {
	if p := b.pipe; p != nil {
		p.to.Send(p.chunk)
		p.to.Close()
		b.pipe = nil
	}
}

// encode makes the spans of c's records.
func (b *builder) encode(c *chunk) {
	var e, r, f, o int
	for _, k := range c.order {
		switch k {
		case recEvent:
			b.eventSpan(&c.events[e])
			e++
		case recRange:
			b.rangeSpan(&c.ranges[r])
			r++
		case recFrame:
			b.frameSpan(&c.frames[f])
			f++
		case recObject:
			b.objectSpan(&c.objects[o])
			o++
		}
	}
}
