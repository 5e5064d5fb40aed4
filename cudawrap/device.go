package cudawrap

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
)

// Attribute is a CUdevice_attribute.
type Attribute int

// Some device attributes (the CU_DEVICE_ATTRIBUTE_ values).
const (
	AttrMaxThreadsPerBlock     Attribute = 1
	AttrWarpSize               Attribute = 10
	AttrMultiprocessorCount    Attribute = 16
	AttrComputeCapabilityMajor Attribute = 75
	AttrComputeCapabilityMinor Attribute = 76
	AttrMemoryPoolsSupported   Attribute = 115
)

// Device is one GPU. Its primary context is retained on first use and
// released by Driver.Close.
type Device struct {
	d       *Driver
	ordinal int
	primary atomic.Uint64 // the retained primary context, 0 before first use

	mu   sync.Mutex
	ctx  *Context    // the primary context's object
	pool *MemoryPool // the default pool's object
}

// Ordinal returns the device's ordinal.
func (dev *Device) Ordinal() int { return dev.ordinal }

// Driver returns the driver the device belongs to.
func (dev *Device) Driver() *Driver { return dev.d }

// Name returns the device's name.
func (dev *Device) Name() (string, error) {
	var name string
	_, err := dev.d.do(spanDeviceName, func() driver.Result {
		r, n := driver.DeviceName(dev.ordinal)
		name = n
		return r
	})
	return name, err
}

// Attribute returns a device attribute.
func (dev *Device) Attribute(a Attribute) (int, error) {
	r, err := dev.d.do(spanDeviceAttribute, func() driver.Result { return driver.DeviceAttribute(dev.ordinal, int(a)) })
	return int(int64(r.V)), err
}

// TotalMemory returns the device's memory size in bytes.
func (dev *Device) TotalMemory() (uint64, error) {
	r, err := dev.d.do(spanDeviceTotalMemory, func() driver.Result { return driver.DeviceTotalMem(dev.ordinal) })
	return r.V, err
}

// SetCurrent makes the device's primary context current on the calling OS
// thread, retaining it the first time (later calls are one cuCtxSetCurrent).
// Goroutines move between threads: lock the goroutine's thread
// (runtime.LockOSThread) for the current context to stay with it; cudawrap's
// own operations do not depend on it.
func (dev *Device) SetCurrent() error {
	cached := dev.primary.Load()
	r, err := dev.d.do(spanDeviceSetCurrent, func() driver.Result {
		return driver.DeviceSetCurrent(dev.ordinal, cached)
	})
	if cached == 0 && r.V != 0 {
		dev.adoptPrimary(r.V)
	}
	return err
}

// adoptPrimary records a primary context retained by this process; a second
// retain lost to a concurrent first use is given back.
func (dev *Device) adoptPrimary(h uint64) {
	if dev.primary.CompareAndSwap(0, h) {
		return
	}
	dev.d.do(spanDeviceRelease, func() driver.Result { return driver.PrimaryRelease(dev.ordinal) })
}

// primaryHandle returns the primary context, retaining it on first use.
func (dev *Device) primaryHandle() (uint64, error) {
	if h := dev.primary.Load(); h != 0 {
		return h, nil
	}
	r, err := dev.d.do(spanDeviceContext, func() driver.Result { return driver.PrimaryRetain(dev.ordinal) })
	if err != nil {
		return 0, err
	}
	dev.adoptPrimary(r.V)
	return dev.primary.Load(), nil
}

// Context returns the device's primary context (retained on first use).
func (dev *Device) Context() (*Context, error) {
	h, err := dev.primaryHandle()
	if err != nil {
		return nil, err
	}
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if dev.ctx == nil {
		dev.ctx = &Context{dev: dev, h: h, primary: true}
	}
	return dev.ctx, nil
}

// NewContext creates a context on the device (cuCtxCreate), which becomes
// current on the calling thread. Close destroys it.
func (dev *Device) NewContext() (*Context, error) {
	r, err := dev.d.do(spanContextCreate, func() driver.Result { return driver.CtxCreate(dev.ordinal, 0) })
	if err != nil {
		return nil, err
	}
	c := &Context{dev: dev, h: r.V}
	c.leak = dev.d.leaks.add("context", r.V, 1)
	return c, nil
}

// NewStream creates a stream in the device's primary context.
func (dev *Device) NewStream(opts ...StreamOption) (*Stream, error) {
	c, err := dev.Context()
	if err != nil {
		return nil, err
	}
	return c.newStream(opts)
}

// NewEvent creates an event in the device's primary context.
func (dev *Device) NewEvent(opts ...EventOption) (*Event, error) {
	c, err := dev.Context()
	if err != nil {
		return nil, err
	}
	return c.newEvent(opts)
}

// DefaultStream returns the legacy default stream of the primary context.
func (dev *Device) DefaultStream() (*Stream, error) {
	c, err := dev.Context()
	if err != nil {
		return nil, err
	}
	return c.DefaultStream(), nil
}

// Sync waits for all work of the primary context (cuCtxSynchronize); it is
// where pools give memory above their release threshold back.
func (dev *Device) Sync() error {
	c, err := dev.Context()
	if err != nil {
		return err
	}
	return c.Sync()
}

// MemInfo returns the device's free and total memory.
func (dev *Device) MemInfo() (free, total uint64, err error) {
	c, err := dev.Context()
	if err != nil {
		return 0, 0, err
	}
	return c.MemInfo()
}

// release gives back the primary context (Driver.Close).
func (dev *Device) release(d *Driver) error {
	if dev.primary.Swap(0) == 0 {
		return nil
	}
	r := driver.PrimaryRelease(dev.ordinal)
	if r.RC != 0 {
		return fmt.Errorf("device %d: %w", dev.ordinal, d.check(spanDeviceRelease, r.RC))
	}
	return nil
}
