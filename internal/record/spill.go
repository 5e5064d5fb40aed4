package record

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/cuprof/cuprof/trace"
)

// Spill files. The drainer does not keep the records it reads in memory: it
// appends them to one spill file per ring in a private directory beside the
// output, and the trace is written from those files once the run is over
// and the clock calibrated. A spill file is a typed header naming the ring
// and its clock anchor (spillhdr.go), then a .cuprof trace of its own
// (package trace's binary form, about 8 bytes per event against the ring's
// 32-96), with times still on the ring's clock.
//
// Each poll appends, per thread, the records it read as one batch; a poll
// reads the chunks in the order of their first new record's end time, so
// each thread's batches follow each other in time. Because it is a trace,
// a spill file cut short (cuprof killed, disk full) reads up to its last
// whole batch, and `cuprof recover` turns what is left into a trace. When
// the disk is full, the records that could not be spilled are counted as
// drops of their thread ("spill failed") and the recording goes on.

// spillHdrSize is the size of a segment header in the spiller's buffer:
// tid uint32, count uint32, then count raw slots (whole ring records).
const spillHdrSize = 8

// maxPollBytes is how many bytes the spiller gathers before it writes them
// out even in the middle of a poll (a lagging drainer may find a whole ring
// of records in one poll).
const maxPollBytes = 4 << 20

// segment is one thread's records of one chunk read by the current poll.
type segment struct {
	tid uint32
	off int // of the records in spiller.buf
	n   int // records
}

// spiller gathers what one poll of a ring reads, in the spill file's form,
// and appends it to the ring's spill file. It belongs to the drainer, which
// polls one ring at a time, so its buffer is shared by all rings.
type spiller struct {
	r    *ring
	buf  []byte // segments: spillHdrSize header and raw records each
	segs []segment
	pend []pendingRead // ring.poll's list
	// st is the drainer's string table, which r.decode's names index.
	st      *trace.StringTable
	dec     []trace.Event // with observe: the events of a flush, segment after segment
	at      []int         // where each segment's events start in dec
	ev      []trace.Event // one thread's events of a flush
	foreign []trace.Event // frames of it written for other threads
	// observe, when set, gets the events of every write, in segment order,
	// on the ring's clock (dec: not to be kept).
	observe func(r *ring, evs []trace.Event)
}

// spillFile is a ring's spill: a trace.Writer on the file.
type spillFile struct {
	w       *trace.Writer
	names   map[trace.StringID]trace.StringID // drainer string ID -> spill string ID
	codes   map[trace.CodeID]trace.CodeID     // drainer code ID -> spill code ID
	failed  error                             // the first write that failed: nothing more is spilled
	dropped map[uint32]uint64                 // records of each thread that could not be spilled
	bad     map[uint32]uint64                 // records of an unknown kind, or clamped (End before Start), by thread
	threads map[uint32]bool                   // threads whose name the spill holds
}

// createSpill creates r's spill file in dir.
func createSpill(dir string, r *ring, n int) error {
	path := filepath.Join(dir, fmt.Sprintf("ring-%d.spill", n))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("create a spill file: %w", err)
	}
	r.spill = f
	if r.marks, err = createPollMarks(path); err != nil {
		return err
	}
	hdr := appendSpillHeader(nil, spillHeader{pid: r.pid, clock: r.clock, tick0: r.tsc0, mono0: r.mono0, wall0: r.wall0,
		boot: bootID(), ring: r.path})
	if _, err := f.Write(hdr); err != nil {
		return fmt.Errorf("write a spill file: %w", err)
	}
	r.spillOff = int64(len(hdr))
	r.pw = &pollWriter{f: f}
	r.sf = &spillFile{w: trace.NewWriter(r.pw, trace.Meta{Capture: "spill"}), names: map[trace.StringID]trace.StringID{},
		codes:   map[trace.CodeID]trace.CodeID{},
		dropped: map[uint32]uint64{}, bad: map[uint32]uint64{}, threads: map[uint32]bool{}}
	r.sf.w.AddProcess(trace.Process{PID: r.pid, PPID: r.ppid, Exe: r.exe, Cmdline: r.cmdline, Env: r.env, ExitCode: -1})
	return nil
}

// begin starts a poll of r.
func (sp *spiller) begin(r *ring) {
	sp.r = r
	sp.buf, sp.segs = sp.buf[:0], sp.segs[:0]
}

// segment returns room for n slots (whole records) of thread tid, to be
// filled before the next call. What was gathered is written first when the buffer is full.
func (sp *spiller) segment(tid uint32, n int) ([]byte, error) {
	need := spillHdrSize + n*recSize
	if len(sp.buf)+need > cap(sp.buf) {
		if err := sp.flush(); err != nil {
			return nil, err
		}
		if cap(sp.buf) < need {
			sp.buf = make([]byte, 0, max(need, maxPollBytes))
		}
	}
	sp.buf = le.AppendUint32(sp.buf, tid)
	sp.buf = le.AppendUint32(sp.buf, uint32(n))
	off := len(sp.buf)
	sp.buf = sp.buf[:off+n*recSize]
	sp.segs = append(sp.segs, segment{tid: tid, off: off, n: n})
	return sp.buf[off:], nil
}

// flush appends the gathered segments to the spill file, one batch per
// thread. A failed write (a full disk) is not an error of the recording:
// from then on the ring's records are counted as drops of their threads,
// and what was spilled before is kept.
func (sp *spiller) flush() error {
	if len(sp.segs) == 0 {
		return nil
	}
	// Each record is decoded once: for the observer, when there is one,
	// else into its thread's batch below.
	if sp.observe != nil {
		sp.dec, sp.at = sp.dec[:0], sp.at[:0]
		for _, s := range sp.segs {
			sp.at = append(sp.at, len(sp.dec))
			sp.dec = sp.decode(sp.dec, s)
		}
		sp.at = append(sp.at, len(sp.dec))
		sp.observe(sp.r, sp.dec)
	}
	sf := sp.r.sf
	done := make([]bool, len(sp.segs))
	for i, s := range sp.segs {
		if done[i] {
			continue
		}
		// This thread's segments of the poll, in order: one batch.
		sp.ev = sp.ev[:0]
		for j := i; j < len(sp.segs); j++ {
			if done[j] || sp.segs[j].tid != s.tid {
				continue
			}
			done[j] = true
			if sp.observe != nil {
				sp.ev = append(sp.ev, sp.dec[sp.at[j]:sp.at[j+1]]...)
			} else {
				sp.ev = sp.decode(sp.ev, sp.segs[j])
			}
		}
		if sf == nil {
			continue
		}
		// Frames written at exit on behalf of another thread go to that
		// thread's batches; frames whose code entry was not read are lost,
		// and records of an unknown kind counted.
		own := sp.ev[:0]
		for _, e := range sp.ev {
			switch {
			case !e.Kind.Valid():
				sf.bad[s.tid]++
			case e.Kind == trace.KindFrame && e.Code == 0:
				sp.r.pyLostCode++
			case e.TID != s.tid:
				sp.foreign = append(sp.foreign, e)
			default:
				own = append(own, e)
			}
		}
		sp.write(sf, s.tid, own)
		for len(sp.foreign) > 0 {
			tid := sp.foreign[0].TID
			var mine, rest []trace.Event
			for _, e := range sp.foreign {
				if e.TID == tid {
					mine = append(mine, e)
				} else {
					rest = append(rest, e)
				}
			}
			sp.write(sf, tid, mine)
			sp.foreign = append(sp.foreign[:0], rest...)
		}
	}
	sp.buf, sp.segs = sp.buf[:0], sp.segs[:0]
	if cap(sp.buf) > maxPollBytes { // one huge chunk: do not keep its buffer
		sp.buf = nil
	}
	if cap(sp.ev) > 1<<16 {
		sp.ev = nil
	}
	if cap(sp.dec) > 1<<16 {
		sp.dec = nil
	}
	return nil
}

// commit writes the poll's records, which the ring's pollWriter holds, to
// the spill file, once its marks file says which reads they are (pend's).
// A failed write is a failed spill: the events of the batches it did not
// write whole are counted as dropped, and nothing more is spilled.
func (sp *spiller) commit(pend []pendingRead) {
	r := sp.r
	if r.pw == nil {
		return
	}
	marks := r.markBuf[:0]
	for _, p := range pend {
		if p.to > p.from {
			marks = append(marks, pollMark{chunk: p.c, gen: p.gen, to: uint64(p.to)})
		}
	}
	r.markBuf = marks
	lost, err := r.pw.commit(r.marks, marks)
	if err != nil && r.sf != nil && r.sf.failed == nil {
		r.sf.failed = err
		for _, b := range lost {
			r.sf.dropped[b.tid] += uint64(b.n)
		}
	}
}

// decode appends the events of segment s's records to evs. A record that
// ends before it starts (torn, or a cuprof_span given a wrong end) is
// clamped to its start and counted as one bad record: the trace Writer
// refuses such an event, which used to fail the spill and drop every
// later event of the process as "spill failed (disk full)".
func (sp *spiller) decode(evs []trace.Event, s segment) []trace.Event {
	eachRecord(sp.buf[s.off:s.off+s.n*recSize], func(rec []byte) {
		ev := sp.r.decode(rec, s.tid)
		if ev.End < ev.Start {
			ev.End = ev.Start
			if sf := sp.r.sf; sf != nil {
				sf.bad[s.tid]++
			}
		}
		evs = append(evs, ev)
	})
	return evs
}

// write spills ev, events of thread tid, in batches the Writer does not
// split, so that a failed write loses exactly the batch it was writing and
// those after it.
func (sp *spiller) write(sf *spillFile, tid uint32, ev []trace.Event) {
	for len(ev) > 0 {
		n := min(len(ev), spillBatch)
		if sf.failed == nil {
			sf.failed = sp.spill(sf, tid, ev[:n])
		}
		switch {
		case sf.failed != nil:
			sf.dropped[tid] += uint64(n)
		case sp.r.pw != nil && sp.r.pw.hold:
			sp.r.pw.batch(tid, n)
		}
		ev = ev[n:]
	}
}

// spillBatch is the most events spill writes at once: at most one batch of
// the trace Writer.
const spillBatch = 4096

// spill writes ev, events of thread tid, to sf as one batch, names
// interned in the spill's own string table.
func (sp *spiller) spill(sf *spillFile, tid uint32, ev []trace.Event) error {
	name := func(id trace.StringID) trace.StringID {
		if id == 0 || sp.st == nil || int(id) >= len(sp.st.Strings) {
			return 0
		}
		n, ok := sf.names[id]
		if !ok {
			n = sf.w.String(sp.st.Strings[id])
			sf.names[id] = n
		}
		return n
	}
	code := func(id trace.CodeID) trace.CodeID {
		if id == 0 || sp.r.codeTab == nil || int(id) >= len(sp.r.codeTab.codes) {
			return 0
		}
		n, ok := sf.codes[id]
		if !ok {
			c := sp.r.codeTab.codes[id]
			c.Name, c.Module, c.File = name(c.Name), name(c.Module), name(c.File)
			n = sf.w.AddCode(c)
			sf.codes[id] = n
		}
		return n
	}
	for k := range ev {
		e := &ev[k]
		e.Name, e.Domain = name(e.Name), name(e.Domain)
		e.Code = code(e.Code)
	}
	if name := sp.r.threads[tid]; name != "" && !sf.threads[tid] {
		sf.threads[tid] = true
		sf.w.AddThread(trace.Thread{PID: sp.r.pid, TID: tid, Name: name})
	}
	return sf.w.WriteBatch(sp.r.pid, tid, ev)
}

// replay reads r's spill file and calls fn with its events in SortEvents
// order, their times on the ring's clock, their names resolved. It reads
// up to the last whole batch of a file cut short by a full disk.
func (r *ring) replay(fn func(e *trace.Event, spill *trace.Trace) error) error {
	if r.spill == nil {
		return nil
	}
	if r.sf != nil {
		r.sf.w.Close() // the footer, unless the disk is full: then the file reads to its last batch
	}
	st, err := r.spill.Stat()
	if err != nil {
		return fmt.Errorf("read the spill file: %w", err)
	}
	size := st.Size() - r.spillOff
	f, err := trace.NewFile(io.NewSectionReader(r.spill, r.spillOff, size), size)
	if err != nil {
		return fmt.Errorf("read the spill file: %w", err)
	}
	tables := f.Tables()
	for e, err := range f.Events() {
		if err != nil {
			return fmt.Errorf("read the spill file: %w", err)
		}
		if err := fn(e, tables); err != nil {
			return err
		}
	}
	return nil
}

// bootID identifies this boot of the machine: the TSC of a spill file's
// anchor can be read again by a calibrator run under the same boot.
var bootID = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
})
