package otlp

import "github.com/cuprof/cuprof/analysis"

// Export's spans are encoded on a goroutine of their own, so that the
// replay (decoding, the analysis' state machines) and the encoding each
// have a core: the builder's callbacks copy what a span is made from
// (eventRec, or the ended Range, Frame or Object, which are values) into
// a chunk, and the encoder makes the spans of each chunk, in the order of
// the callbacks, exactly as the builder makes them inline. At most
// pipeChunks chunks wait, so a slow encoder (or a collector that holds
// the encoder through emit's back-pressure) holds the replay. With one
// core (GOMAXPROCS 1) the builder encodes inline, as the timeline does; so
// does the Streamer: its tables grow while it runs.

// withInlineEncoding has BuildStream encode on the replay's goroutine: the
// pipe's memory is its pipeChunks+2 chunks, made at its start, while the
// heap at any moment also holds whatever the encoder is in the middle of,
// which a test of what the builder keeps per event cannot tell apart.
func withInlineEncoding() Option { return optionFunc(func(c *config) { c.inline = true }) }

// pipeChunk is how many records a chunk holds before it is handed over.
const pipeChunk = 4096

// pipeChunks is how many full chunks may wait for the encoder.
const pipeChunks = 2

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
	chunk *chunk      // being filled by the replay
	full  chan *chunk // to the encoder
	free  chan *chunk // back from it
	done  chan struct{}
}

// startPipe makes b hand its records to an encoder goroutine until
// stopPipe.
func (b *builder) startPipe() {
	// Every chunk there will be is made here: the one being filled,
	// pipeChunks waiting and one being encoded. The memory the pipe holds
	// is then the same from start to end, not up to the encoder's pace.
	// free holds them all, as it does once stopPipe has handed the last
	// one over and the encoder has given every one back.
	p := &spanPipe{chunk: &chunk{}, full: make(chan *chunk, pipeChunks), free: make(chan *chunk, pipeChunks+2),
		done: make(chan struct{})}
	for range pipeChunks + 1 {
		p.free <- &chunk{}
	}
	go func() {
		defer close(p.done)
		for c := range p.full {
			b.encode(c)
			c.reset()
			p.free <- c
		}
	}()
	b.pipe = p
}

// queued appends a record of kind k to the chunk being filled, among recs
// (the chunk's slice of that kind), and returns it to be filled in; the
// caller then calls filled.
func queued[T any](p *spanPipe, k uint8, recs *[]T) *T {
	p.chunk.order = append(p.chunk.order, k)
	var zero T
	*recs = append(*recs, zero)
	return &(*recs)[len(*recs)-1]
}

// filled hands the chunk over once full.
func (p *spanPipe) filled() {
	if len(p.chunk.order) < pipeChunk {
		return
	}
	p.full <- p.chunk
	p.chunk = <-p.free // one is free: of the pipeChunks+2, at most pipeChunks wait and one is encoded
}

// stopPipe hands over the last records and waits until the encoder has
// made every span; b encodes inline after.
func (b *builder) stopPipe() {
	p := b.pipe
	if p == nil {
		return
	}
	if len(p.chunk.order) > 0 {
		p.full <- p.chunk
	}
	close(p.full)
	<-p.done
	b.pipe = nil
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
