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
	// range and frame enclosing that frame. PyCEventNs is the same for a
	// C-level frame (PyEventNs when not calibrated).
	PyEventNs, PyCEventNs float64
	// PyInsideNs (PyCInsideNs for a C-level frame) is the part of a
	// frame's two events between its own start and end: subtracted from the
	// frame's own time (at most twice its event cost), as InsideNs is from
	// a call's.
	PyInsideNs, PyCInsideNs float64
	// PyHiddenNs, PyCHiddenNs and PyLoneNs are what a Python activation
	// pushed and not written, a C-level one and a hook call that pushed
	// nothing cost; a frame event counts them in its self time (Size, Aux,
	// ID), and they are subtracted from it and every range and frame
	// enclosing it.
	PyHiddenNs, PyCHiddenNs, PyLoneNs float64
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
	o := &m.Overhead
	c.PyEventNs = calibratedNs(o.PyEventNs)
	if c.PyEventNs == 0 {
		return c // no Python calibration: the rest means nothing
	}
	c.PyCEventNs = calibratedNs(o.PyCEventNs)
	if c.PyCEventNs == 0 {
		c.PyCEventNs = c.PyEventNs
	}
	c.PyInsideNs = min(calibratedNs(o.PyInsideNs), 2*c.PyEventNs)
	c.PyCInsideNs = min(calibratedNs(o.PyCInsideNs), 2*c.PyCEventNs)
	c.PyHiddenNs, c.PyCHiddenNs, c.PyLoneNs = calibratedNs(o.PyHiddenNs), calibratedNs(o.PyCHiddenNs), calibratedNs(o.PyLoneNs)
	return c
}

// calibratedNs is v when it is a cost (above 0, under a second), else 0.
func calibratedNs(v float64) float64 {
	if v > 0 && v < 1e9 {
		return v
	}
	return 0
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

// enclosed returns what calls recorded inside a range or frame and the
// hooks' work (hooks ns: frameNs of the frames inside, hiddenNs of its own
// event) added to its measured time.
func (c Cost) enclosed(calls int64, hooks float64) int64 {
	return calls*c.AddedNs + int64(math.Round(hooks))
}

// frameNs is what recording frame e cost the program in all, the whole of
// which the ranges and frames around it hold: its two events and what it
// counts in its self time (hiddenNs).
func (c Cost) frameNs(e *trace.Event, native bool) float64 {
	ev := c.PyEventNs
	if native {
		ev = c.PyCEventNs
	}
	return 2*ev + c.hiddenNs(e)
}

// hiddenNs is what the hooks did in frame e's self time and left no frame
// of: the activations pushed and not written and the hook calls that
// pushed nothing that e counts.
func (c Cost) hiddenNs(e *trace.Event) float64 {
	if e.Kind != trace.KindFrame {
		return 0
	}
	return float64(e.Size)*c.PyHiddenNs + float64(e.Aux)*c.PyCHiddenNs + float64(e.ID)*c.PyLoneNs
}

// insideNs is the part of a frame's own two events inside its duration.
func (c Cost) insideNs(native bool) float64 {
	if native {
		return c.PyCInsideNs
	}
	return c.PyInsideNs
}
