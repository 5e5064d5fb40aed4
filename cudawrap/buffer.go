package cudawrap

import (
	"fmt"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
)

// AllocOption configures Stream.Alloc.
type AllocOption interface{ applyAlloc(*allocConfig) }

type allocConfig struct{ pool *MemoryPool }

type allocOptionFunc func(*allocConfig)

func (f allocOptionFunc) applyAlloc(c *allocConfig) { f(c) }

// FromPool allocates from pool p (cuMemAllocFromPoolAsync) instead of the
// device's current pool (cuMemAllocAsync).
func FromPool(p *MemoryPool) AllocOption {
	return allocOptionFunc(func(c *allocConfig) { c.pool = p })
}

// Buffer is device memory allocated in stream order.
type Buffer struct {
	s     *Stream
	ptr   uint64
	size  uint64
	pool  *MemoryPool
	state closeState
	leak  *leakEntry
}

// Alloc allocates size bytes ordered on s, from the device's current pool or
// the one given with FromPool. Too large a size gives an error matching
// ErrOutOfMemory.
func (s *Stream) Alloc(size uint64, opts ...AllocOption) (*Buffer, error) {
	var cfg allocConfig
	for _, o := range opts {
		o.applyAlloc(&cfg)
	}
	if s.state.closed() {
		return nil, fmt.Errorf("buffer.alloc: stream: %w", ErrClosed)
	}
	var ph uint64
	if cfg.pool != nil {
		if cfg.pool.state.closed() {
			return nil, fmt.Errorf("buffer.alloc: pool: %w", ErrClosed)
		}
		ph = cfg.pool.h
	}
	ctx := s.ctx.h
	r, err := s.ctx.dev.d.do(spanBufferAlloc, func() driver.Result { return driver.AllocAsync(ctx, size, ph, s.h) })
	if err != nil {
		return nil, err
	}
	b := &Buffer{s: s, ptr: r.V, size: size, pool: cfg.pool}
	b.leak = s.ctx.dev.d.leaks.add("buffer", r.V, 1)
	return b, nil
}

// Ptr returns the buffer's device address.
func (b *Buffer) Ptr() uint64 { return b.ptr }

// Size returns the size it was allocated with.
func (b *Buffer) Size() uint64 { return b.size }

// Stream returns the stream it was allocated on.
func (b *Buffer) Stream() *Stream { return b.s }

// Close frees the buffer in order on its stream (cuMemFreeAsync); when that
// stream was closed already, on the legacy default stream. The memory goes
// back to its pool, which keeps it until a synchronize finds more than the
// release threshold unused.
func (b *Buffer) Close() error {
	s := b.s
	if s.state.closed() {
		s = s.ctx.DefaultStream()
	}
	return b.CloseOn(s)
}

// CloseOn frees the buffer in order on stream s.
func (b *Buffer) CloseOn(s *Stream) error {
	if s.state.closed() {
		return fmt.Errorf("buffer.close: stream: %w", ErrClosed)
	}
	if !b.state.close() {
		return fmt.Errorf("buffer.close: %w", ErrClosed)
	}
	d := b.s.ctx.dev.d
	d.leaks.remove(b.leak)
	ctx := s.ctx.h
	_, err := d.do(spanBufferClose, func() driver.Result { return driver.FreeAsync(ctx, b.ptr, s.h) })
	return err
}
