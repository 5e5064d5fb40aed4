// Package handoff hands buffers from a producer to one consumer goroutine,
// in order, cycling a fixed set of them: the producer fills one while the
// consumer works through those handed over, and waits when every buffer is
// in use, so the memory is the set's and the producer is at most that far
// ahead. The writers use it to put their encoding or their write system
// calls on a core of their own.
package handoff

// Pipe is a running consumer and the buffers it cycles.
type Pipe[B any] struct {
	full chan B // handed over, in order
	free chan B // given back by the consumer, to be filled again
	done chan struct{}
}

// Start runs consume on a goroutine of its own for each buffer handed
// over, in order; consume returns the buffer emptied, to be filled again.
// spares are the buffers besides the one the producer fills first.
func Start[B any](spares []B, consume func(B) B) *Pipe[B] {
	n := len(spares) + 1 // every buffer fits in either channel: nothing waits to give one back
	p := &Pipe[B]{full: make(chan B, n), free: make(chan B, n), done: make(chan struct{})}
	for _, b := range spares {
		p.free <- b
	}
	go func() {
		defer close(p.done)
		for b := range p.full {
			p.free <- consume(b)
		}
	}()
	return p
}

// Hand gives b to the consumer and returns an empty buffer to fill next,
// waiting until one is given back.
func (p *Pipe[B]) Hand(b B) B {
	p.full <- b
	return <-p.free
}

// Send gives b to the consumer and takes nothing back: the producer's last
// buffer. Only Close may follow.
func (p *Pipe[B]) Send(b B) { p.full <- b }

// Close waits until consume has returned for every buffer handed over.
// Nothing is handed over after it.
func (p *Pipe[B]) Close() {
	close(p.full)
	<-p.done
}
