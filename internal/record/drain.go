package record

import (
	"errors"
	"fmt"
	"github.com/cuprof/cuprof/internal/lifecycle"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// drainer finds the ring files of the recorded processes and reads them
// while the program runs, so that their chunks are freed before they fill.
type drainer struct {
	dir      string
	cfg      *config
	start    clockPair
	st       *trace.StringTable
	rings    []*ring
	opened   map[string]bool
	maps     map[*ring]string
	mapsAt   map[*ring]time.Time
	err      error
	began    time.Time
	statusAt time.Time
	lastN    int
	scratch  []trace.Event
}

func newDrainer(dir string, cfg *config, start clockPair) *drainer {
	return &drainer{
		dir: dir, cfg: cfg, start: start, st: trace.NewStringTable(),
		opened: map[string]bool{}, maps: map[*ring]string{}, mapsAt: map[*ring]time.Time{},
		began: time.Now(),
	}
}

func (d *drainer) loop(stop <-chan struct{}) {
	t := time.NewTicker(d.cfg.poll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.drain()
			d.status()
		}
	}
}

// drain opens new ring files and reads what every ring committed.
func (d *drainer) drain() {
	if d.err != nil {
		return
	}
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		d.err = err
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".ring") || d.opened[name] {
			continue
		}
		r, err := openRing(filepath.Join(d.dir, name))
		if errors.Is(err, errNotReady) {
			continue
		}
		if err != nil {
			d.err = err
			return
		}
		d.opened[name] = true
		d.rings = append(d.rings, r)
	}
	for _, r := range d.rings {
		before := len(r.events)
		if _, err := r.poll(d.st); err != nil {
			d.err = fmt.Errorf("%s: %w", r.path, err)
			return
		}
		d.readMaps(r)
		if d.cfg.observer != nil && len(r.events) > before {
			clk := d.provisionalClock()
			d.scratch = append(d.scratch[:0], r.events[before:]...)
			for i := range d.scratch {
				d.scratch[i].Start = clk.ns(d.scratch[i].Start, r.clock)
				d.scratch[i].End = clk.ns(d.scratch[i].End, r.clock)
			}
			d.cfg.observer.Observe(r.pid, d.scratch, d.st.Strings)
		}
	}
}

// provisionalClock estimates the TSC rate from the start calibration and
// the anchors of rings opened later (the final trace uses the whole run).
func (d *drainer) provisionalClock() clock {
	best := clockPair{kind: d.start.kind}
	for _, r := range d.rings {
		if r.clock == clockTSC && r.mono0 > best.mono {
			best.tick, best.mono = r.tsc0, r.mono0
		}
	}
	if best.mono < d.start.mono+10_000_000 {
		c := clockFrom(d.start, clockPair{})
		c.hz = 1e9 // too early to tell: refined as rings appear
		return c
	}
	return clockFrom(d.start, best)
}

// readMaps keeps the latest /proc/PID/maps of live processes (their exit
// hook also saves it beside the ring, which build prefers).
func (d *drainer) readMaps(r *ring) {
	if r.exited || time.Since(d.mapsAt[r]) < 500*time.Millisecond {
		return
	}
	for _, o := range d.rings { // only the newest image of a pid
		if o.pid == r.pid && o.mono0 > r.mono0 {
			return
		}
	}
	d.mapsAt[r] = time.Now()
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", r.pid)); err == nil && len(b) > 0 {
		d.maps[r] = string(b)
	}
}

func (d *drainer) counts() (events int, drops uint64, procs int) {
	pids := map[uint32]bool{}
	for _, r := range d.rings {
		events += len(r.events)
		drops += r.totalDrops()
		pids[r.pid] = true
	}
	return events, drops, len(pids)
}

func (d *drainer) status() {
	if d.cfg.status == nil || time.Since(d.statusAt) < 250*time.Millisecond {
		return
	}
	now := time.Now()
	n, drops, procs := d.counts()
	rate := 0.0
	if !d.statusAt.IsZero() {
		rate = float64(n-d.lastN) / now.Sub(d.statusAt).Seconds()
	}
	d.statusAt, d.lastN = now, n
	fmt.Fprintf(d.cfg.status, "\r\033[Kcuprof: %d events (%s/s), %d dropped, %d processes, %s",
		n, humanRate(rate), drops, procs, time.Since(d.began).Round(time.Second))
}

func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// build assembles the trace: events on the trace clock, processes, threads,
// drops, mappings and symbols of call sites.
func (d *drainer) build(clk clock, childPID int, res *Result) *trace.Trace {
	t := &trace.Trace{}
	t.Meta.Clock = trace.Clock{Source: clk.source}
	if clk.tsc {
		t.Meta.Clock.TSCHz = clk.hz
	}
	procs := map[uint32]*trace.Process{}
	type tkey struct{ pid, tid uint32 }
	threads := map[tkey]string{}
	drops := map[tkey]uint64{}
	callers := map[uint32]map[uint64]bool{}
	sort.Slice(d.rings, func(i, j int) bool { return d.rings[i].mono0 < d.rings[j].mono0 })
	n := 0
	for _, r := range d.rings {
		n += len(r.events)
	}
	t.Events = make([]trace.Event, 0, n)
	for _, r := range d.rings {
		p := procs[r.pid]
		if p == nil {
			p = &trace.Process{PID: r.pid, PPID: r.ppid, ExitCode: -1, Start: int64(r.mono0)}
			procs[r.pid] = p
		}
		// The newest image of a pid names it (after exec).
		p.Exe, p.Cmdline = r.exe, r.cmdline
		if r.env != nil {
			p.Env = r.env
		}
		if int64(r.mono0) > p.End {
			p.End = int64(r.mono0)
		}
		cs := callers[r.pid]
		if cs == nil {
			cs = map[uint64]bool{}
			callers[r.pid] = cs
		}
		for _, ev := range r.events {
			ev.Start = clk.ns(ev.Start, r.clock)
			ev.End = clk.ns(ev.End, r.clock)
			if ev.End > p.End {
				p.End = ev.End
			}
			if ev.Caller != 0 {
				cs[ev.Caller] = true
			}
			t.Events = append(t.Events, ev)
		}
		for tid, name := range r.threads {
			threads[tkey{r.pid, tid}] = name
		}
		for tid, n := range r.drops {
			drops[tkey{r.pid, tid}] += n
		}
		if r.overflow > 0 {
			drops[tkey{r.pid, 0}] += r.overflow
		}
	}
	for _, pid := range sortedKeys(procs) {
		p := procs[pid]
		if int(pid) == childPID {
			p.ExitCode = int32(res.ExitCode)
			p.Signal = int32(res.Signal)
			if res.Signal != 0 {
				p.ExitCode = -1
			}
		}
		t.Processes = append(t.Processes, *p)
	}
	for k, name := range threads {
		t.Threads = append(t.Threads, trace.Thread{PID: k.pid, TID: k.tid, Name: name})
	}
	sort.Slice(t.Threads, func(i, j int) bool {
		a, b := t.Threads[i], t.Threads[j]
		return a.PID < b.PID || a.PID == b.PID && a.TID < b.TID
	})
	for k, n := range drops {
		t.Drops = append(t.Drops, trace.Drop{PID: k.pid, TID: k.tid, Events: n, Reason: "buffer full"})
	}
	sort.Slice(t.Drops, func(i, j int) bool {
		a, b := t.Drops[i], t.Drops[j]
		return a.PID < b.PID || a.PID == b.PID && a.TID < b.TID
	})
	// Mappings and symbols, per process image.
	sym := newSymbolizer()
	for _, r := range d.rings {
		text := d.maps[r]
		if b, err := os.ReadFile(r.path + ".maps"); err == nil && len(b) > 0 {
			text = string(b)
		}
		if text == "" {
			continue
		}
		maps, syms := sym.symbolize(r.pid, text, callers[r.pid])
		t.Mappings = append(t.Mappings, maps...)
		t.Symbols = append(t.Symbols, syms...)
	}
	t.Mappings = dedupMappings(t.Mappings)
	t.Symbols = dedupSymbols(t.Symbols)
	for _, ev := range t.Events {
		if ev.Kind == trace.KindCall && ev.API == trace.APIDriverGetVersion && ev.Result == 0 && ev.Flags != 0 {
			t.Meta.DriverVersion = int32(ev.Flags)
		}
	}
	t.Strings = d.st.Strings
	trace.SortEvents(t.Events)
	// Calls whose device the shim could not know from their arguments get the
	// device of their object or of the thread's current context, so that the
	// file (and `cuprof dump`) carries every device the trace can tell.
	lifecycle.AttributeDevices(t)
	for _, r := range d.rings {
		r.close()
	}
	return t
}

func dedupMappings(ms []trace.Mapping) []trace.Mapping {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		return a.PID < b.PID || a.PID == b.PID && a.Start < b.Start
	})
	out := ms[:0]
	for i, m := range ms {
		if i > 0 && m == ms[i-1] {
			continue
		}
		out = append(out, m)
	}
	return out
}

func dedupSymbols(ss []trace.Symbol) []trace.Symbol {
	sort.SliceStable(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		return a.PID < b.PID || a.PID == b.PID && a.Addr < b.Addr
	})
	out := ss[:0]
	for i, s := range ss {
		if i > 0 && s == ss[i-1] {
			continue
		}
		out = append(out, s)
	}
	return out
}
