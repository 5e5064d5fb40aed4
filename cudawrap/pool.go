package cudawrap

import (
	"fmt"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
)

// MaxReleaseThreshold keeps every freed byte in the pool: synchronizes never
// return memory to the system.
const MaxReleaseThreshold = ^uint64(0)

// Pool attributes (CUmemPool_attribute).
const (
	poolAttrReleaseThreshold   = 4
	poolAttrReservedMemCurrent = 5
	poolAttrReservedMemHigh    = 6
	poolAttrUsedMemCurrent     = 7
	poolAttrUsedMemHigh        = 8
)

// PoolOption configures NewPool.
type PoolOption interface{ applyPool(*poolConfig) }

type poolConfig struct {
	threshold    uint64
	setThreshold bool
}

type poolOptionFunc func(*poolConfig)

func (f poolOptionFunc) applyPool(c *poolConfig) { f(c) }

// WithReleaseThreshold sets the new pool's release threshold: the bytes of
// freed memory it keeps across a synchronize (the driver's default is 0).
func WithReleaseThreshold(bytes uint64) PoolOption {
	return poolOptionFunc(func(c *poolConfig) { c.threshold, c.setThreshold = bytes, true })
}

// MemoryPool is a stream-ordered memory pool of one device.
type MemoryPool struct {
	dev       *Device
	h         uint64
	isDefault bool
	state     closeState
	leak      *leakEntry
}

// DefaultPool returns the device's default pool.
func (dev *Device) DefaultPool() (*MemoryPool, error) {
	dev.mu.Lock()
	p := dev.pool
	dev.mu.Unlock()
	if p != nil {
		return p, nil
	}
	r, err := dev.d.do(spanPoolDefault, func() driver.Result { return driver.PoolDefault(dev.ordinal) })
	if err != nil {
		return nil, err
	}
	dev.mu.Lock()
	defer dev.mu.Unlock()
	if dev.pool == nil {
		dev.pool = &MemoryPool{dev: dev, h: r.V, isDefault: true}
	}
	return dev.pool, nil
}

// NewPool creates a memory pool on the device.
func (dev *Device) NewPool(opts ...PoolOption) (*MemoryPool, error) {
	var cfg poolConfig
	for _, o := range opts {
		o.applyPool(&cfg)
	}
	r, err := dev.d.do(spanPoolCreate, func() driver.Result { return driver.PoolCreate(dev.ordinal) })
	if err != nil {
		return nil, err
	}
	p := &MemoryPool{dev: dev, h: r.V}
	p.leak = dev.d.leaks.add("pool", r.V, 1)
	if cfg.setThreshold {
		if err := p.SetReleaseThreshold(cfg.threshold); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Handle returns the CUmemoryPool.
func (p *MemoryPool) Handle() uint64 { return p.h }

// Device returns the pool's device.
func (p *MemoryPool) Device() *Device { return p.dev }

func (p *MemoryPool) get(attr int) (uint64, error) {
	if p.state.closed() {
		return 0, fmt.Errorf("memorypool.attribute: %w", ErrClosed)
	}
	r, err := p.dev.d.do(spanPoolGetAttribute, func() driver.Result { return driver.PoolGet(p.h, attr) })
	return r.V, err
}

func (p *MemoryPool) set(attr int, v uint64) error {
	if p.state.closed() {
		return fmt.Errorf("memorypool.setattribute: %w", ErrClosed)
	}
	_, err := p.dev.d.do(spanPoolSetAttribute, func() driver.Result { return driver.PoolSet(p.h, attr, v) })
	return err
}

// ReleaseThreshold returns the bytes of freed memory the pool keeps across a
// synchronize.
func (p *MemoryPool) ReleaseThreshold() (uint64, error) { return p.get(poolAttrReleaseThreshold) }

// SetReleaseThreshold sets it; MaxReleaseThreshold keeps everything.
func (p *MemoryPool) SetReleaseThreshold(bytes uint64) error {
	return p.set(poolAttrReleaseThreshold, bytes)
}

// Reserved returns the bytes the pool holds from the device now.
func (p *MemoryPool) Reserved() (uint64, error) { return p.get(poolAttrReservedMemCurrent) }

// ReservedHigh returns the high-water mark of Reserved.
func (p *MemoryPool) ReservedHigh() (uint64, error) { return p.get(poolAttrReservedMemHigh) }

// Used returns the bytes of the pool allocated now.
func (p *MemoryPool) Used() (uint64, error) { return p.get(poolAttrUsedMemCurrent) }

// UsedHigh returns the high-water mark of Used.
func (p *MemoryPool) UsedHigh() (uint64, error) { return p.get(poolAttrUsedMemHigh) }

// Trim releases unused memory until the pool holds at most keep bytes.
func (p *MemoryPool) Trim(keep uint64) error {
	if p.state.closed() {
		return fmt.Errorf("memorypool.trim: %w", ErrClosed)
	}
	_, err := p.dev.d.do(spanPoolTrim, func() driver.Result { return driver.PoolTrim(p.h, keep) })
	return err
}

// Close destroys a created pool. The default pool returns ErrNotOwned.
func (p *MemoryPool) Close() error {
	if p.isDefault {
		return fmt.Errorf("memorypool.close: default pool: %w", ErrNotOwned)
	}
	if !p.state.close() {
		return fmt.Errorf("memorypool.close: %w", ErrClosed)
	}
	p.dev.d.leaks.remove(p.leak)
	_, err := p.dev.d.do(spanPoolClose, func() driver.Result { return driver.PoolDestroy(p.h) })
	return err
}
