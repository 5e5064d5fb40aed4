package record

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// drainer finds the ring files of the recorded processes and reads them
// while the program runs, so that their chunks are freed before they fill.
type drainer struct {
	dirs     []string // ring directories: CUPROF_DIR, then the fallback on disk
	spillDir string
	sp       spiller
	cfg      *config
	start    clockPair
	st       *trace.StringTable
	codes    *codeTable // code entries of Python frames, all rings
	ncodes   int        // entries the observer has been given
	rings    []*ring
	opened   map[string]bool
	maps     map[*ring]string
	mapsAt   map[*ring]time.Time
	err      error
	began    time.Time
	statusAt time.Time
	lastN    int
	scratch  []trace.Event
	polledAt time.Time // when drain last read the rings
}

func newDrainer(dirs []string, spillDir string, cfg *config, start clockPair) *drainer {
	d := &drainer{
		dirs: dirs, spillDir: spillDir, cfg: cfg, start: start, st: trace.NewStringTable(), codes: newCodeTable(),
		opened: map[string]bool{}, maps: map[*ring]string{}, mapsAt: map[*ring]time.Time{},
		began: time.Now(),
	}
	d.sp.st = d.st
	if cfg.observer != nil {
		d.sp.observe = d.observe
	}
	return d
}

// holdRecorderLock creates the recorder's lock file in the ring directory
// and holds a shared flock(2) on it until the file is closed (or the
// recorder dies, when the kernel lets go of it): a writer waiting for room
// tries an exclusive lock, and while that fails it knows the recorder
// lives, however long a poll takes (cuprof_ring.h, CUPROF_LOCK_NAME).
func holdRecorderLock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the recorder's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// observe hands the records r's spiller just wrote to the observer, as
// events on the provisional clock.
func (d *drainer) observe(r *ring, evs []trace.Event) {
	clk := d.provisionalClock()
	d.scratch = d.scratch[:0]
	for _, ev := range evs {
		ev.Start = clk.ns(ev.Start, r.clock)
		ev.End = clk.ns(ev.End, r.clock)
		d.scratch = append(d.scratch, ev)
	}
	if co, ok := d.cfg.observer.(CodeObserver); ok && len(d.codes.codes) > d.ncodes {
		co.ObserveCode(d.codes.codes, d.st.Strings)
		d.ncodes = len(d.codes.codes)
	}
	d.cfg.observer.Observe(r.pid, d.scratch, d.st.Strings)
	if cap(d.scratch) > 1<<16 { // after a big poll
		d.scratch = nil
	}
}

// The drainer polls every cfg.poll while the program records little, and
// sooner while it records fast. A chunk the recorder frees goes back to the
// thread that filled it (its claims scan from the same place), so what a
// writing thread cycles through is about what it writes between two polls:
// at the default 5 ms and 20 M calls/s that is 3.2 MB of slots, more than a
// core's L2 cache, and every record's stores then miss. While one ring
// fills at a rate of warmSlots (1 MiB of slots) or more per poll interval,
// the drainer polls every warmPoll, so a writer's working set stays below
// about 1 MiB at 5 times that rate; an idle program keeps the slow poll and
// its low cost (docs/capture.md, "The drain").
const (
	// busyPoll follows a poll that found a writer waiting for room or an
	// eighth of a ring's slots new.
	busyPoll  = 200 * time.Microsecond
	warmPoll  = time.Millisecond
	warmSlots = 1 << 20 / recSize
)

// pollPace is how soon to poll again after a poll that read n slots of a
// ring of ringSlots, written over elapsed (since the previous poll), with
// waiters writers waiting for room: 0 for the configured interval poll,
// else the shorter delay. The warm pace goes by the rate, not the count,
// so that it holds at its own shorter interval.
func pollPace(waiters uint32, n, ringSlots uint64, elapsed, poll time.Duration) time.Duration {
	switch {
	case waiters > 0 || n*8 >= ringSlots:
		return busyPoll
	case elapsed > 0 && float64(n)*float64(poll) >= float64(warmSlots)*float64(elapsed):
		return warmPoll
	}
	return 0
}

func (d *drainer) loop(stop <-chan struct{}) {
	t := time.NewTimer(d.cfg.poll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			next := d.cfg.poll
			if pace := d.drain(); pace > 0 {
				next = min(next, pace)
			}
			d.status()
			t.Reset(next)
		}
	}
}

// drain opens new ring files and reads what every ring committed; it says
// how soon to poll again (pollPace of the busiest ring, 0: the configured
// interval).
func (d *drainer) drain() (pace time.Duration) {
	if d.err != nil {
		return 0
	}
	for _, dir := range d.dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			d.err = err
			return 0
		}
		for _, e := range ents {
			path := filepath.Join(dir, e.Name())
			if !strings.HasSuffix(path, ".ring") || d.opened[path] {
				continue
			}
			r, err := openRing(path)
			if errors.Is(err, errNotReady) || errors.Is(err, fs.ErrNotExist) {
				// Not written yet, or removed by a shim that could not
				// size or map it after it was listed.
				continue
			}
			if err != nil {
				d.err = err
				return 0
			}
			r.codeTab = d.codes
			if err := createSpill(d.spillDir, r, len(d.rings)); err != nil {
				r.close()
				d.err = err
				return 0
			}
			// The ring keeps its name while its process lives: the shim
			// reopens it to grow the ring, and a recorder killed now leaves
			// what was committed for recover. It goes once the process is
			// gone and a poll read all of it (finish).
			d.opened[path] = true
			d.rings = append(d.rings, r)
		}
	}
	now := time.Now()
	elapsed := d.cfg.poll
	if !d.polledAt.IsZero() {
		elapsed = now.Sub(d.polledAt)
	}
	d.polledAt = now
	for _, r := range d.rings {
		if r.finished {
			continue
		}
		gone := r.gone(d.rings)
		if pollHook != nil {
			pollHook(r)
		}
		n, err := r.poll(d.st, &d.sp)
		if err != nil {
			d.err = fmt.Errorf("%s: %w", r.path, err)
			return 0
		}
		if gone {
			d.finish(r)
			continue
		}
		if p := pollPace(r.waiters, uint64(n), uint64(r.nchunks)*uint64(r.chunkSize/recSize), elapsed, d.cfg.poll); p > 0 && (pace == 0 || p < pace) {
			pace = p
		}
		d.readMaps(r)
	}
	return pace
}

// pollHook, when set (tests), is called before each poll of a ring.
var pollHook func(r *ring)

// finish removes the name of a ring whose process is gone, once a poll
// after it went has read all it committed, keeping its saved mappings.
func (d *drainer) finish(r *ring) {
	r.finished = true
	d.savedMaps(r)
	os.Remove(r.path + ".maps")
	os.Remove(r.path)
}

// savedMaps takes the mappings the shim saved beside the ring where they
// are the newest known: its exit hook's copy (the ring says exited), or
// the copy from the ring's open when the recorder read no /proc/PID/maps
// of the process since (it ended before a poll found it, without running
// its exit hooks: a Go program's os.Exit, _exit, a signal).
func (d *drainer) savedMaps(r *ring) {
	if !r.exited && d.maps[r] != "" {
		return
	}
	if b, err := os.ReadFile(r.path + ".maps"); err == nil && len(b) > 0 {
		d.maps[r] = string(b)
	}
}

// closeRings closes the ring and spill files.
func (d *drainer) closeRings() {
	for _, r := range d.rings {
		r.close()
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
		events += r.n
		drops += r.totalDrops()
		pids[r.pid] = true
	}
	return events, drops, len(pids)
}

func (d *drainer) status() {
	if d.cfg.progress == nil || time.Since(d.statusAt) < 250*time.Millisecond {
		return
	}
	now := time.Now()
	n, drops, procs := d.counts()
	rate := 0.0
	if !d.statusAt.IsZero() {
		rate = float64(n-d.lastN) / now.Sub(d.statusAt).Seconds()
	}
	d.statusAt, d.lastN = now, n
	d.cfg.progress(Progress{Events: n, Drops: drops, Processes: procs, Rate: rate, Elapsed: time.Since(d.began)})
}

// String is the status line's text.
func (p Progress) String() string {
	return fmt.Sprintf("cuprof: %d events (%s/s), %d dropped, %d %s, %s", p.Events, humanRate(p.Rate), p.Drops,
		p.Processes, map[bool]string{true: "process", false: "processes"}[p.Processes == 1], p.Elapsed.Round(time.Second))
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

// threadBatch is how many events of one thread the final pass buffers
// before it sorts them and writes the earlier half; maxBuffered bounds the
// events buffered over all threads (past it every buffer is written).
const (
	threadBatch = 4096
	maxBuffered = 1 << 17
)

// tkey is a thread of a process.
type tkey struct{ pid, tid uint32 }

// sortedTKeys is m's keys by pid, then tid.
func sortedTKeys[V any](m map[tkey]V) []tkey {
	ks := make([]tkey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		return a.pid < b.pid || a.pid == b.pid && a.tid < b.tid
	})
	return ks
}

// write writes the trace to f: the spilled records converted to events
// on the trace clock, processes, threads, drops, and the mappings and
// symbols of call sites. Memory holds at most maxBuffered events.
func (d *drainer) write(f io.Writer, meta trace.Meta, clk clock, childPID int, res *Result) (err error) {
	bw := bufio.NewWriterSize(f, 256<<10)

	sort.Slice(d.rings, func(i, j int) bool { return d.rings[i].mono0 < d.rings[j].mono0 })
	meta.Clock = trace.Clock{Source: clk.source}
	for _, r := range d.rings {
		meta.FullWaits += r.waits
		meta.FullWaitNs += int64(r.waitNs)
	}
	if clk.tsc {
		meta.Clock.TSCHz = clk.hz
	}
	for _, r := range d.rings {
		if r.driver != 0 {
			meta.DriverVersion = r.driver
		}
	}
	var pyEvent float64
	var pyRings int
	for _, r := range d.rings {
		if r.pyEvent > 0 {
			pyEvent += clk.ticksToNs(float64(r.pyEvent) / 1000)
			pyRings++
		}
	}
	if pyRings > 0 {
		meta.Overhead.PyEventNs = math.Round(pyEvent/float64(pyRings)*10) / 10
	}
	w := trace.NewWriter(bw, meta)
	for _, s := range d.st.Strings {
		w.String(s) // the recording's strings first, in the order they were read
	}
	// Code entries of Python frames, interned by content across the
	// rings' spill files as frames use them.
	type codeKey struct {
		kind               trace.CodeKind
		name, module, file string
		line               uint32
	}
	codeIDs := map[codeKey]trace.CodeID{}

	procs := map[uint32]*trace.Process{}
	threads := map[tkey]string{}
	drops := map[tkey]uint64{}
	spillDrops := map[tkey]uint64{}  // records a full disk kept out of the spill
	badDrops := map[tkey]uint64{}    // records of an unknown kind (a torn or bogus ring record)
	pyDrops := map[tkey]uint64{}     // Python frames: buffer full
	pyCodeDrops := map[tkey]uint64{} // Python frames whose code was not interned
	growDrops := map[tkey]uint64{}   // every chunk held by a thread, no room to grow
	stallDrops := map[tkey]uint64{}  // a wait found the recorder gone
	nestedDrops := map[tkey]uint64{} // driver calls inside a wrapped call
	callers := map[uint32]map[uint64]bool{}
	buffered, written := 0, 0
	for _, r := range d.rings {
		p := procs[r.pid]
		if p == nil {
			p = &trace.Process{PID: r.pid, PPID: r.ppid, ExitCode: -1, Start: int64(r.mono0)}
			procs[r.pid] = p
		}
		// The newest image of a pid names it (after exec), and says how it
		// exited.
		p.Exe, p.Cmdline = r.exe, r.cmdline
		if r.exitKnown {
			p.ExitCode = r.exitCode
		}
		if r.env != nil {
			p.Env = r.env
		}
		if r.pyStatus != "" {
			p.Python = r.pyStatus
		}
		if int64(r.mono0) > p.End {
			p.End = int64(r.mono0)
		}
		cs := callers[r.pid]
		if cs == nil {
			cs = map[uint64]bool{}
			callers[r.pid] = cs
		}
		bufs := map[uint32][]trace.Event{}
		last := map[uint32]int64{} // start of the last event written, by thread
		// flush sorts tid's buffer and writes all of it, or its earlier half
		// (later records of the thread may still sort before the rest).
		flush := func(tid uint32, all bool) error {
			ev := bufs[tid]
			trace.SortEvents(ev)
			n := len(ev)
			if !all {
				n /= 2
			}
			if n == 0 {
				return nil
			}
			if l, ok := last[tid]; ok && ev[0].Start < l {
				res.outOfOrder++ // the reader sorts such a thread after merging
			}
			last[tid] = ev[n-1].Start
			if err := w.WriteBatch(r.pid, tid, ev[:n]); err != nil {
				return err
			}
			bufs[tid] = ev[:copy(ev, ev[n:])]
			buffered -= n
			written += n
			return nil
		}
		// flushAll writes every buffer and lets go of them (with many
		// threads, their capacity adds up).
		flushAll := func() error {
			for _, tid := range sortedKeys(bufs) {
				if err := flush(tid, true); err != nil {
					return err
				}
				bufs[tid] = nil
			}
			return nil
		}
		var spillIDs []trace.StringID // the spill's string IDs -> the trace's, filled as used
		traceID := func(id trace.StringID, names []string) trace.StringID {
			if id == 0 || int(id) >= len(names) {
				return 0
			}
			if len(spillIDs) < len(names) {
				spillIDs = append(spillIDs, make([]trace.StringID, len(names)-len(spillIDs))...)
			}
			if spillIDs[id] == 0 {
				spillIDs[id] = w.String(names[id])
			}
			return spillIDs[id]
		}
		var spillCodes []trace.CodeID // the spill's code IDs -> the trace's, filled as used
		traceCode := func(id trace.CodeID, spill *trace.Trace) trace.CodeID {
			if id == 0 || int(id) >= len(spill.Code) {
				return 0
			}
			if len(spillCodes) < len(spill.Code) {
				spillCodes = append(spillCodes, make([]trace.CodeID, len(spill.Code)-len(spillCodes))...)
			}
			if spillCodes[id] == 0 {
				c := spill.Code[id]
				k := codeKey{c.Kind, spill.String(c.Name), spill.String(c.Module), spill.String(c.File), c.Line}
				tc, ok := codeIDs[k]
				if !ok {
					tc = w.AddCode(trace.Code{Kind: c.Kind, Name: w.String(k.name), Module: w.String(k.module),
						File: w.String(k.file), Line: c.Line})
					codeIDs[k] = tc
				}
				spillCodes[id] = tc
			}
			return spillCodes[id]
		}
		err := r.replay(func(e *trace.Event, spill *trace.Trace) error {
			names := spill.Strings
			tid := e.TID
			ev := *e
			ev.Start = clk.ns(ev.Start, r.clock)
			ev.End = clk.ns(ev.End, r.clock)
			ev.Name, ev.Domain = traceID(ev.Name, names), traceID(ev.Domain, names)
			ev.Code = traceCode(ev.Code, spill)
			if ev.End > p.End {
				p.End = ev.End
			}
			if ev.Caller != 0 {
				cs[ev.Caller] = true
			}
			b := append(bufs[tid], ev)
			bufs[tid] = b
			buffered++
			res.peakBuffered = max(res.peakBuffered, buffered)
			if len(b) >= threadBatch {
				if err := flush(tid, false); err != nil {
					return err
				}
			}
			if buffered >= maxBuffered {
				return flushAll()
			}
			return nil
		})
		if err == nil {
			err = flushAll()
		}
		if err != nil {
			return err
		}
		for tid, name := range r.threads {
			threads[tkey{r.pid, tid}] = name
		}
		for tid, n := range r.drops {
			drops[tkey{r.pid, tid}] += n
		}
		for tid, n := range r.pyDrops {
			pyDrops[tkey{r.pid, tid}] += n
		}
		pyCodeDrops[tkey{r.pid, 0}] += r.pyCodeDrops + r.pyLostCode
		if r.overflow > 0 {
			drops[tkey{r.pid, 0}] += r.overflow
		}
		growDrops[tkey{r.pid, 0}] += r.growDrops
		stallDrops[tkey{r.pid, 0}] += r.stallDrops
		nestedDrops[tkey{r.pid, 0}] += r.nestedDrops
		if r.sf != nil {
			for tid, n := range r.sf.dropped {
				spillDrops[tkey{r.pid, tid}] += n
			}
			for tid, n := range r.sf.bad {
				badDrops[tkey{r.pid, tid}] += n
			}
		}
	}
	for _, pid := range sortedKeys(procs) {
		p := procs[pid]
		res.Python = append(res.Python, PythonStatus{PID: pid, Exe: p.Exe, Status: p.Python})
		if int(pid) == childPID {
			p.ExitCode = int32(res.ExitCode)
			p.Signal = int32(res.Signal)
			if res.Signal != 0 {
				p.ExitCode = -1
			}
		}
		w.AddProcess(*p)
	}
	for _, k := range sortedTKeys(threads) {
		w.AddThread(trace.Thread{PID: k.pid, TID: k.tid, Name: threads[k]})
	}
	var dropped uint64
	for _, k := range sortedTKeys(drops) {
		dropped += drops[k]
		w.AddDrop(trace.Drop{PID: k.pid, TID: k.tid, Events: drops[k], Reason: "buffer full"})
	}
	for _, extra := range []struct {
		m      map[tkey]uint64
		reason string
		count  *uint64 // the Result's count of them; nil: only in Drops, with the full buffer's
	}{{spillDrops, "spill failed (disk full)", &res.SpillDrops}, {badDrops, "bad record", &res.BadRecords},
		{pyDrops, DropPythonBuffer, nil}, {pyCodeDrops, DropPythonCode, nil},
		{growDrops, DropRingHeld, nil}, {stallDrops, DropRecorderGone, nil}, {nestedDrops, DropNestedCall, nil}} {
		for _, k := range sortedTKeys(extra.m) {
			if extra.m[k] == 0 {
				continue
			}
			dropped += extra.m[k]
			if extra.count != nil {
				*extra.count += extra.m[k]
			}
			w.AddDrop(trace.Drop{PID: k.pid, TID: k.tid, Events: extra.m[k], Reason: extra.reason})
		}
	}
	// Mappings and symbols, per process image.
	sym := newSymbolizer()
	var mappings []trace.Mapping
	var symbols []trace.Symbol
	for _, r := range d.rings {
		if r.path == "" {
			continue // a recovered spill: its process is gone
		}
		if !r.finished {
			d.savedMaps(r)
		}
		text := d.maps[r]
		if text == "" {
			continue
		}
		maps, syms := sym.symbolize(r.pid, text, callers[r.pid])
		mappings = append(mappings, maps...)
		symbols = append(symbols, syms...)
	}
	for _, m := range dedupMappings(mappings) {
		w.AddMapping(m)
	}
	for _, s := range dedupSymbols(symbols) {
		w.AddSymbol(s)
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	res.Events, res.Processes, res.Drops = written, len(procs), dropped
	res.FullWaits, res.FullWait = meta.FullWaits, time.Duration(meta.FullWaitNs)
	return nil
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
