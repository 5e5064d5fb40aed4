// Package job analyses the traces of a job's ranks together: a map step
// reads each trace once into a small summary per process (Summarize: per
// API and per wrapper frame its calls, median, p99 and total host time, its
// steps, its lint findings, who it is), and a reduce step merges the
// summaries (Reduce): a row per rank, the ranks that stand out and the
// finding that explains each, host time per rank and step. The map runs
// traces in parallel over the cores; the reduce holds the summaries, never
// the events, so a thousand traces reduce in the memory of a few.
package job

import (
	"iter"
	"sort"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/trace"
)

// MaxSteps is how many steps of one range name a summary keeps per
// process: the first ones (a summary stays small however long its trace).
const MaxSteps = 4096

// sketchLimit is how many values a summary's sketches keep exactly before
// they sketch (percentiles within 1% past it): a summary stays a few KB
// however long its trace.
const sketchLimit = 2048

// Stat is one API's or frame's calls in one process.
type Stat struct {
	Calls    int   `json:"calls"`
	MedianNs int64 `json:"median_ns"`
	P99Ns    int64 `json:"p99_ns"`
	TotalNs  int64 `json:"total_ns"`
}

// Step is one step of a process: an outermost NVTX push/pop range (or
// cuprof span) of the step's name, in order.
type Step struct {
	// Ns is the step's length on its host (the profiler's cost taken out);
	// DriverNs the time in driver calls inside it.
	Ns       int64 `json:"ns"`
	DriverNs int64 `json:"driver_ns"`
	// Start is when it began, Unix ns (the trace's wall-clock anchor).
	Start int64 `json:"start_unix_ns"`
}

// Finding is what a summary keeps of a lint finding.
type Finding struct {
	Rule    string `json:"rule"`
	Message string `json:"message"`
	API     string `json:"api,omitempty"`
	Python  string `json:"python,omitempty"`
	CostNs  int64  `json:"cost_ns"`
}

// Process is one process of a trace, summarised.
type Process struct {
	ID   analysis.Identity
	File string
	// APIs and Frames by name: the frames' values are a wrapper's own
	// cost per activation (self time and the Python work beside the
	// driver, analysis.Times).
	APIs   map[string]Stat
	Frames map[string]Stat
	// Steps by range name (outermost push/pop ranges seen twice or more).
	Steps    map[string][]Step
	Findings []Finding
	Calls    int
	TotalNs  int64
	// Row is the process's row of the single-trace report's processes.
	PPID     uint32
	Command  string
	Threads  int
	ExitCode int32
}

// Summary is one trace summarised: its processes, its clock, and per API
// and per frame the sketch of all its processes' calls, which merges into
// the job's.
type Summary struct {
	File      string
	Processes []Process
	Clock     trace.Meta
	APIs      map[string]*quantile.Sketch
	Frames    map[string]*quantile.Sketch
}

// procAcc gathers one process while its trace is replayed.
type procAcc struct {
	apis   map[trace.API]*acc
	frames map[trace.CodeID]*acc
	steps  map[trace.StringID][]Step
	calls  int
	total  int64
}

type acc struct {
	s     quantile.Sketch
	total int64
}

func (a *acc) add(ns int64) {
	if a.s.Limit == 0 {
		a.s.Limit = sketchLimit
	}
	a.s.Add(ns)
	a.total += ns
}

func (a *acc) stat() Stat {
	return Stat{Calls: int(a.s.Count()), MedianNs: a.s.Quantile(50), P99Ns: a.s.Quantile(99), TotalNs: a.total}
}

// Summarize reads the trace at path once for its calls, frames and steps.
// Lint runs later, on the traces of the ranks that stand out and a few
// others to compare them with (Lint).
func Summarize(path string) (*Summary, error) {
	f, err := trace.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tables := f.Tables()
	procs := map[uint32]*procAcc{}
	proc := func(pid uint32) *procAcc {
		p := procs[pid]
		if p == nil {
			p = &procAcc{apis: map[trace.API]*acc{}, frames: map[trace.CodeID]*acc{}, steps: map[trace.StringID][]Step{}}
			procs[pid] = p
		}
		return p
	}
	wall := tables.Meta.WallStart - tables.Meta.MonoStart
	var last *procAcc
	var lastPID uint32
	rd := f.NewEventReader()
	analysis.Run(tables, rd.All(), analysis.Forget(),
		analysis.OnEvent(func(e *analysis.Event) {
			if e.Kind != trace.KindCall || e.Outside {
				return
			}
			if last == nil || e.PID != lastPID {
				last, lastPID = proc(e.PID), e.PID
			}
			a := last.apis[e.API]
			if a == nil {
				a = &acc{}
				last.apis[e.API] = a
			}
			a.add(e.Duration)
			last.calls++
			last.total += e.Duration
		}),
		analysis.OnFrameEnd(func(fr *analysis.Frame) {
			p := proc(fr.PID)
			a := p.frames[fr.Code]
			if a == nil {
				a = &acc{}
				p.frames[fr.Code] = a
			}
			a.add(fr.SelfNs + fr.OffPathNs)
		}),
		analysis.OnRangeEnd(func(r *analysis.Range) {
			if r.Depth != 0 || (r.Origin != trace.KindRangePush && r.Origin != trace.KindSpan) || r.Unterminated {
				return
			}
			p := proc(r.PID)
			if len(p.steps[r.Name]) < MaxSteps {
				p.steps[r.Name] = append(p.steps[r.Name], Step{Ns: r.InclusiveNs, DriverNs: r.DriverNs, Start: r.Start + wall})
			}
		}),
	)
	if err := rd.Err(); err != nil {
		return nil, err
	}

	s := &Summary{File: path, Clock: tables.Meta, APIs: map[string]*quantile.Sketch{}, Frames: map[string]*quantile.Sketch{}}
	s.Clock.GPUs, s.Clock.Command = nil, nil
	threads := map[uint32]int{}
	for _, th := range tables.Threads {
		threads[th.PID]++
	}
	seen := map[uint32]bool{}
	add := func(p *trace.Process) {
		seen[p.PID] = true
		pa := procs[p.PID]
		if pa == nil {
			pa = &procAcc{}
		}
		sp := Process{ID: analysis.IdentityOf(tables, p), File: path, APIs: map[string]Stat{}, Frames: map[string]Stat{},
			Steps: map[string][]Step{}, Calls: pa.calls, TotalNs: pa.total, PPID: p.PPID, Threads: threads[p.PID], ExitCode: p.ExitCode}
		sp.Command = joinArgs(p.Cmdline)
		if sp.Command == "" {
			sp.Command = p.Exe
		}
		for api, a := range pa.apis {
			name := api.String()
			sp.APIs[name] = a.stat()
			mergeInto(s.APIs, name, &a.s)
		}
		for code, a := range pa.frames {
			name := analysis.CodeName(tables, code)
			if old, ok := sp.Frames[name]; ok { // two codes of one name: the busier
				if old.TotalNs > a.total {
					continue
				}
			}
			sp.Frames[name] = a.stat()
			mergeInto(s.Frames, name, &a.s)
		}
		for name, st := range pa.steps {
			if len(st) >= 2 {
				sp.Steps[tables.String(name)] = st
			}
		}
		s.Processes = append(s.Processes, sp)
	}
	for i := range tables.Processes {
		add(&tables.Processes[i])
	}
	// Events of a process the tables do not list (a damaged file).
	var missing []uint32
	for pid := range procs {
		if !seen[pid] {
			missing = append(missing, pid)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	for _, pid := range missing {
		add(&trace.Process{PID: pid, ExitCode: -1})
	}
	return s, nil
}

func mergeInto(m map[string]*quantile.Sketch, name string, s *quantile.Sketch) {
	d := m[name]
	if d == nil {
		d = &quantile.Sketch{Limit: sketchLimit}
		m[name] = d
	}
	d.Merge(s)
}

func joinArgs(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}

// Lint returns the lint findings of the trace at path, by the pid and host
// of the process each is in (analysis.Identity's PID and Host).
func Lint(path string) (map[procKey][]Finding, error) {
	f, err := trace.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var readErr error
	findings := lint.Stream(f.Tables(), func() iter.Seq[*trace.Event] {
		rd := f.NewEventReader()
		return func(yield func(*trace.Event) bool) {
			for e := range rd.All() {
				if !yield(e) {
					return
				}
			}
			if err := rd.Err(); err != nil && readErr == nil {
				readErr = err
			}
		}
	})
	if readErr != nil {
		return nil, readErr
	}
	out := map[procKey][]Finding{}
	for _, fd := range findings {
		k := procKey{fd.Where.PID, fd.Where.Host}
		out[k] = append(out[k], Finding{Rule: fd.Rule, Message: fd.Message, API: fd.Example.API,
			Python: fd.Where.Python, CostNs: fd.CostNs})
	}
	return out, nil
}

// procKey names a process of one trace as lint's Where does.
type procKey struct {
	pid  uint32
	host string
}
