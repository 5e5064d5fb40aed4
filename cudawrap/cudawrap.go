// Package cudawrap is an instrumented Go API over the CUDA driver: devices,
// contexts, streams, events, memory pools and stream-ordered buffers.
//
// The driver library is opened with dlopen, never linked: the real
// libcuda.so.1, or another library (WithLibrary, or the CUPROF_LIBCUDA
// environment variable), such as cuprof's simulated driver
// (WithSimulatedDriver builds and opens it). cgo and unsafe live in one small
// internal package.
//
// Every operation (Device.SetCurrent, Stream.Create, Buffer.Alloc, ...) is a
// span. When the program runs under `cuprof record`, the spans go into the
// same recording as the driver calls the shim captures, on the same clock and
// thread, so each operation's driver calls nest inside it; the operation's
// error check is its own "check" span, from the end of its last driver call to
// the end of the operation (no timestamp of its own). WithTracerProvider also
// sends each operation to an OpenTelemetry tracer, for live services.
//
// Errors: a failed driver call becomes an *Error with the driver's name and
// text; errors.Is matches it against trace.Result codes (trace.ErrOutOfMemory,
// or this package's ErrOutOfMemory etc.). Using a closed object returns
// ErrClosed; nothing panics.
//
// Objects that are created must be closed. Driver.Leaks lists those still
// open with the stack that created them, and Driver.Close returns a
// *LeakError (errors.Is(err, ErrLeaked)) when any are left.
//
// The current CUDA context belongs to an OS thread, and goroutines move
// between threads: operations that need a context (creating streams, events,
// buffers) make their context current on the calling thread first when it is
// not, at the price of a cuCtxGetCurrent call.
package cudawrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
	"github.com/cuprof/cuprof/cudawrap/sim"
)

// DefaultLibrary is the library Open loads when neither WithLibrary nor
// CUPROF_LIBCUDA names one.
const DefaultLibrary = "libcuda.so.1"

// LibraryEnv is the environment variable naming the driver library to open.
const LibraryEnv = "CUPROF_LIBCUDA"

// SpanDomain is the domain of cudawrap's spans in a recording.
const SpanDomain = "cudawrap"

// CheckSpan is the name of the error-check span inside each operation.
const CheckSpan = "check"

// Option configures Open.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	library    string
	sim        bool
	tracer     oteltrace.Tracer
	ctx        context.Context
	leakStacks bool
}

// WithLibrary opens the driver library at path instead of libcuda.so.1.
func WithLibrary(path string) Option {
	return optionFunc(func(c *config) { c.library = path })
}

// WithSimulatedDriver opens cuprof's simulated driver (cudawrap/sim), built
// with the system C compiler on first use into cuprof's cache. Its
// CUPROF_SIM_* environment variables (devices, memory, costs) are read when
// it is loaded.
func WithSimulatedDriver() Option {
	return optionFunc(func(c *config) { c.sim = true })
}

// WithTracerProvider also reports every operation as an OpenTelemetry span
// from tp's tracer "github.com/cuprof/cuprof/cudawrap".
func WithTracerProvider(tp oteltrace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tracer = tp.Tracer("github.com/cuprof/cuprof/cudawrap")
		}
	})
}

// WithContext sets the parent context of the OpenTelemetry spans (default
// context.Background()).
func WithContext(ctx context.Context) Option {
	return optionFunc(func(c *config) { c.ctx = ctx })
}

// WithLeakStacks says whether objects remember the stack that created them
// (default true). Without stacks, leaks are still counted and listed.
func WithLeakStacks(on bool) Option {
	return optionFunc(func(c *config) { c.leakStacks = on })
}

// Driver is an opened CUDA driver. It is safe for concurrent use.
type Driver struct {
	cfg     config
	library string
	ids     [spanCount]uint32
	leaks   leakRegistry

	closed atomic.Bool

	mu      sync.Mutex
	devices map[int]*Device
}

// Open loads the driver library and initializes it (cuInit).
func Open(opts ...Option) (*Driver, error) {
	cfg := config{ctx: context.Background(), leakStacks: true}
	for _, o := range opts {
		o.apply(&cfg)
	}
	lib := cfg.library
	if cfg.sim {
		dir, err := sim.Driver(cfg.ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: build the simulated driver: %w", ErrNoDriver, err)
		}
		lib = filepath.Join(dir, "libcuda.so.1")
	}
	if lib == "" {
		lib = os.Getenv(LibraryEnv)
	}
	if lib == "" {
		lib = DefaultLibrary
	}
	if err := driver.Open(lib); err != nil {
		return nil, fmt.Errorf("%w: %w (install the NVIDIA driver, or point %s at cuprof's simulated driver)", ErrNoDriver, err, LibraryEnv)
	}
	d := &Driver{cfg: cfg, library: lib, devices: map[int]*Device{}}
	d.leaks.stacks = cfg.leakStacks
	d.intern()
	if _, err := d.do(spanInit, driver.Init); err != nil {
		return nil, err
	}
	return d, nil
}

// intern registers the span names with the recording, once.
func (d *Driver) intern() {
	if !driver.SpansAvailable() {
		return
	}
	for i := range d.ids {
		d.ids[i] = driver.Intern(spanNames[i])
	}
	driver.SetIDs(driver.Intern(SpanDomain), d.ids[spanCheck])
}

// Library returns the path of the opened driver library.
func (d *Driver) Library() string { return d.library }

// Version returns the driver's CUDA version (e.g. 13000).
func (d *Driver) Version() (int, error) {
	r, err := d.do(spanVersion, driver.DriverVersion)
	return int(r.V), err
}

// DeviceCount returns the number of devices.
func (d *Driver) DeviceCount() (int, error) {
	r, err := d.do(spanDeviceCount, driver.DeviceCount)
	return int(r.V), err
}

// Device returns device ordinal (0-based); a wrong ordinal gives an error
// matching ErrInvalidDevice.
func (d *Driver) Device(ordinal int) (*Device, error) {
	if d.closed.Load() {
		return nil, fmt.Errorf("driver.device: %w", ErrClosed)
	}
	d.mu.Lock()
	if dev, ok := d.devices[ordinal]; ok {
		d.mu.Unlock()
		return dev, nil
	}
	d.mu.Unlock()
	r, err := d.do(spanDeviceGet, func() driver.Result { return driver.DeviceGet(ordinal) })
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if dev, ok := d.devices[ordinal]; ok {
		return dev, nil
	}
	dev := &Device{d: d, ordinal: int(r.V)}
	d.devices[ordinal] = dev
	return dev, nil
}

// Leaks returns the objects created through d and not closed, oldest first.
func (d *Driver) Leaks() []Leak { return d.leaks.list() }

// Close releases the primary contexts d retained. Objects still open are
// not destroyed here (releasing a primary context destroys what it owns):
// Close reports them in a *LeakError. Closing twice returns ErrClosed.
func (d *Driver) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return fmt.Errorf("driver.close: %w", ErrClosed)
	}
	d.mu.Lock()
	devs := make([]*Device, 0, len(d.devices))
	for _, dev := range d.devices {
		devs = append(devs, dev)
	}
	d.mu.Unlock()
	sort.Slice(devs, func(i, j int) bool { return devs[i].ordinal < devs[j].ordinal })
	var errs []error
	if leaks := d.leaks.list(); len(leaks) > 0 {
		errs = append(errs, &LeakError{Leaks: leaks})
	}
	for _, dev := range devs {
		if err := dev.release(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// do runs one operation: call makes its driver call(s) in one C call; the
// result is checked (the check span), the operation's span is ended, and the
// OpenTelemetry span, if any, recorded. The OS thread is locked throughout so
// that the spans and the driver calls land on the same thread.
func (d *Driver) do(name spanName, call func() driver.Result) (driver.Result, error) {
	if d.closed.Load() {
		return driver.Result{}, fmt.Errorf("%s: %w", strings.ToLower(spanNames[name]), ErrClosed)
	}
	var span oteltrace.Span
	if d.cfg.tracer != nil {
		_, span = d.cfg.tracer.Start(d.cfg.ctx, spanNames[name])
	}
	runtime.LockOSThread()
	r := call()
	var err error
	if r.RC != 0 {
		err = d.check(name, r.RC)
	}
	driver.End(&r, d.ids[name])
	runtime.UnlockOSThread()
	if span != nil {
		endOtel(span, err)
	}
	return r, err
}

// Span opens a span named name in the recording (and the tracer, if any) on
// the calling goroutine's thread, which stays locked until the returned
// function ends it. Use it for the caller's own phases.
func (d *Driver) Span(name string) (end func()) {
	var span oteltrace.Span
	if d.cfg.tracer != nil {
		_, span = d.cfg.tracer.Start(d.cfg.ctx, name)
	}
	runtime.LockOSThread()
	start := driver.Now()
	var id uint32
	if start != 0 {
		id = driver.Intern(name)
	}
	return func() {
		if start != 0 {
			driver.Span(id, start, driver.Now())
		}
		runtime.UnlockOSThread()
		if span != nil {
			span.End()
		}
	}
}

// Recording reports whether operations are being recorded by cuprof.
func (d *Driver) Recording() bool { return driver.Now() != 0 }
