package analysis

import "github.com/cuprof/cuprof/trace"

// Capture is one capture range of a process (trace.KindCapture): the time
// in which a recording made with `cuprof record --capture-range`, --delay
// or --duration recorded everything.
type Capture struct {
	PID        uint32
	Start, End int64
	// Opener says what opened it: "cuProfilerStart", the NVTX range's
	// name, "window", or the name given to the cuprof Python module.
	Opener string
}

// Duration returns End-Start.
func (c *Capture) Duration() int64 { return max(c.End-c.Start, 0) }

// captureState is a process's latest capture range while replaying.
type captureState struct {
	end  int64
	seen bool
}

// stepCapture records a capture range and opens it for the process's calls.
func (tr *Tracker) stepCapture(e *trace.Event, p *procState) {
	tr.a.Captures = append(tr.a.Captures, Capture{PID: e.PID, Start: e.Start, End: e.End, Opener: tr.tables.String(e.Name)})
	p.capture = captureState{end: e.End, seen: true}
}

// outside says whether call e lies outside every capture range of its
// process in a trace recorded in ranges: the shim records only the calls
// that keep objects and contexts there (trace.API.KeptOutsideCapture), and
// every call of any other API was recorded inside a range, whatever its
// time (a call that passed the gate just before it closed may read its
// start clock just after).
func (tr *Tracker) outside(e *trace.Event, p *procState) bool {
	if !tr.gated || !e.API.KeptOutsideCapture() {
		return false
	}
	return !p.capture.seen || e.Start > p.capture.end
}
