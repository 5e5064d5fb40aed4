package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/record"
)

// captureOptions are record's flags for capture ranges (docs/capture.md,
// "Capture ranges").
type captureOptions struct {
	rangeSpec string
	delay     time.Duration
	duration  time.Duration
	count     int
}

func captureFlags(cmd *cobra.Command, o *captureOptions) {
	cmd.Flags().StringVar(&o.rangeSpec, "capture-range", "",
		"record only inside ranges the program opens: profiler-api (cuProfilerStart/Stop, torch.cuda.profiler, the cuprof Python module) or nvtx:NAME[@DOMAIN] (that NVTX range); outside them only the calls that create, destroy or switch objects and contexts are kept")
	cmd.Flags().DurationVar(&o.delay, "delay", 0, "record nothing for this long after the program starts (e.g. 10s)")
	cmd.Flags().DurationVar(&o.duration, "duration", 0, "stop recording this long after the delay (0: until exit)")
	cmd.Flags().IntVar(&o.count, "capture-count", 0, "record at most this many capture ranges per process (0: no limit)")
}

// options turns the flags into record's option, with a usage error naming
// the flag at fault.
func (o *captureOptions) options() (record.Option, error) {
	c, err := record.ParseCaptureRange(o.rangeSpec)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	switch {
	case o.delay < 0:
		return nil, usageErrorf("invalid --delay %v: give a duration of 0 or more, such as 10s", o.delay)
	case o.duration < 0:
		return nil, usageErrorf("invalid --duration %v: give a duration of 0 or more, such as 5s", o.duration)
	case o.count < 0:
		return nil, usageErrorf("invalid --capture-count %d: give 0 (no limit) or more", o.count)
	}
	c.Delay, c.Duration, c.Count = o.delay, o.duration, o.count
	return record.WithCapture(c), nil
}
