package cudawrap

import (
	"fmt"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
)

// Context is a CUDA context: a device's primary context (Device.Context) or
// one created with Device.NewContext.
type Context struct {
	dev     *Device
	h       uint64
	primary bool
	state   closeState
	leak    *leakEntry
}

// Handle returns the CUcontext.
func (c *Context) Handle() uint64 { return c.h }

// Device returns the context's device.
func (c *Context) Device() *Device { return c.dev }

// Primary reports whether c is its device's primary context.
func (c *Context) Primary() bool { return c.primary }

// SetCurrent makes c current on the calling OS thread.
func (c *Context) SetCurrent() error {
	if c.state.closed() {
		return fmt.Errorf("context.setcurrent: %w", ErrClosed)
	}
	_, err := c.dev.d.do(spanContextSetCurrent, func() driver.Result { return driver.CtxSetCurrent(c.h) })
	return err
}

// Sync waits for the context's work (cuCtxSynchronize, with c made current).
func (c *Context) Sync() error {
	if c.state.closed() {
		return fmt.Errorf("context.sync: %w", ErrClosed)
	}
	_, err := c.dev.d.do(spanContextSync, func() driver.Result { return driver.CtxSync(c.h) })
	return err
}

// MemInfo returns the free and total memory of the context's device.
func (c *Context) MemInfo() (free, total uint64, err error) {
	if c.state.closed() {
		return 0, 0, fmt.Errorf("context.meminfo: %w", ErrClosed)
	}
	r, err := c.dev.d.do(spanContextMemInfo, func() driver.Result { return driver.MemInfo(c.h) })
	return r.V, r.V2, err
}

// NewStream creates a stream in c.
func (c *Context) NewStream(opts ...StreamOption) (*Stream, error) { return c.newStream(opts) }

// NewEvent creates an event in c.
func (c *Context) NewEvent(opts ...EventOption) (*Event, error) { return c.newEvent(opts) }

// DefaultStream returns c's legacy default stream (handle 0); it cannot be closed.
func (c *Context) DefaultStream() *Stream { return &Stream{ctx: c, isDefault: true} }

// Close destroys a created context (and everything it owns). A primary
// context is the device's: closing it returns ErrNotOwned.
func (c *Context) Close() error {
	if c.primary {
		return fmt.Errorf("context.close: primary context: %w", ErrNotOwned)
	}
	if !c.state.close() {
		return fmt.Errorf("context.close: %w", ErrClosed)
	}
	c.dev.d.leaks.remove(c.leak)
	_, err := c.dev.d.do(spanContextClose, func() driver.Result { return driver.CtxDestroy(c.h) })
	return err
}
