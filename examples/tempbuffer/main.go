// Command tempbuffer reproduces a temporary-allocation overhead on the CUDA
// driver: the way cuda.cccl's TemporaryStorageBuffer allocated (set the
// device current, create a stream, allocate on it, free, destroy the stream,
// on every call) against a direct stream-ordered allocation on a long-lived
// stream, each with the default pool's release threshold at 0 and at its
// maximum, with and without a synchronize after the free.
//
// With threshold 0 every synchronize hands the freed pool memory back to the
// system (about 100 us on an H200); at the maximum it stays in the pool.
//
//	go run ./examples/tempbuffer                 # the real driver
//	cuprof record --sim -- go run ./examples/tempbuffer   # recorded, simulated
//
// The driver is libcuda.so.1, or the library named by CUPROF_LIBCUDA.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cuprof/cuprof/cudawrap"
	"github.com/cuprof/cuprof/examples/internal/percall"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tempbuffer:", err)
		os.Exit(1)
	}
}

type options struct {
	calls, warmup int
	size          uint64
	device        int
}

func run(args []string, stdout io.Writer) error {
	var o options
	fs := flag.NewFlagSet("tempbuffer", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.IntVar(&o.calls, "n", 1000, "timed calls per variant")
	fs.IntVar(&o.warmup, "warmup", 20, "untimed calls per variant first")
	fs.Uint64Var(&o.size, "size", 10, "bytes per allocation")
	fs.IntVar(&o.device, "device", 0, "device ordinal")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := cudawrap.Open(cudawrap.WithLeakStacks(false))
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
	stats, err := measure(d, dev, o)
	if err != nil {
		return err
	}
	percall.Header(stdout)
	for _, s := range stats {
		percall.Row(stdout, s)
	}
	return nil
}

// variant is one row of the comparison.
type variant struct {
	tempStream bool   // the TemporaryStorageBuffer way
	threshold  uint64 // default pool release threshold
	sync       bool   // synchronize after the free
}

func (v variant) String() string {
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

func variants() []variant {
	var out []variant
	for _, temp := range []bool{true, false} {
		for _, th := range []uint64{cudawrap.MaxReleaseThreshold, 0} {
			for _, sync := range []bool{false, true} {
				out = append(out, variant{temp, th, sync})
			}
		}
	}
	return out
}

func measure(d *cudawrap.Driver, dev *cudawrap.Device, o options) (_ []percall.Stats, err error) {
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

	var out []percall.Stats
	for _, v := range variants() {
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
		st, err := percall.Measure(v.String(), o.warmup, o.calls, call)
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
