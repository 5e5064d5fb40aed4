package seed

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/cuprof/cuprof/cudawrap"
)

// StreamCreate runs the stream-creation comparison with command-line args
// (-n, -warmup, -device) and prints per-call times to stdout: creating and
// destroying a stream through a heavy path (an options object validated per
// call, a wrapper with a finalizer, a creation stack kept for leak reports)
// against the direct call.
func StreamCreate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("streamcreate", flag.ContinueOnError)
	fs.SetOutput(stdout)
	calls := fs.Int("n", 1000, "timed calls per variant")
	warmup := fs.Int("warmup", 20, "untimed calls per variant first")
	device := fs.Int("device", 0, "device ordinal")
	sim := fs.Bool("sim", false, "use cuprof's simulated driver")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var common []cudawrap.Option
	if *sim {
		common = append(common, cudawrap.WithSimulatedDriver())
	}

	// Two views of the same driver: one keeps creation stacks (heavy), one not.
	heavyDrv, err := cudawrap.Open(common...)
	if err != nil {
		return err
	}
	defer heavyDrv.Close()
	lightDrv, err := cudawrap.Open(append(common, cudawrap.WithLeakStacks(false))...)
	if err != nil {
		return err
	}
	defer lightDrv.Close()
	heavyDev, err := heavyDrv.Device(*device)
	if err != nil {
		return err
	}
	lightDev, err := lightDrv.Device(*device)
	if err != nil {
		return err
	}
	name, err := lightDev.Name()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "device %d: %s (driver %s), %d calls per variant\n\n", *device, name, lightDrv.Library(), *calls)

	rows := []struct {
		name string
		d    *cudawrap.Driver
		fn   func() error
	}{
		{"direct: NewStream + Close", lightDrv, func() error { return directStream(lightDev) }},
		{"heavy: options + finalizer + stack", heavyDrv, func() error { return heavyStream(heavyDev, &StreamOptions{NonBlocking: true}) }},
	}
	Header(stdout)
	for _, r := range rows {
		end := r.d.Span(r.name)
		st, err := Measure(r.name, *warmup, *calls, r.fn)
		end()
		if err != nil {
			return err
		}
		Row(stdout, st)
	}
	return nil
}

func directStream(dev *cudawrap.Device) error {
	s, err := dev.NewStream()
	if err != nil {
		return err
	}
	return s.Close()
}

// StreamOptions is the options object of the heavy path.
type StreamOptions struct {
	NonBlocking bool
	Priority    *int
}

func (o *StreamOptions) validate() error {
	if o.Priority != nil && (*o.Priority > 0 || *o.Priority < -5) {
		return fmt.Errorf("priority %d out of range [-5, 0]", *o.Priority)
	}
	return nil
}

// ManagedStream is the heavy path's wrapper: its finalizer closes the stream
// if the user forgets to.
type ManagedStream struct {
	s       *cudawrap.Stream
	options StreamOptions
}

func newManagedStream(dev *cudawrap.Device, o *StreamOptions) (*ManagedStream, error) {
	if o == nil {
		o = &StreamOptions{}
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	var opts []cudawrap.StreamOption
	if o.NonBlocking {
		opts = append(opts, cudawrap.NonBlocking())
	}
	if o.Priority != nil {
		opts = append(opts, cudawrap.WithPriority(*o.Priority))
	}
	s, err := dev.NewStream(opts...)
	if err != nil {
		return nil, err
	}
	m := &ManagedStream{s: s, options: *o}
	runtime.SetFinalizer(m, func(m *ManagedStream) { m.s.Close() })
	return m, nil
}

// Close destroys the stream and drops the finalizer.
func (m *ManagedStream) Close() error {
	runtime.SetFinalizer(m, nil)
	return m.s.Close()
}

func heavyStream(dev *cudawrap.Device, o *StreamOptions) error {
	m, err := newManagedStream(dev, o)
	if err != nil {
		return err
	}
	if m.s.Handle() == 0 {
		return errors.Join(errors.New("no stream handle"), m.Close())
	}
	return m.Close()
}
