package cudawrap

import (
	"fmt"
	"sync/atomic"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
	"github.com/cuprof/cuprof/trace"
)

// closeState is the open/closed flag every closable object carries.
type closeState struct{ done atomic.Bool }

func (s *closeState) closed() bool { return s.done.Load() }

// close marks the object closed; false when it already was.
func (s *closeState) close() bool { return s.done.CompareAndSwap(false, true) }

// StreamOption configures NewStream.
type StreamOption interface{ applyStream(*streamConfig) }

type streamConfig struct {
	flags        uint32
	priority     int
	withPriority bool
}

type streamOptionFunc func(*streamConfig)

func (f streamOptionFunc) applyStream(c *streamConfig) { f(c) }

// NonBlocking creates a stream that does not synchronize with the legacy
// default stream (CU_STREAM_NON_BLOCKING).
func NonBlocking() StreamOption {
	return streamOptionFunc(func(c *streamConfig) { c.flags |= 0x1 })
}

// WithPriority creates the stream with a priority (cuStreamCreateWithPriority;
// lower numbers are higher priorities, 0 the default).
func WithPriority(p int) StreamOption {
	return streamOptionFunc(func(c *streamConfig) { c.priority, c.withPriority = p, true })
}

// Stream is a CUDA stream.
type Stream struct {
	ctx       *Context
	h         uint64
	isDefault bool
	state     closeState
	leak      *leakEntry
}

func (c *Context) newStream(opts []StreamOption) (*Stream, error) {
	var cfg streamConfig
	for _, o := range opts {
		o.applyStream(&cfg)
	}
	if c.state.closed() {
		return nil, fmt.Errorf("stream.create: context: %w", ErrClosed)
	}
	r, err := c.dev.d.do(spanStreamCreate, func() driver.Result {
		return driver.StreamCreate(c.h, cfg.flags, cfg.priority, cfg.withPriority)
	})
	if err != nil {
		return nil, err
	}
	s := &Stream{ctx: c, h: r.V}
	s.leak = c.dev.d.leaks.add("stream", r.V, 2)
	return s, nil
}

// Handle returns the CUstream (0 for the default stream).
func (s *Stream) Handle() uint64 { return s.h }

// Context returns the stream's context.
func (s *Stream) Context() *Context { return s.ctx }

// Close destroys the stream. The default stream returns ErrNotOwned; a
// second Close returns ErrClosed.
func (s *Stream) Close() error {
	if s.isDefault {
		return fmt.Errorf("stream.close: default stream: %w", ErrNotOwned)
	}
	if !s.state.close() {
		return fmt.Errorf("stream.close: %w", ErrClosed)
	}
	s.ctx.dev.d.leaks.remove(s.leak)
	_, err := s.ctx.dev.d.do(spanStreamClose, func() driver.Result { return driver.StreamDestroy(s.h) })
	return err
}

// Sync waits for the stream's work (cuStreamSynchronize).
func (s *Stream) Sync() error {
	if s.state.closed() {
		return fmt.Errorf("stream.sync: %w", ErrClosed)
	}
	_, err := s.ctx.dev.d.do(spanStreamSync, func() driver.Result { return driver.StreamSync(s.h) })
	return err
}

// Done reports whether the stream's work has finished (cuStreamQuery).
func (s *Stream) Done() (bool, error) {
	if s.state.closed() {
		return false, fmt.Errorf("stream.done: %w", ErrClosed)
	}
	r, err := s.ctx.dev.d.do(spanStreamQuery, func() driver.Result { return driver.StreamQuery(s.h) })
	if r.RC == int32(trace.ErrNotReady) {
		return false, nil
	}
	return err == nil, err
}
