package record

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// A recording degrades rather than being lost when its ring directory is
// small (a 2-6 MB CUPROF_TMPDIR, 8 processes on Docker's 64 MB /dev/shm):
// the shim takes at most half the free room for a ring, so later processes
// get one too, and puts a ring that does not fit at all on disk
// (CUPROF_DIR_FALLBACK, beside the spill files); the recorder drains both
// and says so. When the clock calibrator cannot run, the rings' own clock
// anchors stand in for its readings.

// anchorPairs replaces the calibrator readings that failed with the
// earliest and latest clock anchors of the rings (each ring's header holds
// one instant on its clock and CLOCK_MONOTONIC).
func (d *drainer) anchorPairs(start clockPair, startOK bool, end clockPair, endOK bool) (clockPair, clockPair) {
	var anchors []clockPair
	for _, r := range d.rings {
		if r.mono0 != 0 {
			anchors = append(anchors, clockPair{kind: int(r.clock), tick: r.tsc0, mono: r.mono0})
		}
	}
	sort.Slice(anchors, func(i, j int) bool { return anchors[i].mono < anchors[j].mono })
	if len(anchors) == 0 {
		// No ring: no event to convert either.
		return clockPair{kind: clockMonotonic}, clockPair{kind: clockMonotonic}
	}
	if !startOK {
		start = anchors[0]
	}
	if !endOK {
		last := anchors[len(anchors)-1]
		end = clockPair{kind: last.kind, tick: last.tick, mono: last.mono}
	}
	return start, end
}

// clockKind is kind, or when the calibrator could not tell (its ring did
// not fit) the clock the rings use.
func (d *drainer) clockKind(kind int) int {
	if kind != 0 {
		return kind
	}
	for _, r := range d.rings {
		return int(r.clock)
	}
	return clockMonotonic
}

// anchorNote says how good a clock from anchors is.
func (d *drainer) anchorNote(start, end clockPair) string {
	if start.kind != clockTSC {
		return "the rings' clock is CLOCK_MONOTONIC: times are exact"
	}
	if end.mono > start.mono+10_000_000 && end.tick > start.tick {
		return fmt.Sprintf("TSC rate from anchors %.0f ms apart", float64(end.mono-start.mono)/1e6)
	}
	return "only one anchor: TSC ticks are taken as nanoseconds, so durations may be off by the TSC's rate in GHz"
}

// noteRings says, once, which rings did not get the room asked for: made
// smaller than the buffer, or put on disk instead of the ring directory.
func (d *drainer) noteRings() {
	var small, disk int
	for _, r := range d.rings {
		if uint64(r.nchunks)*uint64(r.chunkSize)*2 <= d.cfg.buffer {
			small++
		}
		if len(d.dirs) > 1 && filepath.Dir(r.path) == d.dirs[1] {
			disk++
		}
	}
	if small > 0 {
		fmt.Fprintf(d.cfg.note(), "cuprof: note: %d of %d processes got a ring smaller than --buffer (%d MB): the ring directory %s had no room for more (set CUPROF_TMPDIR to a larger one); events that did not fit are counted as drops\n",
			small, len(d.rings), d.cfg.buffer>>20, d.dirs[0])
	}
	var lost uint64
	var why error
	for _, r := range d.rings {
		if r.sf != nil && r.sf.failed != nil {
			why = r.sf.failed
			for _, n := range r.sf.dropped {
				lost += n
			}
		}
	}
	if why != nil {
		fmt.Fprintf(d.cfg.note(), "cuprof: warning: the spill files beside the output could not be written (%v): %d events recorded after that are counted as drops (\"spill failed\"); what was spilled before is in the trace\n",
			firstLine(why), lost)
	}
	if disk > 0 {
		fmt.Fprintf(d.cfg.note(), "cuprof: note: %d of %d processes found no room for a ring in %s and recorded on disk beside the output instead\n",
			disk, len(d.rings), filepath.Dir(d.dirs[0]))
	}
}

// firstLine is the first line of err's message.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// StaticELF reports whether path is an ELF executable without a program
// interpreter: the dynamic loader never runs in it, so LD_PRELOAD cannot
// load the shim. Scripts and unreadable files are not.
func StaticELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
