package lint

import (
	"fmt"
	"iter"
	"math"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/trace"
)

// fallbackIdleSyncNs is the idle synchronize cost assumed when a trace has
// no idle synchronize to measure: about what an idle cuCtxSynchronize costs on
// an H200 (368-880 ns measured).
const fallbackIdleSyncNs = 1000

// exactValues is how many values each of lint's medians (the baselines, and
// per site the lifetimes, gaps and durations) keeps exactly; past it the
// median is quantile's sketch, within 1%. It bounds a rule's memory per site
// (512 KiB) whatever the trace's length.
// (A variable so that a test can make it small.)
var exactValues = 1 << 16

// Facts is what every rule reads while the trace is replayed: the baselines
// measured on the whole trace (the idle synchronize, the cuStreamDestroy and
// pool allocation that trim nothing; a rule reads them in Findings, when
// they are known), and per event what package analysis resolved (devices,
// context stacks, object lifecycles, range paths, Python stacks, costs) with
// lint's own facts (which synchronizes were idle, which calls trimmed a pool: Event).
// Nothing in it grows with the number of events: per object alive, per
// pool, stream, range path and Python stack.
type Facts struct {
	// Tables are the trace's tables (Meta, Strings, Threads, Symbols, Code,
	// Processes); their Events are not read.
	Tables *trace.Trace
	// Analysis is the analysis of the rules' replay: during it, as far as it
	// has gone (analysis.Event.Analysis); in Findings, the finished one (with
	// analysis.Forget: Objects holds those alive at the end).
	Analysis *analysis.Analysis
	// IdleSyncNs is the median duration of the idle synchronizes (see syncCall),
	// or fallbackIdleSyncNs when there are none (IdleMeasured false).
	IdleSyncNs   int64
	IdleMeasured bool

	// baselines of trims.go
	destroyNs       int64
	destroyMeasured bool
	allocNs         int64

	first   int64
	threads map[[2]uint32]string
	sites   *analysis.Sites
	ids     map[uint32]analysis.Identity // by trace PID, made at the first finding
	paths   map[analysis.PathID]string
	stacks  map[analysis.FrameID]string
	// creates: the API and duration of the create call of each object alive
	// (an object's Example is its create)
	creates map[int]created
}

type created struct {
	api trace.API
	ns  int64
}

// Event is one event of the rules' replay with what lint knows of it. It
// is reused for the next event: copy what you keep.
type Event struct {
	*analysis.Event
	// Sync is set for a synchronize call that succeeded.
	Sync *syncCall
	// Trim is set for a call that returned a pool's free memory to the OS (a
	// synchronize or cuStreamDestroy; see trims.go); Regrow for a pool
	// allocation that mapped it again after Regrow's trim, with
	// Regrow.RegrowExcessNs set. TrimNs is the part of the call's Duration
	// pool-trim attributes to trimming (Trim's ExcessNs, Regrow's
	// RegrowExcessNs), so other rules do not count it twice.
	Trim, Regrow *trimPoint
	TrimNs       int64
}

// OwnNs is the call's Duration less TrimNs.
func (e *Event) OwnNs() int64 { return e.Duration - e.TrimNs }

// syncCall is one synchronize call.
type syncCall struct {
	// Idle is set when the synchronize waited for nothing: the analysis's
	// rule (analysis.SyncIdle).
	Idle bool
	// Trimmed is set when the synchronize returned a pool's free memory to
	// the OS (the event's Trim is then set).
	Trimmed bool
}

// Rule finds one pattern.
type Rule interface {
	// ID is the rule's stable name, such as "pool-trim".
	ID() string
	// Doc says in one line what the rule finds.
	Doc() string
	// Check starts the rule on one trace.
	Check(f *Facts) Check
}

// Check is a rule at work on one trace: it is shown the trace's events, the
// objects whose lives ended, or both, in trace order (by being an
// EventCheck, an ObjectCheck or both), then asked for its findings. It keeps
// per-site sums, never the events.
type Check interface {
	// Findings returns what the rule found, once the replay is over.
	Findings() []Finding
}

// EventCheck is a Check shown every event.
type EventCheck interface {
	Check
	Event(e *Event)
}

// ObjectCheck is a Check shown every object whose life ended: after the
// Event of the call that ended it (ender), or with ender nil after the last
// event for the objects alive at the end.
type ObjectCheck interface {
	Check
	ObjectEnd(o *analysis.Object, ender *Event)
}

// call is what a finding may show of one call, kept to give its Where and
// Example after the replay.
type call struct {
	index    int
	pid, tid uint32
	caller   uint64
	path     analysis.PathID
	frame    analysis.FrameID
	start    int64
	api      trace.API
	ns       int64
	object   trace.StringID // the name of the object the call names (analysis.Object.Name), 0 none
}

func callOf(e *Event) call {
	c := call{index: e.Index, pid: e.PID, tid: e.TID, caller: e.Caller, path: e.Path, frame: e.Frame,
		start: e.Start, api: e.API, ns: e.Duration}
	if e.Object != analysis.NoObject {
		if a := e.Analysis(); a != nil && int(e.Object) < len(a.Objects) {
			c.object = a.Objects[e.Object].Name
		}
	}
	return c
}

// createOf is the create call of o.
func (f *Facts) createOf(o *analysis.Object) call {
	c := f.creates[o.Create]
	return call{index: o.Create, pid: o.PID, tid: o.TID, caller: o.Caller, path: o.Path, frame: o.Frame,
		start: o.Start, api: c.api, ns: c.ns, object: o.Name}
}

// site groups events by where they come from: process, caller address,
// enclosing range path and Python stack (the caller alone is ambiguous
// across ranges and Python callers, and absent from traces recorded without
// return addresses).
type site struct {
	PID    uint32
	Caller uint64
	Range  string
	Python analysis.FrameID
}

func (f *Facts) site(c call) site {
	return site{c.pid, c.caller, f.pathString(c.path), c.frame}
}

func (f *Facts) pathString(p analysis.PathID) string {
	s, ok := f.paths[p]
	if !ok {
		s = f.Analysis.PathString(p)
		f.paths[p] = s
	}
	return s
}

func (f *Facts) stackString(s analysis.FrameID) string {
	if s == analysis.NoFrame {
		return ""
	}
	if str, ok := f.stacks[s]; ok {
		return str
	}
	var names []string
	for _, c := range f.Analysis.FrameStack(s) {
		names = append(names, f.codeName(c))
	}
	str := strings.Join(names, " > ")
	f.stacks[s] = str
	return str
}

// frames is the Python stack s as Frames, outermost first (nil for none).
func (f *Facts) frames(s analysis.FrameID) []Frame {
	if s == analysis.NoFrame {
		return nil
	}
	var out []Frame
	for _, c := range f.Analysis.FrameStack(s) {
		fr := Frame{Name: f.codeName(c)}
		if int(c) < len(f.Tables.Code) {
			code := f.Tables.Code[c]
			fr.Module, fr.File, fr.Line = f.Tables.String(code.Module), f.Tables.String(code.File), code.Line
		}
		out = append(out, fr)
	}
	return out
}

// codeName returns the name of a piece of Python-level code
// (analysis.CodeName).
func (f *Facts) codeName(c trace.CodeID) string { return analysis.CodeName(f.Tables, c) }

// where describes the site of c.
func (f *Facts) where(c call) Where {
	if f.threads == nil {
		f.threads = map[[2]uint32]string{}
		for _, th := range f.Tables.Threads {
			f.threads[[2]uint32{th.PID, th.TID}] = th.Name
		}
	}
	w := Where{Range: f.pathString(c.path), Python: f.stackString(c.frame), PID: c.pid, TID: c.tid,
		Thread: f.threads[[2]uint32{c.pid, c.tid}], Stack: f.frames(c.frame)}
	if f.ids == nil {
		f.ids = map[uint32]analysis.Identity{}
		for i := range f.Tables.Processes {
			p := &f.Tables.Processes[i]
			f.ids[p.PID] = analysis.IdentityOf(f.Tables, p)
		}
	}
	if id, ok := f.ids[c.pid]; ok {
		w.PID, w.Host = id.PID, id.Host
		if id.HasRank() {
			r := id.Rank
			w.Rank = &r
		}
	}
	if c.object != 0 {
		w.Object = f.Tables.String(c.object) // analysis.Analysis.ObjectName's string
	}
	if c.caller != 0 {
		w.Caller = fmt.Sprintf("%#x", c.caller)
		w.Function = f.symbolize(c.pid, c.caller)
	}
	return w
}

// symbolize names the call site at addr (analysis.CallSite.Name).
func (f *Facts) symbolize(pid uint32, addr uint64) string {
	if f.sites == nil {
		f.sites = analysis.SitesOf(f.Tables)
	}
	return f.sites.Resolve(pid, addr).Name()
}

// example describes c as an example of a finding.
func (f *Facts) example(c call) Example {
	return Example{Event: c.index, TimeNs: c.start, OffsetNs: c.start - f.first, API: c.api.String(), DurationNs: c.ns}
}

// finding fills the common fields of a finding from its first and example
// calls.
func (f *Facts) finding(rule string, sev Severity, first, example call) Finding {
	return Finding{Rule: rule, Severity: sev, Where: f.where(first), Example: f.example(example)}
}

// groups keeps one accumulator per comparable key, remembering the order
// keys were first seen so output is deterministic.
type groups[K comparable, V any] struct {
	order []K
	by    map[K]*V
}

func newGroups[K comparable, V any]() *groups[K, V] { return &groups[K, V]{by: map[K]*V{}} }

// get returns k's accumulator and whether it is new.
func (g *groups[K, V]) get(k K) (*V, bool) {
	if v, ok := g.by[k]; ok {
		return v, false
	}
	v := new(V)
	g.by[k] = v
	g.order = append(g.order, k)
	return v, true
}

// sortedBy returns the keys ordered by first (the index of each group's
// first call): for groups of objects, which end in another order than they
// were created.
func (g *groups[K, V]) sortedBy(first func(*V) int) []K {
	ks := append([]K(nil), g.order...)
	sort.SliceStable(ks, func(i, j int) bool { return first(g.by[ks[i]]) < first(g.by[ks[j]]) })
	return ks
}

// callsAcc is what most rules keep per group: its first call, how many
// calls, and what they cost.
type callsAcc struct {
	first call
	count int
	cost  int64
}

// add counts call c, costing ns, in a; fresh says a's group is new (c is
// its first call).
func (a *callsAcc) add(c call, ns int64, fresh bool) {
	if fresh {
		a.first = c
	}
	a.count++
	a.cost += ns
}

// median returns the median of the values s was given.
func median(s *quantile.Sketch) int64 { return s.Quantile(50) }

func newSketch() *quantile.Sketch { return &quantile.Sketch{Limit: exactValues} }

// The replay: lint reads the trace once, or three times when a call trimmed
// a pool, each pass streaming the events through package analysis (with
// Forget) in memory independent of their number. The first pass measures
// the baselines (the idle synchronize, the cuStreamDestroy that trims
// nothing) and runs the rules at once, taking no call for a trim point: a
// rule reads the baselines only in Findings, and trims.go is the one place
// a baseline decides something as a call goes by. When a trim candidate
// turns out slow against the measured baselines, the first pass's checks
// are dropped; the second pass measures the pool allocation that trims
// nothing, and the third runs the rules with every baseline known, so that
// each trim point is found as its call goes by. The first pass drops its
// checks early, at a candidate that looks slow against the baselines so far
// (guessTrim): where that guess was wrong, a second pass runs the rules.
type pass uint8

const (
	firstPass pass = iota
	trimPass
	rulesPass
)

// runsRules reports whether the rules' checks are shown the pass.
func (p pass) runsRules() bool { return p != trimPass }

// run runs rules over the events replay returns (from the first, each time
// it is called).
func run(tables *trace.Trace, replay func() iter.Seq[*trace.Event], rules []Rule) []Finding {
	return runPasses(tables, replay, rules, false)
}

// runPasses is run; with rerun (tests) it replays the rules a second time
// with the baselines known even when no call trimmed a pool, and returns
// that replay's findings: what the first pass's must equal.
func runPasses(tables *trace.Trace, replay func() iter.Seq[*trace.Event], rules []Rule, rerun bool) []Finding {
	f := newFacts(tables)
	checks := newChecks(f, rules)
	b := f.replay(replay(), firstPass, checks)
	f.IdleSyncNs, f.IdleMeasured = fallbackIdleSyncNs, b.idle.Count() > 0
	if f.IdleMeasured {
		f.IdleSyncNs = median(b.idle)
	}
	f.destroyNs, f.destroyMeasured = fallbackStreamDestroyNs, b.destroys.Count() > 0
	if f.destroyMeasured {
		f.destroyNs = median(b.destroys)
	}
	if trimmed := slow(b.slowestSync, f.IdleSyncNs) || slow(b.slowestDestroy, f.destroyNs); trimmed || b.dropped || rerun {
		checks = nil // the first pass's, let go of before the next
		if trimmed {
			if t := f.replay(replay(), trimPass, nil); t.trims.allocs.Count() > 0 {
				f.allocNs = median(t.trims.allocs)
			}
		}
		checks = newChecks(f, rules)
		f.replay(replay(), rulesPass, checks)
	}
	var out []Finding
	for _, c := range checks {
		out = append(out, c.Findings()...)
	}
	sortFindings(out)
	return out
}

// newFacts returns the Facts of a trace with tables, before its first pass.
func newFacts(tables *trace.Trace) *Facts {
	return &Facts{Tables: tables, first: math.MaxInt64, allocNs: fallbackPoolAllocNs,
		paths: map[analysis.PathID]string{}, stacks: map[analysis.FrameID]string{}, creates: map[int]created{}}
}

// newChecks starts each rule on f.
func newChecks(f *Facts, rules []Rule) []Check {
	checks := make([]Check, len(rules))
	for i, r := range rules {
		checks[i] = r.Check(f)
	}
	return checks
}

// slow reports whether a call of d ns is far slower than base: trimFactor
// times it and trimMinExcessNs more.
func slow(d, base int64) bool { return d > trimFactor*base && d-base >= trimMinExcessNs }

// replayer is one pass's state.
type replayer struct {
	f    *Facts
	pass pass
	// the rules' checks that are shown events, and objects' ends
	events  []EventCheck
	objects []ObjectCheck
	trims   *trimTracker
	ev      Event
	sync    syncCall
	ended   []analysis.Object // ended by the current event
	done    bool              // past the last event: objects alive at the end

	// firstPass: the baselines, and their means so far (idleSum over
	// idle.Count(), destroySum over destroys.Count()) for guessTrim
	idle, destroys              *quantile.Sketch
	slowestSync, slowestDestroy int64
	idleSum, destroySum         int64
	dropped                     bool // the checks were dropped: see guessTrim
}

func (f *Facts) replay(events iter.Seq[*trace.Event], p pass, checks []Check) *replayer {
	r := &replayer{f: f, pass: p, trims: newTrimTracker(f, p),
		idle: newSketch(), destroys: newSketch()}
	for _, c := range checks {
		if c, ok := c.(EventCheck); ok {
			r.events = append(r.events, c)
		}
		if c, ok := c.(ObjectCheck); ok {
			r.objects = append(r.objects, c)
		}
	}
	if p == trimPass {
		r.trims.allocs = newSketch()
	}
	tk := analysis.NewTracker(f.Tables, analysis.Forget(), analysis.Synchronizes(), analysis.OnEvent(r.event),
		analysis.OnObjectEnd(r.objectEnd))
	for e := range events {
		tk.Step(e)
	}
	r.done = true
	a := tk.Finish()
	if p.runsRules() {
		f.Analysis = a
	}
	return r
}

// guessTrim drops the first pass's checks at a trim candidate of d ns that
// is slow against the mean of its baseline so far (sum over n calls, or
// fallback before any): the trace has probably trimmed a pool, and the
// rules will run again once the baselines are known. Only the rules' work
// is saved; a wrong guess costs one more pass, never another answer.
func (r *replayer) guessTrim(d, sum int64, n uint64, fallback int64) {
	base := fallback
	if n > 0 {
		base = sum / int64(n)
	}
	if !r.dropped && slow(d, base) {
		r.dropped = true
		r.events, r.objects = nil, nil
	}
}

func (r *replayer) objectEnd(o *analysis.Object) {
	if !r.pass.runsRules() {
		return
	}
	if !r.done {
		r.ended = append(r.ended, *o)
		return
	}
	for _, c := range r.objects {
		c.ObjectEnd(o, nil)
	}
	delete(r.f.creates, o.Create)
}

func (r *replayer) event(ae *analysis.Event) {
	f := r.f
	ev := &r.ev
	*ev = Event{Event: ae}
	if ae.Index == 0 && r.pass.runsRules() {
		f.first = ae.Start
		f.Analysis = ae.Analysis()
	}
	if e := ae.Event; e.Kind == trace.KindCall && e.Result.OK() {
		candidate := r.trims.step(ev)
		if ae.Sync != analysis.SyncNone { // the analysis's idle rule
			r.sync = syncCall{Idle: ae.Sync == analysis.SyncIdle}
			s := &r.sync
			ev.Sync = s
			s.Trimmed = ev.Trim != nil
			if r.pass == firstPass && s.Idle && !candidate {
				r.idle.Add(ev.Duration)
				r.idleSum += ev.Duration
			}
		}
		if r.pass == firstPass {
			switch {
			case candidate && e.API == trace.APIStreamDestroy:
				r.slowestDestroy = max(r.slowestDestroy, ev.Duration)
				r.guessTrim(ev.Duration, r.destroySum, r.destroys.Count(), fallbackStreamDestroyNs)
			case candidate:
				r.slowestSync = max(r.slowestSync, ev.Duration)
				r.guessTrim(ev.Duration, r.idleSum, r.idle.Count(), fallbackIdleSyncNs)
			case e.API == trace.APIStreamDestroy:
				r.destroys.Add(ev.Duration)
				r.destroySum += ev.Duration
			}
		}
	}
	if !r.pass.runsRules() {
		return
	}
	if ae.Kind == trace.KindCall && ae.Created() {
		f.creates[ae.Index] = created{ae.API, ae.Duration}
	}
	for _, c := range r.events {
		c.Event(ev)
	}
	for i := range r.ended {
		o := &r.ended[i]
		for _, c := range r.objects {
			c.ObjectEnd(o, ev)
		}
		delete(f.creates, o.Create)
	}
	r.ended = r.ended[:0]
}
