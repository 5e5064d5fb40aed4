package analysis

import (
	"math"

	"github.com/cuprof/cuprof/trace"
)

// isError reports whether a call's result counts as an error: anything but
// CUDA_SUCCESS, except CUDA_ERROR_NOT_READY from the queries whose answer it
// is ("still running": cuStreamQuery, cuEventQuery; the errors column of the
// API table). Non-call events are never errors.
func isError(e *trace.Event) bool {
	if e.Kind != trace.KindCall || e.Result.OK() {
		return false
	}
	if e.Result == trace.ErrNotReady && e.API.Info().NotReadyIsAnswer {
		return false
	}
	return true
}

// Cost is the profiler's calibrated cost that the analysis takes out of the
// recorded times (trace.Meta.Overhead), in whole nanoseconds.
type Cost struct {
	// InsideNs is subtracted from each call's own duration (clamped at 0):
	// the capture's time between its two clock reads that is not the driver's.
	InsideNs int64
	// AddedNs is what each recorded call costs the program in all; it is
	// subtracted once per call from every range and frame enclosing the call
	// (so a frame's self time does not include the wrapper's cost around the
	// call). It is at least InsideNs.
	AddedNs int64
	// PyEventNs is what each recorded Python event (a frame's entry or exit)
	// costs; it is subtracted twice per frame (entry and exit) from every
	// range and frame enclosing that frame.
	PyEventNs float64
}

// CostOf returns the cost calibrated in m, or the zero Cost when raw is set
// (times as recorded). Negative, NaN and absurd calibrations count as 0.
func CostOf(m *trace.Meta, raw bool) Cost {
	if raw {
		return Cost{}
	}
	c := Cost{InsideNs: wholeNs(m.Overhead.InsideNs), AddedNs: wholeNs(m.Overhead.AddedNs)}
	if c.AddedNs < c.InsideNs {
		c.AddedNs = c.InsideNs
	}
	if p := m.Overhead.PyEventNs; p > 0 && p < 1e9 {
		c.PyEventNs = p
	}
	return c
}

// wholeNs rounds a calibrated cost to whole ns; NaN, negative and values
// past a second count as 0.
func wholeNs(v float64) int64 {
	if !(v > 0) || v >= 1e9 {
		return 0
	}
	return int64(math.Round(v))
}

// callNs returns a call's duration less InsideNs, clamped at 0.
func (c Cost) callNs(e *trace.Event) int64 {
	d := e.Duration() - c.InsideNs
	if d < 0 {
		return 0
	}
	return d
}

// enclosed returns what calls and frames recorded inside a range or frame
// added to its measured time.
func (c Cost) enclosed(calls, frames int64) int64 {
	return calls*c.AddedNs + int64(math.Round(float64(frames)*2*c.PyEventNs))
}
