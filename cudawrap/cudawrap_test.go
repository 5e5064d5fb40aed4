package cudawrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cuprof/cuprof/cudawrap/internal/driver"
	"github.com/cuprof/cuprof/cudawrap/sim"
	"github.com/cuprof/cuprof/trace"
)

// simLib is the simulated driver every test opens ("" when it cannot be built).
var simLib string
var simSkip string

const simMemBytes = 1 << 30

func TestMain(m *testing.M) {
	// The simulated driver reads its configuration when loaded.
	os.Setenv("CUPROF_SIM_COST_SCALE", "0")
	os.Setenv("CUPROF_SIM_DEVICES", "2")
	os.Setenv("CUPROF_SIM_MEM_BYTES", fmt.Sprint(simMemBytes))
	if lib := os.Getenv("CUDAWRAP_TEST_LIB"); lib != "" { // set for child processes
		simLib = lib
	} else if dir, err := sim.Driver(context.Background()); err != nil {
		simSkip = fmt.Sprintf("simulated driver unavailable: %v", err)
	} else {
		simLib = filepath.Join(dir, "libcuda.so.1")
	}
	os.Exit(m.Run())
}

// openSim opens a Driver on the simulated driver, closed at the end of the test.
func openSim(t *testing.T, opts ...Option) *Driver {
	t.Helper()
	if simLib == "" {
		t.Skip(simSkip)
	}
	d, err := Open(append([]Option{WithLibrary(simLib)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
	return d
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr checks that err matches target and says so in its text.
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want one matching %v", err, target)
	}
}

func TestOpenNoDriver(t *testing.T) {
	_, err := Open(WithLibrary(filepath.Join(t.TempDir(), "libcuda.so.1")))
	wantErr(t, err, ErrNoDriver)
	if !strings.Contains(err.Error(), LibraryEnv) {
		t.Errorf("error does not say how to fix it: %v", err)
	}
}

func TestWithSimulatedDriver(t *testing.T) {
	if simLib == "" {
		t.Skip(simSkip)
	}
	d, err := Open(WithSimulatedDriver())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dev := must[*Device](t)(d.Device(0))
	if name := must[string](t)(dev.Name()); name != "cuprof simulated GPU 0" {
		t.Errorf("name %q", name)
	}
}

func TestDevices(t *testing.T) {
	d := openSim(t)
	if v := must[int](t)(d.Version()); v != 13000 {
		t.Errorf("version %d", v)
	}
	if n := must[int](t)(d.DeviceCount()); n != 2 {
		t.Errorf("count %d", n)
	}
	dev := must[*Device](t)(d.Device(1))
	if dev.Ordinal() != 1 || dev.Driver() != d {
		t.Errorf("device %d", dev.Ordinal())
	}
	if again := must[*Device](t)(d.Device(1)); again != dev {
		t.Error("Device(1) twice gave two objects")
	}
	if name := must[string](t)(dev.Name()); name != "cuprof simulated GPU 1" {
		t.Errorf("name %q", name)
	}
	if cc := must[int](t)(dev.Attribute(AttrComputeCapabilityMajor)); cc != 9 {
		t.Errorf("compute capability %d", cc)
	}
	if total := must[uint64](t)(dev.TotalMemory()); total != simMemBytes {
		t.Errorf("total memory %d", total)
	}
	_, err := dev.Attribute(Attribute(99999))
	wantErr(t, err, ErrInvalidValue)

	// Wrong device.
	_, err = d.Device(7)
	wantErr(t, err, ErrInvalidDevice)
	wantErr(t, err, trace.ErrInvalidDevice)
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("%T is not an *Error", err)
	}
	if cerr.Op != "Driver.Device" || cerr.Name != "CUDA_ERROR_INVALID_DEVICE" || cerr.Text != "invalid device ordinal" {
		t.Errorf("error %+v", cerr)
	}
	if got := err.Error(); got != "driver.device: CUDA_ERROR_INVALID_DEVICE: invalid device ordinal" {
		t.Errorf("error text %q", got)
	}
}

func current(t *testing.T) uint64 {
	t.Helper()
	r := driver.CtxGetCurrent()
	if r.RC != 0 {
		t.Fatalf("cuCtxGetCurrent: %d", r.RC)
	}
	return r.V
}

func TestSetCurrentCachesThePrimaryContext(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	lockThread(t)
	ok(t, dev.SetCurrent())
	h := dev.primary.Load()
	if h == 0 || current(t) != h {
		t.Fatalf("primary %#x, current %#x", h, current(t))
	}
	ok(t, dev.SetCurrent())
	if dev.primary.Load() != h {
		t.Error("the primary context changed")
	}
	ctx := must[*Context](t)(dev.Context())
	if !ctx.Primary() || ctx.Handle() != h || ctx.Device() != dev {
		t.Errorf("context %+v", ctx)
	}
	wantErr(t, ctx.Close(), ErrNotOwned)

	// Device 1's primary context.
	dev1 := must[*Device](t)(d.Device(1))
	ok(t, dev1.SetCurrent())
	if current(t) == h {
		t.Error("device 1's context is device 0's")
	}
	ok(t, ctx.SetCurrent())
	if current(t) != h {
		t.Error("Context.SetCurrent did not switch back")
	}
}

func TestContexts(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(1))
	lockThread(t)
	c := must[*Context](t)(dev.NewContext())
	if c.Primary() || current(t) != c.Handle() {
		t.Fatal("a new context is current")
	}
	s := must[*Stream](t)(c.NewStream())
	e := must[*Event](t)(c.NewEvent())
	ok(t, e.Record(s))
	ok(t, c.Sync())
	free, total, err := c.MemInfo()
	ok(t, err)
	if free != total || total != simMemBytes {
		t.Errorf("free %d total %d", free, total)
	}
	ok(t, e.Close())
	ok(t, s.Close())
	ok(t, c.Close())
	wantErr(t, c.Close(), ErrClosed)
	wantErr(t, c.Sync(), ErrClosed)
	wantErr(t, c.SetCurrent(), ErrClosed)
	_, err = c.NewStream()
	wantErr(t, err, ErrClosed)
	_, err = c.NewEvent()
	wantErr(t, err, ErrClosed)
	_, err = d.Device(-1)
	wantErr(t, err, ErrInvalidDevice)
}

func TestStreams(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	s := must[*Stream](t)(dev.NewStream(NonBlocking(), WithPriority(-2)))
	if s.Handle() == 0 || s.Context().Device() != dev {
		t.Fatalf("stream %+v", s)
	}
	ok(t, s.Sync())
	if done := must[bool](t)(s.Done()); !done {
		t.Error("an idle stream is not done")
	}
	ok(t, s.Close())
	wantErr(t, s.Close(), ErrClosed)
	wantErr(t, s.Sync(), ErrClosed)
	_, err := s.Done()
	wantErr(t, err, ErrClosed)
	_, err = s.Alloc(10)
	wantErr(t, err, ErrClosed)

	def := must[*Stream](t)(dev.DefaultStream())
	ok(t, def.Sync())
	wantErr(t, def.Close(), ErrNotOwned)

	plain := must[*Stream](t)(dev.NewStream())
	ok(t, plain.Close())
}

func TestEvents(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	s := must[*Stream](t)(dev.NewStream())
	defer s.Close()
	a := must[*Event](t)(dev.NewEvent())
	b := must[*Event](t)(dev.NewEvent(BlockingSync()))
	nt := must[*Event](t)(dev.NewEvent(DisableTiming()))

	_, err := a.Elapsed(b)
	wantErr(t, err, ErrInvalidHandle) // not recorded yet
	ok(t, a.Record(s))
	ok(t, b.Record(nil))
	ok(t, nt.Record(s))
	ok(t, b.Sync())
	if done := must[bool](t)(b.Done()); !done {
		t.Error("a synchronized event is not done")
	}
	if el := must[time.Duration](t)(a.Elapsed(b)); el < 0 {
		t.Errorf("elapsed %v", el)
	}
	_, err = a.Elapsed(nt)
	wantErr(t, err, ErrInvalidHandle)

	ok(t, a.Close())
	wantErr(t, a.Close(), ErrClosed)
	wantErr(t, a.Record(s), ErrClosed)
	wantErr(t, a.Sync(), ErrClosed)
	_, err = a.Elapsed(b)
	wantErr(t, err, ErrClosed)
	ok(t, b.Close())
	ok(t, nt.Close())
}

func TestDefaultPoolReleaseThreshold(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	pool := must[*MemoryPool](t)(dev.DefaultPool())
	if again := must[*MemoryPool](t)(dev.DefaultPool()); again != pool {
		t.Error("two default pool objects")
	}
	wantErr(t, pool.Close(), ErrNotOwned)
	s := must[*Stream](t)(dev.NewStream())
	defer s.Close()

	for _, tc := range []struct {
		threshold     uint64
		keptAfterSync bool
	}{{0, false}, {MaxReleaseThreshold, true}} {
		ok(t, pool.SetReleaseThreshold(tc.threshold))
		if got := must[uint64](t)(pool.ReleaseThreshold()); got != tc.threshold {
			t.Fatalf("threshold %d, want %d", got, tc.threshold)
		}
		b := must[*Buffer](t)(s.Alloc(10))
		if b.Ptr() == 0 || b.Size() != 10 || b.Stream() != s {
			t.Fatalf("buffer %+v", b)
		}
		if used := must[uint64](t)(pool.Used()); used == 0 {
			t.Error("an allocation uses nothing")
		}
		ok(t, b.Close())
		wantErr(t, b.Close(), ErrClosed)
		if used := must[uint64](t)(pool.Used()); used != 0 {
			t.Errorf("used %d after close", used)
		}
		if r := must[uint64](t)(pool.Reserved()); r == 0 {
			t.Error("freed memory left the pool before a synchronize")
		}
		ok(t, dev.Sync())
		r := must[uint64](t)(pool.Reserved())
		if kept := r != 0; kept != tc.keptAfterSync {
			t.Errorf("threshold %#x: reserved %d after sync", tc.threshold, r)
		}
	}
	ok(t, pool.Trim(0))
	if r := must[uint64](t)(pool.Reserved()); r != 0 {
		t.Errorf("reserved %d after trim", r)
	}
	if h := must[uint64](t)(pool.ReservedHigh()); h == 0 {
		t.Error("no reserved high-water mark")
	}
	if h := must[uint64](t)(pool.UsedHigh()); h == 0 {
		t.Error("no used high-water mark")
	}
	ok(t, pool.SetReleaseThreshold(0))
}

func TestCreatedPool(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(1))
	p := must[*MemoryPool](t)(dev.NewPool(WithReleaseThreshold(1 << 20)))
	if p.Device() != dev || p.Handle() == 0 {
		t.Fatalf("pool %+v", p)
	}
	if th := must[uint64](t)(p.ReleaseThreshold()); th != 1<<20 {
		t.Errorf("threshold %d", th)
	}
	s := must[*Stream](t)(dev.NewStream())
	b := must[*Buffer](t)(s.Alloc(4096, FromPool(p)))
	if used := must[uint64](t)(p.Used()); used != 4096 {
		t.Errorf("used %d", used)
	}
	def := must[*MemoryPool](t)(dev.DefaultPool())
	if used := must[uint64](t)(def.Used()); used != 0 {
		t.Errorf("default pool used %d", used)
	}
	// Free on another stream, then close the allocation's own stream.
	s2 := must[*Stream](t)(dev.NewStream())
	ok(t, b.CloseOn(s2))
	ok(t, s2.Close())
	ok(t, s.Close())
	ok(t, p.Close())
	wantErr(t, p.Close(), ErrClosed)
	_, err := p.Used()
	wantErr(t, err, ErrClosed)
	wantErr(t, p.Trim(0), ErrClosed)
	wantErr(t, p.SetReleaseThreshold(0), ErrClosed)
	s3 := must[*Stream](t)(dev.NewStream())
	defer s3.Close()
	_, err = s3.Alloc(10, FromPool(p))
	wantErr(t, err, ErrClosed)
}

func TestBufferOutlivesItsStream(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	s := must[*Stream](t)(dev.NewStream())
	b := must[*Buffer](t)(s.Alloc(100))
	ok(t, s.Close())
	ok(t, b.Close()) // on the default stream
	wantErr(t, b.CloseOn(s), ErrClosed)
}

func TestOutOfMemory(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	s := must[*Stream](t)(dev.NewStream())
	defer s.Close()
	_, err := s.Alloc(2 * simMemBytes)
	wantErr(t, err, ErrOutOfMemory)
	var cerr *Error
	if !errors.As(err, &cerr) || cerr.Op != "Buffer.Alloc" || cerr.Text != "out of memory" {
		t.Errorf("error %#v", err)
	}
	_, err = s.Alloc(0)
	wantErr(t, err, ErrInvalidValue)
}

func TestClosedDriver(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	ok(t, d.Close())
	wantErr(t, d.Close(), ErrClosed)
	wantErr(t, dev.SetCurrent(), ErrClosed)
	_, err := dev.NewStream()
	wantErr(t, err, ErrClosed)
	_, err = d.Device(0)
	wantErr(t, err, ErrClosed)
	_, err = d.DeviceCount()
	wantErr(t, err, ErrClosed)
}

func TestLeaksAreReportedWithTheirStack(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	s := must[*Stream](t)(dev.NewStream())
	b := must[*Buffer](t)(s.Alloc(64))
	e := must[*Event](t)(dev.NewEvent())
	leaks := d.Leaks()
	if len(leaks) != 3 {
		t.Fatalf("leaks %v", leaks)
	}
	for i, kind := range []string{"stream", "buffer", "event"} {
		l := leaks[i]
		if l.Kind != kind || len(l.Stack) == 0 || !strings.Contains(l.Stack[0], "TestLeaksAreReportedWithTheirStack") {
			t.Errorf("leak %d: %s", i, l)
		}
	}
	if leaks[0].Handle != s.Handle() || leaks[1].Handle != b.Ptr() || leaks[2].Handle != e.Handle() {
		t.Errorf("handles %v", leaks)
	}
	ok(t, b.Close())
	ok(t, e.Close())
	err := d.Close()
	wantErr(t, err, ErrLeaked)
	var le *LeakError
	if !errors.As(err, &le) || len(le.Leaks) != 1 || le.Leaks[0].Kind != "stream" {
		t.Errorf("close: %v", err)
	}
	if !strings.Contains(err.Error(), "stream") || !strings.Contains(err.Error(), "cudawrap_test.go") {
		t.Errorf("close error does not say where: %v", err)
	}
}

func TestNoLeakStacks(t *testing.T) {
	d := openSim(t, WithLeakStacks(false))
	dev := must[*Device](t)(d.Device(0))
	s := must[*Stream](t)(dev.NewStream())
	if l := d.Leaks(); len(l) != 1 || len(l[0].Stack) != 0 {
		t.Errorf("leaks %v", l)
	}
	ok(t, s.Close())
	if l := d.Leaks(); len(l) != 0 {
		t.Errorf("leaks after close %v", l)
	}
}

func TestConcurrentUse(t *testing.T) {
	d := openSim(t)
	dev := must[*Device](t)(d.Device(0))
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			defer func() { errs <- err }()
			for i := 0; i < 50 && err == nil; i++ {
				if err = dev.SetCurrent(); err != nil {
					return
				}
				var s *Stream
				if s, err = dev.NewStream(); err != nil {
					return
				}
				var b *Buffer
				if b, err = s.Alloc(100); err != nil {
					return
				}
				if err = b.Close(); err != nil {
					return
				}
				err = s.Close()
			}
		}()
	}
	for g := 0; g < 8; g++ {
		ok(t, <-errs)
	}
	if l := d.Leaks(); len(l) != 0 {
		t.Errorf("leaks %v", l)
	}
}
