package cudawrap

import (
	"testing"
)

// The benchmarks run against the simulated driver with its costs off
// (TestMain), so they measure cudawrap's own cost per operation: the cgo call,
// the thread lock, the checks and the bookkeeping (plus the simulator's).

func benchDevice(b *testing.B, opts ...Option) *Device {
	b.Helper()
	if simLib == "" {
		b.Skip(simSkip)
	}
	d, err := Open(append([]Option{WithLibrary(simLib)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	dev, err := d.Device(0)
	if err != nil {
		b.Fatal(err)
	}
	if err := dev.SetCurrent(); err != nil {
		b.Fatal(err)
	}
	return dev
}

func BenchmarkSetCurrent(b *testing.B) {
	dev := benchDevice(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := dev.SetCurrent(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStreamCreateClose(b *testing.B) {
	for _, bc := range []struct {
		name   string
		stacks bool
	}{{"stacks", true}, {"nostacks", false}} {
		b.Run(bc.name, func(b *testing.B) {
			dev := benchDevice(b, WithLeakStacks(bc.stacks))
			b.ReportAllocs()
			for b.Loop() {
				s, err := dev.NewStream()
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBufferAllocClose(b *testing.B) {
	dev := benchDevice(b, WithLeakStacks(false))
	s, err := dev.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		buf, err := s.Alloc(10)
		if err != nil {
			b.Fatal(err)
		}
		if err := buf.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFailedCheck(b *testing.B) {
	dev := benchDevice(b)
	d := dev.Driver()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Device(99); err == nil {
			b.Fatal("no error")
		}
	}
}
