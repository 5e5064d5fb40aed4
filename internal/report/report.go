// Package report summarizes a trace in tables: driver API calls in the spirit
// of nsys' cuda_api_sum, per-category and per-device totals, object
// lifecycles, processes and threads, NVTX ranges, Python wrapper frames,
// drops, and the profiler's own cost. Everything it says about the trace's
// meaning (devices, lifetimes, ranges, frames, costs, errors) comes from
// package analysis. Build computes a Report; WriteText, WriteJSON and WriteCSV print it.
//
// # Call times
//
// Every call duration is End-Start minus the profiler's calibrated in-call
// cost (trace.Meta.Overhead.InsideNs, rounded to whole ns), clamped at 0,
// unless Options.Raw is set. The text footer says which. Python frame times
// have the cost of the calls and Python events inside them taken out as
// package analysis documents.
//
// # Percentiles
//
// Median and p99 use the nearest-rank definition on the sorted durations
// x[0] <= ... <= x[n-1]: the p-th percentile is x[ceil(p/100*n)-1], the
// smallest recorded value with at least p% of the values at or below it. So
// the median of an even count is the lower middle value, and every reported
// percentile is a duration that actually occurred. Durations are kept in a
// quantile.Sketch per API and device: exact up to quantile.DefaultLimit
// (2^20) calls, within 1% past it, so memory stays bounded.
//
// # Errors
//
// A call counts as an error when it returned anything but CUDA_SUCCESS, except
// CUDA_ERROR_NOT_READY from cuStreamQuery and cuEventQuery, which is their
// "still running" status.
//
// # JSON
//
// WriteJSON writes the Report struct below with its json tags: durations are
// integer nanoseconds (fields ending in _ns; means are floats), percentages
// are floats in [0,100], object kinds, categories and APIs use cuprof's names,
// lists keep the order of the text tables, and empty lists are [] not null
// (but "frames" is left out when the trace has no Python frames).
// Field names are stable; new fields may be added.
//
// # CSV
//
// WriteCSV writes one block per section (apis, categories, device_apis,
// device_objects, objects, processes, threads, ranges, set_current, frames
// when the trace has Python frames, drops, overhead),
// blocks separated by an empty line. Each block starts with a header row and
// every row's first column is the section name, so `grep '^apis,'` extracts
// one table. Durations are integer nanoseconds.
package report

import (
	"iter"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/trace"
)

// Options tune Build.
type Options struct {
	// Raw keeps call durations as recorded instead of subtracting the
	// profiler's calibrated in-call cost.
	Raw bool
}

// Report is everything cuprof report prints.
type Report struct {
	Meta       Meta          `json:"meta"`
	Overhead   Overhead      `json:"overhead"`
	APIs       []APIRow      `json:"apis"`
	Categories []CategoryRow `json:"categories"`
	// Devices holds one table per device when calls of more than one device
	// appear (device -1 collects calls whose device is unknown).
	Devices   []DeviceTable `json:"devices"`
	Objects   []ObjectRow   `json:"objects"`
	Unpaired  int           `json:"unpaired_destroys"` // destroys/releases of objects never seen created
	Processes []ProcessRow  `json:"processes"`
	Threads   []ThreadRow   `json:"threads"`
	Ranges    []RangeRow    `json:"ranges"`
	// SetCurrent splits the cuCtxSetCurrent calls by what they did on their
	// thread: switch device, switch context on the same device, or set the
	// context already current. Empty when there are none.
	SetCurrent []SetCurrentRow `json:"set_current"`
	// Frames is the Python wrapper frames table, most self time first;
	// present only when the trace has Python frames.
	Frames []FrameRow `json:"frames,omitempty"`
	// Sites sums the calls by call site (analysis.CallSite.Name), most
	// time first; present only when the trace recorded callers.
	Sites []SiteRow `json:"call_sites,omitempty"`
	// Named lists the objects the program named (NVTX cuStream names and
	// their kin, analysis.Analysis.ObjectName), in the order they were
	// created; present only when it named some.
	Named []NamedRow `json:"named_objects,omitempty"`
	Drops Drops      `json:"drops"`
	// Untabled counts the calls of driver functions the API table does
	// not know (a driver newer than the table): passed through uncaptured
	// and counted by name (trace.KindCount events). Most calls first.
	Untabled []UntabledRow `json:"untabled_functions"`
	// PassedThrough counts the calls of the APIs the recording handed to
	// the driver unrecorded (cuprof record --pass-through), by API base
	// name; absent when none were. Most calls first.
	PassedThrough []UntabledRow `json:"passed_through,omitempty"`
	Loss          *Loss         `json:"loss,omitempty"`
}

// SiteRow is the calls made from one call site.
type SiteRow struct {
	Site    string `json:"site"` // analysis.CallSite.Name
	Calls   int    `json:"calls"`
	TotalNs int64  `json:"total_ns"`
	Errors  int    `json:"errors"`
}

// NamedRow is one object the program named.
type NamedRow struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Handle string `json:"handle"` // hex
	PID    uint32 `json:"pid"`
	Device int32  `json:"device"` // -1 when unknown
}

// UntabledRow is one driver function the API table does not know, or (in
// PassedThrough) one API passed through.
type UntabledRow struct {
	Name  string `json:"name"`
	Calls uint64 `json:"calls"`
}

// Meta describes the recording.
type Meta struct {
	Host          string   `json:"host"`
	Capture       string   `json:"capture"`
	DriverVersion int32    `json:"driver_version"`
	CuprofVersion string   `json:"cuprof_version"`
	Command       []string `json:"command"`
	GPUs          []GPU    `json:"gpus"`
	Calls         int      `json:"calls"`
	Events        int      `json:"events"`
	// SpanNs is the time from the first event's start to the last event's end.
	SpanNs int64 `json:"span_ns"`
	// CaptureRange is how the trace was captured ("" for everything:
	// trace.Meta.CaptureRange); Captures its capture ranges; OutsideCalls
	// the calls recorded outside them (those that keep objects and
	// contexts), which the call tables leave out and the object tables
	// count.
	CaptureRange string       `json:"capture_range,omitempty"`
	Captures     []CaptureRow `json:"captures,omitempty"`
	OutsideCalls int          `json:"outside_calls,omitempty"`
}

// CaptureRow is one capture range: its process, start (from the trace's
// first event) and length, and what opened it.
type CaptureRow struct {
	PID     uint32 `json:"pid"`
	StartNs int64  `json:"start_ns"`
	Ns      int64  `json:"ns"`
	Opener  string `json:"opener"`
}

// GPU is one device of the recording.
type GPU struct {
	Ordinal int32  `json:"ordinal"`
	Name    string `json:"name"`
	UUID    string `json:"uuid"`
}

// Overhead is the profiler's own calibrated cost.
type Overhead struct {
	// InsideNs inflates each recorded call's duration; AddedNs is what each
	// recorded call cost the program in all.
	InsideNs float64 `json:"inside_ns"`
	AddedNs  float64 `json:"added_ns"`
	// Subtracted says whether call times in this report have InsideNs
	// subtracted (each clamped at 0).
	Subtracted bool `json:"subtracted"`
	// SubtractedNs is what was subtracted from each call: InsideNs rounded
	// to whole ns, 0 when not subtracted.
	SubtractedNs int64 `json:"subtracted_ns"`
	// TotalAddedNs = AddedNs * calls: the estimated time the profiler added
	// to the program.
	TotalAddedNs int64 `json:"total_added_ns"`
	// InPlaceNs is the part of AddedNs measured on the program's own calls
	// (trace.Overhead.InPlaceNs: their cost over the calibrator's loop),
	// InPlaceCalls how many were measured; both 0 when none were.
	InPlaceNs    float64 `json:"in_place_ns"`
	InPlaceCalls int64   `json:"in_place_calls"`
}

// Stats summarizes durations.
type Stats struct {
	Count    int     `json:"count"`
	TotalNs  int64   `json:"total_ns"`
	Percent  float64 `json:"percent"` // of the table's total time
	MeanNs   float64 `json:"mean_ns"`
	MedianNs int64   `json:"median_ns"`
	P99Ns    int64   `json:"p99_ns"`
	MinNs    int64   `json:"min_ns"`
	MaxNs    int64   `json:"max_ns"`
}

// APIRow is one driver API's calls.
type APIRow struct {
	API      string `json:"api"`
	Category string `json:"category"`
	Stats
	Errors int `json:"errors"`
}

// CategoryRow is the calls of one category.
type CategoryRow struct {
	Category string  `json:"category"`
	Count    int     `json:"count"`
	TotalNs  int64   `json:"total_ns"`
	Percent  float64 `json:"percent"`
	Errors   int     `json:"errors"`
}

// DeviceTable is the per-API and object tables of one device.
type DeviceTable struct {
	Device  int32       `json:"device"`
	Name    string      `json:"name"`
	Calls   int         `json:"calls"`
	TotalNs int64       `json:"total_ns"`
	APIs    []APIRow    `json:"apis"`
	Objects []ObjectRow `json:"objects"`
}

// ObjectRow is the lifecycle summary of one object kind.
type ObjectRow struct {
	Kind      string `json:"kind"`
	Created   int    `json:"created"`
	Destroyed int    `json:"destroyed"`
	// Implicit counts objects ended by their context's destruction, by the
	// end of what owned them (a library's kernels at its unload, a stream's
	// capture at its destroy) or whose handle was created again without a
	// recorded destroy.
	Implicit int `json:"ended_implicitly"`
	Alive    int `json:"alive_at_exit"`
	// Lifetimes of the objects destroyed by a call.
	LifetimeMedianNs int64 `json:"lifetime_median_ns"`
	LifetimeP99Ns    int64 `json:"lifetime_p99_ns"`
	// Churn counts create+destroy pairs within 1 ms.
	Churn int    `json:"churn"`
	Bytes uint64 `json:"bytes"`
}

// ProcessRow is one traced process.
type ProcessRow struct {
	PID      uint32 `json:"pid"`
	PPID     uint32 `json:"ppid"`
	Command  string `json:"command"`
	Threads  int    `json:"threads"`
	Calls    int    `json:"calls"`
	TotalNs  int64  `json:"total_ns"`
	ExitCode int32  `json:"exit_code"`
	// Host, Rank, LocalRank, WorldSize and Job say who the process was in
	// its job (analysis.IdentityOf); absent when the trace does not say.
	// OSPID is its pid on its host when a merge gave it another PID.
	Host      string `json:"host,omitempty"`
	Rank      *int   `json:"rank,omitempty"`
	LocalRank *int   `json:"local_rank,omitempty"`
	WorldSize *int   `json:"world_size,omitempty"`
	Job       string `json:"job,omitempty"`
	OSPID     uint32 `json:"os_pid,omitempty"`
}

// intOrNil is &v, or nil for -1 (not known).
func intOrNil(v int) *int {
	if v < 0 {
		return nil
	}
	return &v
}

// ThreadRow is one traced thread.
type ThreadRow struct {
	PID     uint32 `json:"pid"`
	TID     uint32 `json:"tid"`
	Name    string `json:"name"`
	Calls   int    `json:"calls"`
	TotalNs int64  `json:"total_ns"`
	Errors  int    `json:"errors"`
	Dropped uint64 `json:"dropped"`
}

// RangeRow sums the NVTX ranges and spans of one name.
type RangeRow struct {
	Domain  string  `json:"domain"`
	Name    string  `json:"name"`
	Count   int     `json:"count"`
	TotalNs int64   `json:"total_ns"`
	MeanNs  float64 `json:"mean_ns"`
}

// SetCurrentRow is the successful cuCtxSetCurrent calls of one kind, by the
// context current on the thread before the call (its context stack, as
// package analysis replays it): "device switch" (a context of another
// device), "context switch" (another context, same or unknown device),
// "already current" (the same context), or "first" (no context was
// current).
type SetCurrentRow struct {
	Kind     string `json:"kind"`
	Count    int    `json:"count"`
	TotalNs  int64  `json:"total_ns"`
	MedianNs int64  `json:"median_ns"`
	P99Ns    int64  `json:"p99_ns"`
}

// FrameRow sums the activations of one piece of Python-level code (a Python
// function or a C callable called from Python) over the stacks it ran in.
// Times have the calibrated cost of the calls and Python events inside
// taken out (see package analysis); recursion is counted once in InclusiveNs
// and DriverNs.
type FrameRow struct {
	Frame  string `json:"frame"`  // qualified name
	Kind   string `json:"kind"`   // "python" or "native"
	Module string `json:"module"` // defining module, "" when unknown
	File   string `json:"file"`   // source file of Python code
	Line   uint32 `json:"line"`   // first line, 0 when unknown
	// Calls is how many times the frame ran (activations).
	Calls       int   `json:"calls"`
	InclusiveNs int64 `json:"inclusive_ns"`
	// SelfNs is the time in the frame itself: inclusive less the frames,
	// ranges and driver calls directly inside it.
	SelfNs int64 `json:"self_ns"`
	// DriverNs is the time of the driver calls under it; DriverCalls how
	// many.
	DriverNs    int64   `json:"driver_ns"`
	DriverCalls int     `json:"driver_calls"`
	SelfPerCall float64 `json:"self_per_call_ns"`
	// OffPathNs is the time of the frames directly inside it that made no
	// driver call (analysis.Times).
	OffPathNs int64 `json:"off_path_ns"`
	// Unwound counts activations ended by an exception.
	Unwound int `json:"unwound"`
}

// Drops counts events the capture lost.
type Drops struct {
	Total     uint64    `json:"total"`
	PerThread []DropRow `json:"per_thread"`
	// WhenFull is what the capture did when a ring was full (trace.Meta):
	// "wait" or "drop"; FullWaits and FullWaitNs how often writers waited
	// for room and how long in all.
	WhenFull   string `json:"when_full,omitempty"`
	FullWaits  uint64 `json:"full_waits,omitempty"`
	FullWaitNs int64  `json:"full_wait_ns,omitempty"`
}

// DropRow is one thread's lost events.
type DropRow struct {
	PID    uint32 `json:"pid"`
	TID    uint32 `json:"tid"`
	Events uint64 `json:"events"`
	Reason string `json:"reason"`
}

// Loss says how much of a damaged file could not be read.
type Loss struct {
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
}

// apiAcc sums the calls of one API: their durations in a quantile sketch
// (exact percentiles up to quantile.DefaultLimit calls, within 1% past it),
// so memory does not grow with the calls.
type apiAcc struct {
	durs   quantile.Sketch
	total  int64
	errors int
}

func (a *apiAcc) add(d int64, err bool) {
	a.durs.Add(d)
	a.total += d
	if err {
		a.errors++
	}
}

func (a *apiAcc) merge(o *apiAcc) {
	a.durs.Merge(&o.durs)
	a.total += o.total
	a.errors += o.errors
}

func apiRows(acc map[trace.API]*apiAcc) ([]APIRow, int64) {
	var all int64
	for _, a := range acc {
		all += a.total
	}
	rows := make([]APIRow, 0, len(acc))
	for api, a := range acc {
		rows = append(rows, APIRow{API: api.String(), Category: api.Info().Category.String(),
			Stats: stats(&a.durs, a.total, all), Errors: a.errors})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].TotalNs != rows[j].TotalNs {
			return rows[i].TotalNs > rows[j].TotalNs
		}
		return rows[i].API < rows[j].API
	})
	return rows, all
}

func stats(d *quantile.Sketch, total, all int64) Stats {
	s := Stats{Count: int(d.Count()), TotalNs: total}
	if s.Count == 0 {
		return s
	}
	if all > 0 {
		s.Percent = 100 * float64(total) / float64(all)
	}
	s.MeanNs = float64(total) / float64(s.Count)
	s.MedianNs = d.Quantile(50)
	s.P99Ns = d.Quantile(99)
	s.MinNs = d.Min()
	s.MaxNs = d.Max()
	return s
}

func objectRows(sum []analysis.KindSummary) []ObjectRow {
	rows := make([]ObjectRow, 0, len(sum))
	for _, s := range sum {
		rows = append(rows, ObjectRow{Kind: s.Kind.String(), Created: s.Created, Destroyed: s.Destroyed,
			Implicit: s.Implicit, Alive: s.Alive, LifetimeMedianNs: s.Lifetime(50),
			LifetimeP99Ns: s.Lifetime(99), Churn: s.Churn, Bytes: s.Bytes})
	}
	return rows
}

// Build computes the report of t from its analysis (package analysis); it
// does not modify t.
func Build(t *trace.Trace, opts Options) *Report {
	return BuildFrom(t, analysis.Events(t), opts)
}

// thr sums the calls of a thread or a process.
type thr struct {
	calls  int
	total  int64
	errors int
}

// callSums sums the calls of the replay by device and API, thread and
// process, and the cuCtxSetCurrent kinds, one event at a time (the
// analysis' OnEvent). A method on a struct, not a closure: the closure
// loaded its fifteen captured variables at every call.
type callSums struct {
	t *trace.Trace
	r *Report // Meta.Calls and Meta.OutsideCalls are counted in it

	byDev      map[int32]map[trace.API]*apiAcc
	accsByDev  map[int32][]*apiAcc // byDev's accumulators in slices by API
	devAccs    []*apiAcc           // those of lastDev
	lastDev    int32
	threads    map[threadKey]*thr
	lastThread *thr
	lastKey    threadKey
	procCalls  map[uint32]*thr
	lastProc   *thr
	lastPID    uint32
	setCurrent []quantile.Sketch
	untabled   map[string]uint64
	passed     map[string]uint64
	// call sites: sums by name, the site named last (a site makes its
	// calls in a row)
	sites      map[string]*SiteRow
	lastSite   *SiteRow
	lastCaller struct {
		pid  uint32
		addr uint64
	}
}

func newCallSums(t *trace.Trace, r *Report) *callSums {
	return &callSums{t: t, r: r, byDev: map[int32]map[trace.API]*apiAcc{}, accsByDev: map[int32][]*apiAcc{},
		threads: map[threadKey]*thr{}, procCalls: map[uint32]*thr{},
		setCurrent: make([]quantile.Sketch, len(setCurrentKinds)),
		untabled:   map[string]uint64{}, passed: map[string]uint64{}, sites: map[string]*SiteRow{}}
}

// event counts one replayed event.
func (c *callSums) event(ev *analysis.Event) {
	e := ev.Event
	k := threadKey{e.PID, e.TID}
	th := c.lastThread
	if th == nil || k != c.lastKey {
		th = c.thread(k)
	}
	pc := c.lastProc
	if pc == nil || e.PID != c.lastPID {
		pc = c.proc(e.PID)
	}
	if e.Kind != trace.KindCall {
		if e.Kind == trace.KindCount {
			c.count(e)
		}
		return
	}
	if ev.Outside {
		c.r.Meta.OutsideCalls++
		return
	}
	c.r.Meta.Calls++
	d := ev.Duration
	// the device's accumulators by API, looked up in a slice: the
	// maps keyed by API hash a uint16 the slow way
	if c.devAccs == nil || ev.Device != c.lastDev {
		c.devOf(ev.Device)
	}
	var acc *apiAcc
	if int(e.API) < len(c.devAccs) {
		acc = c.devAccs[e.API]
	}
	if acc == nil {
		acc = c.newAcc(ev.Device, e.API)
	}
	acc.add(d, ev.Error)
	th.calls++
	th.total += d
	pc.calls++
	pc.total += d
	if ev.Error {
		th.errors++
		pc.errors++
	}
	if e.API == trace.APICtxSetCurrent && e.Result.OK() {
		c.setCurrent[setCurrentKind(ev)].Add(d)
	}
	if e.Caller != 0 {
		s := c.site(ev)
		s.Calls++
		s.TotalNs += d
		if ev.Error {
			s.Errors++
		}
	}
}

// site returns the sums of ev's call site, named by the analysis.
func (c *callSums) site(ev *analysis.Event) *SiteRow {
	if s := c.lastSite; s != nil && c.lastCaller.addr == ev.Caller && c.lastCaller.pid == ev.PID {
		return s
	}
	name := ev.CallSite().Name()
	s := c.sites[name]
	if s == nil {
		s = &SiteRow{Site: name}
		c.sites[name] = s
	}
	c.lastSite, c.lastCaller.pid, c.lastCaller.addr = s, ev.PID, ev.Caller
	return s
}

// thread returns the sums of thread k, made when new, and makes them the
// last thread's.
func (c *callSums) thread(k threadKey) *thr {
	th := c.threads[k]
	if th == nil {
		th = &thr{}
		c.threads[k] = th
	}
	c.lastThread, c.lastKey = th, k
	return th
}

// proc returns the sums of process pid, made when new, and makes them the
// last process's.
func (c *callSums) proc(pid uint32) *thr {
	pc := c.procCalls[pid]
	if pc == nil {
		pc = &thr{}
		c.procCalls[pid] = pc
	}
	c.lastProc, c.lastPID = pc, pid
	return pc
}

// count adds a counter event (calls the shim passed through uncounted).
func (c *callSums) count(e *trace.Event) {
	name := c.t.String(e.Name)
	if _, ok := trace.CountedAPI(name); ok {
		c.passed[name] += e.Size
	} else {
		c.untabled[name] += e.Size
	}
}

// devOf makes dev's accumulators by API the last device's.
func (c *callSums) devOf(dev int32) {
	c.devAccs = c.accsByDev[dev]
	if c.devAccs == nil {
		c.devAccs = make([]*apiAcc, len(trace.APIs())+1)
		c.accsByDev[dev] = c.devAccs
	}
	c.lastDev = dev
}

// newAcc returns the accumulator of api on dev, made when new.
func (c *callSums) newAcc(dev int32, api trace.API) *apiAcc {
	dm := c.byDev[dev]
	if dm == nil {
		dm = map[trace.API]*apiAcc{}
		c.byDev[dev] = dm
	}
	acc := dm[api]
	if acc == nil {
		acc = &apiAcc{}
		dm[api] = acc
	}
	if int(api) < len(c.devAccs) {
		c.devAccs[api] = acc
	}
	return acc
}

// BuildFrom computes the report of a trace given as its tables (t's Meta,
// Strings, Processes, Threads, Drops, Code and Loss; t.Events is not read)
// and its events in trace order, as a streaming reader hands them out. It
// keeps no per-event state: memory grows with the objects, ranges, APIs and
// threads of the trace, and the durations kept for percentiles are bounded
// (see Percentiles).
func BuildFrom(t *trace.Trace, events iter.Seq[*trace.Event], opts Options) *Report {
	// Forget: the report sums objects and ranges as they end, so the
	// analysis keeps only what is open
	aopts := []analysis.Option{analysis.Forget()}
	if opts.Raw {
		aopts = append(aopts, analysis.Raw())
	}
	inside := analysis.CostOf(&t.Meta, opts.Raw).InsideNs
	r := &Report{
		Meta: Meta{Host: t.Meta.Host, Capture: t.Meta.Capture, DriverVersion: t.Meta.DriverVersion,
			CuprofVersion: t.Meta.CuprofVersion, Command: nonNil(t.Meta.Command)},
		Overhead: Overhead{InsideNs: t.Meta.Overhead.InsideNs, AddedNs: t.Meta.Overhead.AddedNs,
			Subtracted: !opts.Raw && inside > 0, SubtractedNs: inside,
			InPlaceNs: t.Meta.Overhead.InPlaceNs, InPlaceCalls: t.Meta.Overhead.InPlaceCalls},
		APIs: []APIRow{}, Categories: []CategoryRow{}, Devices: []DeviceTable{}, Objects: []ObjectRow{},
		Processes: []ProcessRow{}, Threads: []ThreadRow{}, Ranges: []RangeRow{}, SetCurrent: []SetCurrentRow{},
		Drops: Drops{PerThread: []DropRow{}, WhenFull: t.Meta.WhenFull, FullWaits: t.Meta.FullWaits,
			FullWaitNs: t.Meta.FullWaitNs},
	}
	r.Meta.GPUs = []GPU{}
	for _, g := range t.Meta.GPUs {
		r.Meta.GPUs = append(r.Meta.GPUs, GPU{g.Ordinal, g.Name, g.UUID})
	}

	cs := newCallSums(t, r)
	byDev, threads, procCalls, setCurrent := cs.byDev, cs.threads, cs.procCalls, cs.setCurrent
	untabled, passed := cs.untabled, cs.passed
	// objects are counted per device (the all-devices table merges them)
	objectsOn := map[int32]*analysis.Tally{}
	var lastTally *analysis.Tally
	var lastTallyDev int32
	type rk struct{ domain, name string }
	racc := map[rk]*RangeRow{}
	var named []namedAt
	aopts = append(aopts, analysis.OnObjectEnd(func(o *analysis.Object) {
		if o.Name != 0 {
			named = append(named, namedAt{o.Create, NamedRow{Name: t.String(o.Name), Kind: o.Kind.String(),
				Handle: "0x" + strconv.FormatUint(o.Handle, 16), PID: o.PID, Device: o.Device}})
		}
		d := lastTally
		if d == nil || o.Device != lastTallyDev {
			d = objectsOn[o.Device]
			if d == nil {
				d = &analysis.Tally{}
				objectsOn[o.Device] = d
			}
			lastTally, lastTallyDev = d, o.Device
		}
		d.Add(o)
	}), analysis.OnRangeEnd(func(rg *analysis.Range) {
		k := rk{t.String(rg.Domain), t.String(rg.Name)}
		row := racc[k]
		if row == nil {
			row = &RangeRow{Domain: k.domain, Name: k.name}
			racc[k] = row
		}
		row.Count++
		if rg.End > rg.Start {
			row.TotalNs += rg.End - rg.Start
		}
	}))
	aopts = append(aopts, analysis.OnEvent(cs.event))
	a := analysis.Run(t, events, aopts...)
	r.Untabled = countRows(untabled)
	r.Sites = siteRows(cs.sites)
	r.Named = namedRows(named)
	if len(passed) > 0 {
		r.PassedThrough = countRows(passed)
	}
	r.Meta.Events = a.Events
	// the per-device tables first: the all-devices table merges them (exact
	// while the merged count is within the sketch's limit), and each
	// device's durations are let go once merged, so that they are not held
	// twice; a trace of one device needs no merge
	known := 0
	for d := range byDev {
		if d != trace.NoDevice {
			known++
		}
	}
	if known > 1 {
		r.Devices = deviceTables(t, byDev, objectsOn)
	}
	apis := map[trace.API]*apiAcc{}
	var objects *analysis.Tally
	if len(byDev) == 1 {
		for _, dm := range byDev {
			apis = dm
		}
	} else {
		for _, dm := range byDev {
			for api, acc := range dm {
				if apis[api] == nil {
					apis[api] = &apiAcc{}
				}
				apis[api].merge(acc)
				*acc = apiAcc{}
			}
		}
	}
	if len(objectsOn) == 1 {
		for _, tl := range objectsOn {
			objects = tl
		}
	} else {
		objects = &analysis.Tally{}
		for _, tl := range objectsOn {
			objects.Merge(tl)
		}
	}
	first, last := a.First, a.Last
	if first <= last {
		r.Meta.SpanNs = last - first
	}
	r.Meta.CaptureRange = a.CaptureRange
	for _, c := range a.Captures {
		r.Meta.Captures = append(r.Meta.Captures, CaptureRow{PID: c.PID, StartNs: c.Start - first, Ns: c.Duration(), Opener: c.Opener})
	}
	r.Overhead.TotalAddedNs = int64(math.Round(t.Meta.Overhead.AddedNs * float64(r.Meta.Calls)))

	var all int64
	r.APIs, all = apiRows(apis)
	cats := map[trace.Category]*CategoryRow{}
	for _, row := range r.APIs {
		c, _ := trace.ParseCategory(row.Category)
		cr := cats[c]
		if cr == nil {
			cr = &CategoryRow{Category: row.Category}
			cats[c] = cr
		}
		cr.Count += row.Count
		cr.TotalNs += row.TotalNs
		cr.Errors += row.Errors
	}
	for _, cr := range cats {
		if all > 0 {
			cr.Percent = 100 * float64(cr.TotalNs) / float64(all)
		}
		r.Categories = append(r.Categories, *cr)
	}
	sort.Slice(r.Categories, func(i, j int) bool {
		a, b := r.Categories[i], r.Categories[j]
		if a.TotalNs != b.TotalNs {
			return a.TotalNs > b.TotalNs
		}
		return a.Category < b.Category
	})

	r.Objects = objectRows(objects.Summary())
	r.Unpaired = len(a.Problems)

	// processes: those described, then any only seen in events
	seenProc := map[uint32]bool{}
	threadsOf := map[uint32]int{}
	for k := range threads {
		threadsOf[k.pid]++
	}
	for _, th := range t.Threads {
		if _, ok := threads[threadKey{th.PID, th.TID}]; !ok {
			threads[threadKey{th.PID, th.TID}] = &thr{}
			threadsOf[th.PID]++
		}
	}
	for _, p := range t.Processes {
		seenProc[p.PID] = true
		row := ProcessRow{PID: p.PID, PPID: p.PPID, Command: strings.Join(p.Cmdline, " "), ExitCode: p.ExitCode,
			Threads: threadsOf[p.PID]}
		if row.Command == "" {
			row.Command = p.Exe
		}
		id := analysis.IdentityOf(t, &p)
		row.Host, row.Job = id.Host, id.Job
		row.Rank, row.LocalRank, row.WorldSize = intOrNil(id.Rank), intOrNil(id.LocalRank), intOrNil(id.WorldSize)
		if id.PID != p.PID {
			row.OSPID = id.PID
		}
		if c := procCalls[p.PID]; c != nil {
			row.Calls, row.TotalNs = c.calls, c.total
		}
		r.Processes = append(r.Processes, row)
	}
	for pid, c := range procCalls {
		if !seenProc[pid] {
			r.Processes = append(r.Processes, ProcessRow{PID: pid, Calls: c.calls, TotalNs: c.total,
				Threads: threadsOf[pid], ExitCode: -1})
		}
	}
	sort.Slice(r.Processes, func(i, j int) bool { return r.Processes[i].PID < r.Processes[j].PID })

	names := map[threadKey]string{}
	for _, th := range t.Threads {
		names[threadKey{th.PID, th.TID}] = th.Name
	}
	dropped := map[threadKey]uint64{}
	for _, d := range t.Drops {
		dropped[threadKey{d.PID, d.TID}] += d.Events
		r.Drops.Total += d.Events
		r.Drops.PerThread = append(r.Drops.PerThread, DropRow{d.PID, d.TID, d.Events, d.Reason})
		if _, ok := threads[threadKey{d.PID, d.TID}]; !ok {
			threads[threadKey{d.PID, d.TID}] = &thr{}
		}
	}
	sort.SliceStable(r.Drops.PerThread, func(i, j int) bool {
		a, b := r.Drops.PerThread[i], r.Drops.PerThread[j]
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.TID < b.TID
	})
	for k, c := range threads {
		r.Threads = append(r.Threads, ThreadRow{PID: k.pid, TID: k.tid, Name: names[k], Calls: c.calls,
			TotalNs: c.total, Errors: c.errors, Dropped: dropped[k]})
	}
	sort.Slice(r.Threads, func(i, j int) bool {
		a, b := r.Threads[i], r.Threads[j]
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.TID < b.TID
	})

	r.SetCurrent = setCurrentRows(setCurrent)
	r.Frames = FrameRows(t, a)

	for _, row := range racc {
		row.MeanNs = float64(row.TotalNs) / float64(row.Count)
		r.Ranges = append(r.Ranges, *row)
	}
	sort.Slice(r.Ranges, func(i, j int) bool {
		a, b := r.Ranges[i], r.Ranges[j]
		if a.TotalNs != b.TotalNs {
			return a.TotalNs > b.TotalNs
		}
		if a.Domain != b.Domain {
			return a.Domain < b.Domain
		}
		return a.Name < b.Name
	})

	if t.Loss != nil {
		r.Loss = &Loss{Offset: t.Loss.Offset, Bytes: t.Loss.Bytes, Reason: t.Loss.Reason}
	}
	return r
}

type threadKey struct{ pid, tid uint32 }

// setCurrentKinds are the kinds of SetCurrentRow, by index.
var setCurrentKinds = []string{"device switch", "context switch", "already current", "first"}

// setCurrentKind classifies a successful cuCtxSetCurrent by the context
// current on its thread before it (the analysis's context stack): the same
// context, none, one on another device (both devices known), or another.
func setCurrentKind(ev *analysis.Event) int {
	switch {
	case ev.Context == ev.Handle:
		return 2
	case ev.Context == 0:
		return 3
	}
	if prev := ev.ContextDevice(); prev != trace.NoDevice && ev.Device != trace.NoDevice && prev != ev.Device {
		return 0
	}
	return 1
}

// setCurrentRows sums the cuCtxSetCurrent durations of each kind.
func setCurrentRows(durs []quantile.Sketch) []SetCurrentRow {
	rows := []SetCurrentRow{}
	for j := range durs {
		d := &durs[j]
		if d.Count() == 0 {
			continue
		}
		rows = append(rows, SetCurrentRow{Kind: setCurrentKinds[j], Count: int(d.Count()), TotalNs: int64(math.Round(d.Sum())),
			MedianNs: d.Quantile(50), P99Ns: d.Quantile(99)})
	}
	return rows
}

// FrameRows is the wrapper frames table of a, a replay of t (its Code and
// Strings filled), most self time first; nil when a has no frames.
func FrameRows(t *trace.Trace, a *analysis.Analysis) []FrameRow {
	var rows []FrameRow
	for _, c := range a.ByCode() {
		var code trace.Code
		if int(c.Code) < len(t.Code) {
			code = t.Code[c.Code]
		}
		row := FrameRow{Frame: analysis.CodeName(t, c.Code), Kind: "python", Module: t.String(code.Module),
			File: t.String(code.File), Line: code.Line, Calls: c.Activations, InclusiveNs: c.InclusiveNs,
			SelfNs: c.SelfNs, DriverNs: c.DriverNs, DriverCalls: c.Calls, OffPathNs: c.OffPathNs, Unwound: c.Unwound}
		if code.Kind == trace.CodeNative {
			row.Kind = "native"
		}
		if c.Activations > 0 {
			row.SelfPerCall = float64(c.SelfNs) / float64(c.Activations)
		}
		rows = append(rows, row)
	}
	return rows
}

// Where returns where the frame's code is: file:line for Python code,
// else its module, "-" when neither is known.
func (f FrameRow) Where() string {
	where := f.Module
	if f.File != "" {
		where = f.File
		if f.Line > 0 {
			where += ":" + strconv.FormatUint(uint64(f.Line), 10)
		}
	}
	if where == "" {
		where = "-"
	}
	return where
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// deviceTables makes one table per device of byDev (the unknown device
// last), with the objects of objectsOn.
func deviceTables(t *trace.Trace, byDev map[int32]map[trace.API]*apiAcc, objectsOn map[int32]*analysis.Tally) []DeviceTable {
	out := []DeviceTable{}
	devs := make([]int32, 0, len(byDev))
	for d := range byDev {
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool {
		// unknown last
		if (devs[i] == trace.NoDevice) != (devs[j] == trace.NoDevice) {
			return devs[j] == trace.NoDevice
		}
		return devs[i] < devs[j]
	})
	for _, d := range devs {
		rows, total := apiRows(byDev[d])
		dt := DeviceTable{Device: d, APIs: rows, TotalNs: total,
			Objects: []ObjectRow{}}
		if tl := objectsOn[d]; tl != nil {
			dt.Objects = objectRows(tl.Summary())
		}
		for _, row := range rows {
			dt.Calls += row.Count
		}
		for _, g := range t.Meta.GPUs {
			if g.Ordinal == d {
				dt.Name = g.Name
			}
		}
		if d == trace.NoDevice {
			dt.Name = "unknown device"
		}
		out = append(out, dt)
	}
	return out
}

// countRows are counts by name, most calls first (then by name).
func countRows(counts map[string]uint64) []UntabledRow {
	rows := []UntabledRow{}
	for name, n := range counts {
		rows = append(rows, UntabledRow{name, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Calls != rows[j].Calls {
			return rows[i].Calls > rows[j].Calls
		}
		return rows[i].Name < rows[j].Name
	})
	return rows
}

// namedAt is a named object's row and its create event, for the order.
type namedAt struct {
	create int
	row    NamedRow
}

// namedRows orders the named objects by creation (nil when none).
func namedRows(named []namedAt) []NamedRow {
	sort.SliceStable(named, func(i, j int) bool { return named[i].create < named[j].create })
	var rows []NamedRow
	for _, n := range named {
		rows = append(rows, n.row)
	}
	return rows
}

// siteRows are the call sites, most time first (nil when none).
func siteRows(sites map[string]*SiteRow) []SiteRow {
	var rows []SiteRow
	for _, s := range sites {
		rows = append(rows, *s)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].TotalNs != rows[j].TotalNs {
			return rows[i].TotalNs > rows[j].TotalNs
		}
		return rows[i].Site < rows[j].Site
	})
	return rows
}
