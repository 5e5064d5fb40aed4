package cudawrap

import (
	"fmt"
	"time"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
	"github.com/cuprof/cuprof/trace"
)

// EventOption configures NewEvent.
type EventOption interface{ applyEvent(*eventConfig) }

type eventConfig struct{ flags uint32 }

type eventOptionFunc func(*eventConfig)

func (f eventOptionFunc) applyEvent(c *eventConfig) { f(c) }

// BlockingSync makes Sync block the thread instead of spinning (CU_EVENT_BLOCKING_SYNC).
func BlockingSync() EventOption { return eventOptionFunc(func(c *eventConfig) { c.flags |= 0x1 }) }

// DisableTiming creates an event without timing data (CU_EVENT_DISABLE_TIMING):
// cheaper to record, but Elapsed fails.
func DisableTiming() EventOption { return eventOptionFunc(func(c *eventConfig) { c.flags |= 0x2 }) }

// Event is a CUDA event.
type Event struct {
	ctx   *Context
	h     uint64
	state closeState
	leak  *leakEntry
}

func (c *Context) newEvent(opts []EventOption) (*Event, error) {
	var cfg eventConfig
	for _, o := range opts {
		o.applyEvent(&cfg)
	}
	if c.state.closed() {
		return nil, fmt.Errorf("event.create: context: %w", ErrClosed)
	}
	r, err := c.dev.d.do(spanEventCreate, func() driver.Result { return driver.EventCreate(c.h, cfg.flags) })
	if err != nil {
		return nil, err
	}
	e := &Event{ctx: c, h: r.V}
	e.leak = c.dev.d.leaks.add("event", r.V, 2)
	return e, nil
}

// Handle returns the CUevent.
func (e *Event) Handle() uint64 { return e.h }

// Record records the event on stream s (nil: the legacy default stream).
func (e *Event) Record(s *Stream) error {
	if e.state.closed() {
		return fmt.Errorf("event.record: %w", ErrClosed)
	}
	var sh uint64
	if s != nil {
		if s.state.closed() {
			return fmt.Errorf("event.record: stream: %w", ErrClosed)
		}
		sh = s.h
	}
	_, err := e.ctx.dev.d.do(spanEventRecord, func() driver.Result { return driver.EventRecord(e.h, sh) })
	return err
}

// Sync waits for the event (cuEventSynchronize).
func (e *Event) Sync() error {
	if e.state.closed() {
		return fmt.Errorf("event.sync: %w", ErrClosed)
	}
	_, err := e.ctx.dev.d.do(spanEventSync, func() driver.Result { return driver.EventSync(e.h) })
	return err
}

// Done reports whether the work before the event has finished (cuEventQuery).
func (e *Event) Done() (bool, error) {
	if e.state.closed() {
		return false, fmt.Errorf("event.done: %w", ErrClosed)
	}
	r, err := e.ctx.dev.d.do(spanEventQuery, func() driver.Result { return driver.EventQuery(e.h) })
	if r.RC == int32(trace.ErrNotReady) {
		return false, nil
	}
	return err == nil, err
}

// Elapsed returns the time between e and end, both recorded and completed.
func (e *Event) Elapsed(end *Event) (time.Duration, error) {
	if e.state.closed() || end.state.closed() {
		return 0, fmt.Errorf("event.elapsed: %w", ErrClosed)
	}
	r, err := e.ctx.dev.d.do(spanEventElapsed, func() driver.Result { return driver.EventElapsed(e.h, end.h) })
	return time.Duration(r.F * float64(time.Millisecond)), err
}

// Close destroys the event; a second Close returns ErrClosed.
func (e *Event) Close() error {
	if !e.state.close() {
		return fmt.Errorf("event.close: %w", ErrClosed)
	}
	e.ctx.dev.d.leaks.remove(e.leak)
	_, err := e.ctx.dev.d.do(spanEventClose, func() driver.Result { return driver.EventDestroy(e.h) })
	return err
}
