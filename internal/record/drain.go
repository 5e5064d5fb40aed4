package record

import (
	"errors"
	"fmt"
	"io/fs"
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
	// The calibrator's cold shadow call less its warm one, measured as at
	// the program's calls (clockPair.shadowNs).
	calibShadowNs float64
	calibShadowOK bool
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
// The file is locked under a name of its own and then linked to the
// lock's name, so that nobody ever sees the lock unheld: another cuprof
// looking for what killed recorders left (leftovers) would take an unheld
// lock for a dead recorder's and remove the directory being set up.
func holdRecorderLock(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, lockName+".new-") // O_EXCL, 0600
	if err != nil {
		return nil, fmt.Errorf("create the recorder's lock: %w", err)
	}
	defer os.Remove(f.Name())
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	if err := os.Link(f.Name(), filepath.Join(dir, lockName)); err != nil { // never replaces one
		f.Close()
		return nil, fmt.Errorf("create the recorder's lock: %w", err)
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
	d.passThroughLeft(r)
	r.finished = true
	d.savedMaps(r)
	os.Remove(r.path + ".maps")
	os.Remove(r.path)
}

// passThroughLeft spills, as count events at r's last record, the calls
// passed through that r's process counted and never wrote: it ended without
// its exit hooks (_exit, a Go program's exit, a forked multiprocessing
// child's os._exit), which write them (passthrough.c).
func (d *drainer) passThroughLeft(r *ring) {
	if len(r.passLeft) == 0 || r.sf == nil {
		return
	}
	evs := make([]trace.Event, 0, len(r.passLeft))
	for _, pc := range r.passLeft {
		if !pc.api.Valid() {
			continue
		}
		evs = append(evs, trace.Event{Kind: trace.KindCount, PID: r.pid, TID: r.pid, Start: int64(r.lastTick),
			End: int64(r.lastTick), Device: -1, Name: d.st.ID(pc.api.String()), Size: pc.calls})
	}
	d.sp.begin(r)
	d.sp.st = d.st
	d.sp.write(r.sf, r.pid, evs)
	r.passLeft = nil
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
