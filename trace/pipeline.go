package trace

import "runtime"

// The read pipeline: while All's sequence is consumed, a producer goroutine
// runs the merge (read, decode, k-way merge: about a fifth of a report's
// time) ahead of the consumer and hands it the merged events in blocks, so
// that with a second core the merge is off the consumer's path. The blocks
// are a fixed ring of pipeBlocks buffers of pipeBlockEvents events each: the
// memory does not grow with the trace, and the producer is never more than
// the ring ahead.
//
// The producer lives only inside one All (or Events) iteration. When the
// sequence ends (at its last event, at an error, or because yield returned
// false) the consumer stops the producer, waits for it to end, and keeps the
// blocks it filled but did not hand out (pending): Next and All go on from
// the event after the last one given out, as without the pipeline. The
// merger belongs to the producer while it runs and to the consumer
// otherwise; its error is sticky, so the consumer reads it from the merger
// once the producer has ended, after the events that came before it.

const (
	// pipeBlockEvents is the size of a block. A run of the merge (at most
	// mergeChunk events) always fits in what is left of a block before it
	// is handed over, so a run is never split.
	pipeBlockEvents = 2048
	pipeBlocks      = 4
)

// pipeMinEvents is the smallest trace the pipeline starts for: below it the
// goroutine and its blocks (pipeBlocks*pipeBlockEvents events, 896 KiB) cost
// more than the overlap can gain; at 70K events they cost about what it
// gains (cuprof report, medians of 30 interleaved runs: 1.00 and 1.04 of
// the time; 0.85-1.06 at 250K, 0.82 at 1M;
// bench/memory/results/2026-12-02k-pipeline). Commands are tested for a heap
// that does not grow from 150K to 600K events: the pipeline runs at both.
const pipeMinEvents = 1 << 16

// pipeline is the ring between the producer and the consumer.
type pipeline struct {
	full chan []Event  // filled blocks, in merge order; closed when the producer ends
	free chan []Event  // blocks the consumer is done with
	stop chan struct{} // closed by the consumer: end before the next block
	left []Event       // written before full is closed: a block filled but not sent
}

// usePipeline reports whether All runs the merge on a goroutine of its own:
// not for a trace of fewer than r.pipeMin events, nor with one processor
// (tests set pipeMin to 0 for always, even then, or MaxInt64 for never).
func (r *EventReader) usePipeline() bool {
	return r.n >= r.pipeMin && (r.pipeMin == 0 || runtime.GOMAXPROCS(0) > 1)
}

// startPipeline starts the producer on r's merger, with r's spare blocks or
// new ones.
func (r *EventReader) startPipeline() {
	p := &pipeline{
		full: make(chan []Event, pipeBlocks),
		free: make(chan []Event, pipeBlocks),
		stop: make(chan struct{}),
	}
	for range pipeBlocks {
		var b []Event
		if n := len(r.spare); n > 0 {
			b, r.spare = r.spare[n-1], r.spare[:n-1]
		} else {
			b = make([]Event, 0, pipeBlockEvents)
		}
		p.free <- b
	}
	r.pipe = p
	go p.produce(r.m)
}

// produce fills free blocks with the merge's runs and sends them in order,
// until the merge ends (at its end, or at an error that m keeps) or stop.
func (p *pipeline) produce(m *eventMerger) {
	defer close(p.full)
	for {
		select {
		case <-p.stop: // before a free block, which may be ready too
			return
		default:
		}
		var b []Event
		select {
		case b = <-p.free:
		case <-p.stop:
			return
		}
		b = b[:0]
		done := false
		for cap(b)-len(b) >= mergeChunk {
			run, err := m.nextRun()
			b = append(b, run...)
			if done = err != nil || len(run) == 0; done {
				break
			}
		}
		if len(b) > 0 {
			select {
			case p.full <- b:
			case <-p.stop:
				p.left = b
				return
			}
		}
		if done {
			return
		}
	}
}

// stopPipeline stops the producer, if one runs, and waits for it to end; it
// keeps the blocks filled but not handed out, in order, for Next and All.
func (r *EventReader) stopPipeline() {
	p := r.pipe
	if p == nil {
		return
	}
	close(p.stop)
	for b := range p.full { // ends when the producer does
		r.pending = append(r.pending, b)
	}
	if len(p.left) > 0 {
		r.pending = append(r.pending, p.left)
	}
	r.endPipeline()
}

// endPipeline takes back the blocks of a producer that has ended.
func (r *EventReader) endPipeline() {
	for len(r.pipe.free) > 0 {
		r.spare = append(r.spare, <-r.pipe.free)
	}
	r.pipe = nil
}

// advance returns the events that follow r.run, once r.run is used up: the
// blocks kept from a stopped producer first, then the running producer's,
// then the merger's (nil at the end). With canPipe it starts a producer
// where none runs and none of its blocks are pending.
func (r *EventReader) advance(canPipe bool) ([]Event, error) {
	if r.inBlock {
		// The caller is done with the block: it goes back to the ring.
		if r.pipe != nil {
			r.pipe.free <- r.run[:0]
		} else {
			r.spare = append(r.spare, r.run[:0])
		}
		r.run, r.i, r.inBlock = nil, 0, false
	}
	if len(r.pending) > 0 {
		b := r.pending[0]
		r.pending = r.pending[:copy(r.pending, r.pending[1:])]
		r.inBlock = true
		return b, nil
	}
	if r.pipe == nil && canPipe && !r.merged {
		r.startPipeline()
	}
	if r.pipe != nil {
		if b, ok := <-r.pipe.full; ok {
			r.inBlock = true
			return b, nil
		}
		// The merge ended: the merger is the consumer's again, and says how.
		r.endPipeline()
		r.merged = true
	}
	return r.m.nextRun()
}
