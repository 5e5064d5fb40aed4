package seed

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/cuprof/cuprof/cudawrap"
)

type tempBufferOptions struct {
	calls, warmup int
	size          uint64
	device        int
	sim           bool
}

// TempBuffer runs the temporary-buffer comparison with command-line args
// (-n, -warmup, -size, -device) and prints per-call times to stdout.
//
// Variants: the way cuda.cccl's TemporaryStorageBuffer allocated (set the
// device current, create a stream, allocate on it, free, destroy the stream,
// on every call) and a direct stream-ordered allocation on a long-lived
// stream; each with the default pool's release threshold at its maximum and
// at 0, without and with a synchronize after the free. Each variant runs
// inside a cudawrap span named after it.
func TempBuffer(args []string, stdout io.Writer) error {
	var o tempBufferOptions
	fs := flag.NewFlagSet("tempbuffer", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.IntVar(&o.calls, "n", 1000, "timed calls per variant")
	fs.IntVar(&o.warmup, "warmup", 20, "untimed calls per variant first")
	fs.Uint64Var(&o.size, "size", 10, "bytes per allocation")
	fs.IntVar(&o.device, "device", 0, "device ordinal")
	fs.BoolVar(&o.sim, "sim", false, "use cuprof's simulated driver")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := []cudawrap.Option{cudawrap.WithLeakStacks(false)}
	if o.sim {
		opts = append(opts, cudawrap.WithSimulatedDriver())
	}
	d, err := cudawrap.Open(opts...)
	if err != nil {
		return err
	}
	defer d.Close()
	dev, err := d.Device(o.device)
	if err != nil {
		return err
	}
	name, err := dev.Name()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "device %d: %s (driver %s), %d-byte allocations, %d calls per variant\n\n",
		o.device, name, d.Library(), o.size, o.calls)
	stats, err := measureTempBuffer(d, dev, o)
	if err != nil {
		return err
	}
	Header(stdout)
	for _, s := range stats {
		Row(stdout, s)
	}
	return nil
}

// variant is one row of the comparison.
type tempBufferVariant struct {
	tempStream bool   // the TemporaryStorageBuffer way
	threshold  uint64 // default pool release threshold
	sync       bool   // synchronize after the free
}

func (v tempBufferVariant) String() string {
	s := "direct alloc on a stream"
	if v.tempStream {
		s = "tempbuffer (set+stream+alloc+destroy)"
	}
	th := "0"
	if v.threshold == cudawrap.MaxReleaseThreshold {
		th = "max"
	}
	s += " thr=" + th
	if v.sync {
		s += " +sync"
	}
	return s
}

func tempBufferVariants() []tempBufferVariant {
	var out []tempBufferVariant
	for _, temp := range []bool{true, false} {
		for _, th := range []uint64{cudawrap.MaxReleaseThreshold, 0} {
			for _, sync := range []bool{false, true} {
				out = append(out, tempBufferVariant{temp, th, sync})
			}
		}
	}
	return out
}

func measureTempBuffer(d *cudawrap.Driver, dev *cudawrap.Device, o tempBufferOptions) (_ []Stats, err error) {
	pool, err := dev.DefaultPool()
	if err != nil {
		return nil, err
	}
	old, err := pool.ReleaseThreshold()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, pool.SetReleaseThreshold(old)) }()
	long, err := dev.NewStream()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, long.Close()) }()

	var out []Stats
	for _, v := range tempBufferVariants() {
		if err := pool.SetReleaseThreshold(v.threshold); err != nil {
			return nil, err
		}
		if err := dev.Sync(); err != nil { // start each variant from a settled pool
			return nil, err
		}
		call := func() error { return direct(dev, long, o.size, v.sync) }
		if v.tempStream {
			call = func() error { return tempBuffer(dev, o.size, v.sync) }
		}
		end := d.Span(v.String())
		st, err := Measure(v.String(), o.warmup, o.calls, call)
		end()
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// tempBuffer allocates the way TemporaryStorageBuffer did: everything per call.
func tempBuffer(dev *cudawrap.Device, size uint64, sync bool) error {
	if err := dev.SetCurrent(); err != nil {
		return err
	}
	s, err := dev.NewStream()
	if err != nil {
		return err
	}
	b, err := s.Alloc(size)
	if err != nil {
		return errors.Join(err, s.Close())
	}
	if err := b.Close(); err != nil {
		return errors.Join(err, s.Close())
	}
	if sync {
		if err := dev.Sync(); err != nil {
			return errors.Join(err, s.Close())
		}
	}
	return s.Close()
}

// direct allocates on a stream that lives across calls.
func direct(dev *cudawrap.Device, s *cudawrap.Stream, size uint64, sync bool) error {
	b, err := s.Alloc(size)
	if err != nil {
		return err
	}
	if err := b.Close(); err != nil {
		return err
	}
	if sync {
		return dev.Sync()
	}
	return nil
}
