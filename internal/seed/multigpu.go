package seed

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/cudawrap"
)

// MultiGPUReport is what the multigpu example knows about the work it did,
// in the JSON schema bench/multigpu/check.py reads (the same as
// examples/python/multigpu_cudacore.py prints).
type MultiGPUReport struct {
	Program   string                     `json:"program"`
	PID       int                        `json:"pid"`
	Rank      *string                    `json:"rank"`
	Devices   []int                      `json:"devices"`
	Rounds    int                        `json:"rounds"`
	PerDevice map[string]*DeviceActivity `json:"per_device"`
}

// DeviceActivity is what the program did on one device.
type DeviceActivity struct {
	// SetCurrent counts Device.SetCurrent calls.
	SetCurrent int `json:"set_current"`
	// Allocations are the buffers allocated, in order.
	Allocations []Allocation `json:"allocations"`
	// Streams are the handles of the streams created, in order ("0x..").
	Streams []string `json:"streams"`
	// StreamSyncs counts Stream.Sync calls, Syncs Device.Sync calls.
	StreamSyncs int `json:"stream_syncs"`
	Syncs       int `json:"syncs"`
}

// Allocation is one buffer: its device pointer and the stream it was
// allocated on ("0x.." handles), and the size asked for.
type Allocation struct {
	Ptr    string `json:"ptr"`
	Size   uint64 `json:"size"`
	Stream string `json:"stream"`
}

// MultiGPUProgram is the program name in the report.
const MultiGPUProgram = "multigpu_go"

// MultiGPU runs the multigpu example with command-line args (-devices,
// -rounds, -buffers, -out, -sim): for each round and each device in turn, it
// makes the device current, creates a stream, allocates buffers on it, frees
// them, synchronizes the stream and the device and destroys the stream. It
// then writes a MultiGPUReport as JSON to -out, or to stdout.
func MultiGPU(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("multigpu", flag.ContinueOnError)
	fs.SetOutput(stdout)
	devices := fs.String("devices", "0,1", "comma-separated device ordinals to alternate between")
	rounds := fs.Int("rounds", 4, "rounds over the devices")
	buffers := fs.Int("buffers", 3, "buffers allocated per device and round")
	out := fs.String("out", "", "write the JSON here instead of stdout")
	sim := fs.Bool("sim", false, "use cuprof's simulated driver")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: give options only", fs.Arg(0))
	}
	ordinals, err := parseOrdinals(*devices)
	if err != nil {
		return err
	}
	if *rounds < 1 || *buffers < 1 {
		return fmt.Errorf("invalid -rounds %d or -buffers %d: both must be at least 1", *rounds, *buffers)
	}
	var opts []cudawrap.Option
	if *sim {
		opts = append(opts, cudawrap.WithSimulatedDriver())
	}
	rep, err := runMultiGPU(ordinals, *rounds, *buffers, opts)
	if err != nil {
		return err
	}
	text, err := json.MarshalIndent(rep, "", " ")
	if err != nil {
		return err
	}
	text = append(text, '\n')
	if *out == "" {
		_, err = stdout.Write(text)
		return err
	}
	if err := os.WriteFile(*out, text, 0o600); err != nil {
		return fmt.Errorf("write -out: %w", err)
	}
	return nil
}

// parseOrdinals reads "0,1" (no duplicates, none negative).
func parseOrdinals(s string) ([]int, error) {
	var ords []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 || seen[d] {
			return nil, fmt.Errorf("invalid -devices %q: give distinct device ordinals such as 0,1", s)
		}
		seen[d] = true
		ords = append(ords, d)
	}
	if len(ords) == 0 {
		return nil, fmt.Errorf("invalid -devices %q: give at least one device ordinal", s)
	}
	return ords, nil
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// runMultiGPU does the rounds. The goroutine stays on one OS thread, so the
// current context the program sets is the one its operations find (cudawrap
// does not have to make it current again).
func runMultiGPU(ordinals []int, rounds, buffers int, opts []cudawrap.Option) (rep *MultiGPUReport, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	drv, err := cudawrap.Open(opts...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := drv.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	rep = &MultiGPUReport{Program: MultiGPUProgram, PID: os.Getpid(), Devices: ordinals, Rounds: rounds,
		PerDevice: map[string]*DeviceActivity{}}
	if r, ok := os.LookupEnv("RANK"); ok {
		rep.Rank = &r
	}
	devs := make([]*cudawrap.Device, len(ordinals))
	for i, d := range ordinals {
		if devs[i], err = drv.Device(d); err != nil {
			return nil, fmt.Errorf("device %d: %w", d, err)
		}
		rep.PerDevice[strconv.Itoa(d)] = &DeviceActivity{Allocations: []Allocation{}, Streams: []string{}}
	}
	for r := 0; r < rounds; r++ {
		for i, dev := range devs {
			if err := multiGPURound(dev, r, buffers, rep.PerDevice[strconv.Itoa(ordinals[i])]); err != nil {
				return nil, fmt.Errorf("round %d, device %d: %w", r, ordinals[i], err)
			}
		}
	}
	return rep, nil
}

// multiGPURound is one round on one device, recorded in k.
func multiGPURound(dev *cudawrap.Device, round, buffers int, k *DeviceActivity) (err error) {
	if err := dev.SetCurrent(); err != nil {
		return err
	}
	k.SetCurrent++
	s, err := dev.NewStream()
	if err != nil {
		return err
	}
	k.Streams = append(k.Streams, hex(s.Handle()))
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	bufs := make([]*cudawrap.Buffer, 0, buffers)
	for i := 0; i < buffers; i++ {
		// Sizes differ per device, round and buffer so a trace reader can tell them apart.
		size := uint64(4096*(dev.Ordinal()+1) + 256*round + 64*i)
		b, err := s.Alloc(size)
		if err != nil {
			return errors.Join(err, closeAll(bufs))
		}
		bufs = append(bufs, b)
		k.Allocations = append(k.Allocations, Allocation{Ptr: hex(b.Ptr()), Size: size, Stream: hex(s.Handle())})
	}
	if err := closeAll(bufs); err != nil {
		return err
	}
	if err := s.Sync(); err != nil {
		return err
	}
	k.StreamSyncs++
	if err := dev.Sync(); err != nil {
		return err
	}
	k.Syncs++
	return nil
}

func closeAll(bufs []*cudawrap.Buffer) error {
	var errs []error
	for _, b := range bufs {
		errs = append(errs, b.Close())
	}
	return errors.Join(errs...)
}
