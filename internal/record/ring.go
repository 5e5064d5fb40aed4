package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/cuprof/cuprof/trace"
)

var le = binary.LittleEndian

// errNotReady is returned by openRing for a file whose header the shim has
// not finished writing yet.
var errNotReady = errors.New("ring header not written yet")

// ring reads one process image's ring file (see cudawrap/shim/cuprof_ring.h)
// while the shim writes it, and frees the chunks it has read.
type ring struct {
	path       string
	f          *os.File
	pid, ppid  uint32
	uid        uint32 // the ring file's owner: the user the process ran as
	clock      uint32
	nchunks    uint32
	chunkSize  uint32
	maxThreads uint32 // thread slots in the file
	threadsOff uint64
	chunksOff  uint64
	stringsOff uint64
	stringsCap uint64
	dataOff    uint64
	tsc0       uint64
	mono0      uint64
	wall0      uint64
	exe        string
	cmdline    []string
	env        map[string]string

	// runs are the ring's chunks: its own (runs[0]), then the segments the
	// ring grew by, as the header links them; cursors has one per chunk
	// of them all.
	runs     []chunkRun
	cursors  []cursor
	hdrBuf   []byte
	hdrMap   []byte // the header page, mapped to wake waiting writers (ring_unsafe.go)
	chunkBuf []byte
	strOff   uint32
	strs     map[uint32]trace.StringID // ring string id -> trace string id
	codes    map[uint32]trace.CodeID   // ring string id of a code entry -> code ID
	codeTab  *codeTable                // where code entries are interned (shared by the drainer's rings)
	st       *trace.StringTable        // the string table of the last poll
	n        int                       // records read (and spilled)
	spill    *os.File                  // the records read, see spill.go
	spillOff int64                     // where the spill's trace starts (after its header)
	sf       *spillFile                // the trace written to spill
	pw       *pollWriter               // what sf writes to: spill, a poll at a time (pollmarks.go)
	marks    *pollMarks                // the read marks of the poll last spilled
	markBuf  []pollMark                // the marks of a poll, reused by the next
	driver   int32                     // the driver version the last successful cuDriverGetVersion returned
	threads  map[uint32]string         // by thread id (threadID)
	drops    map[uint32]uint64
	// Thread identity: the kernel reuses tids (51,200 short-lived threads
	// were 32,385 in the trace), the shim numbers a process's threads (the
	// chunk's slot field: its serial). serials maps a serial to the trace's
	// thread id, tidThreads counts the threads seen with each tid, and
	// newest is each tid's latest thread id.
	serials    map[uint32]uint32
	tidThreads map[uint32]uint32
	newest     map[uint32]uint32
	overflow   uint64
	strDrops   uint64 // names that did not fit the string area (their events are kept, unnamed)
	strCuts    uint32 // names cut to stringMax bytes
	// Drops that are not the buffer's (cuprof_ring_hdr): every chunk held
	// and no room to grow, a wait that found the recorder gone, a signal
	// handler's driver calls inside a wrapped call.
	growDrops, stallDrops, nestedDrops uint64
	// Fork children that could make no ring of their own (a privilege
	// drop), and the events they made meanwhile (cuprof_ring_hdr).
	lostChildren, lostChildEvents uint64
	exited                        bool
	finished                      bool // its process is gone, all of it read, its name removed
	// exitCode is the status the process passed to exit, when exitKnown
	// (its exit hook ran: not after a signal, _exit or exec).
	exitCode  int32
	exitKnown bool
	released  uint32
	whenFull  uint32 // what the shim does when no chunk is free (whenFull*)
	polls     uint32 // this reader's polls: the heartbeat waiting writers watch
	waiters   uint32 // writers waiting for a chunk at the last poll
	waits     uint64 // times writers waited for a free chunk
	waitNs    uint64 // their waits in all
	// Python frames: frames lost per thread (buffer full) and for want of
	// room for their code, the cost of one Python event (ticks x 1000), and
	// how frames were recorded (trace.Process.Python).
	pyDrops     map[uint32]uint64
	pyCodeDrops uint64
	pyLostCode  uint64 // frames whose code entry the recorder could not read
	pyEvent     uint64
	// the rest of the calibration (ticks x 1000): cuprof_py_costs' c_event,
	// inside, c_inside, hidden, c_hidden and lone
	pyCosts [6]uint64
	// The wrapper's cost measured in place (inplace.c): the shadow calls'
	// ticks and counts, cold (before their call) and warm (after it).
	inPlaceCold, inPlaceWarm   uint64
	inPlaceColdN, inPlaceWarmN uint64
	pyStatus                   string
	// Calls passed through (--pass-through) the shim counted and has not
	// written as count events yet (the header's pass_calls at the last
	// poll), and the latest start of a record read: where the recorder
	// writes them once the process is gone (passThroughLeft).
	passLeft []passCount
	lastTick uint64
}

// passCount is an API's calls passed through.
type passCount struct {
	api   trace.API
	calls uint64
}

// pendingRead is a chunk with records the current poll reads: [from, to)
// of thread tid, key the end of record from.
type pendingRead struct {
	c, from, to, tid, gen uint32
	full                  bool
	key                   uint64
}

// chunkRun is a run of chunks in a ring file: the ring's own, or a
// segment it grew by (struct cuprof_ring_seg).
type chunkRun struct {
	chunksOff, dataOff uint64 // the run's chunk table and bodies
	n, chunkSize       uint32
	first              uint32 // the index of its first chunk among the ring's
	seg                uint64 // the segment header's offset, 0 for the ring's own
}

// run returns the run holding chunk c (an index among all the ring's) and
// c's index in it.
func (r *ring) run(c uint32) (*chunkRun, uint32) {
	for i := len(r.runs) - 1; i > 0; i-- {
		if c >= r.runs[i].first {
			return &r.runs[i], c - r.runs[i].first
		}
	}
	return &r.runs[0], c
}

// chunkHdrOff is the file offset of chunk c's header.
func (r *ring) chunkHdrOff(c uint32) int64 {
	run, i := r.run(c)
	return int64(run.chunksOff) + int64(i)*chunkHdrSize
}

// chunkOff is the file offset of slot pos of chunk c's body.
func (r *ring) chunkOff(c, pos uint32) int64 {
	run, i := r.run(c)
	return int64(run.dataOff) + int64(i)*int64(run.chunkSize) + int64(pos)*recSize
}

// cursor is how far the reader got in one chunk's current generation.
type cursor struct {
	gen  uint32
	pos  uint32
	done bool
}

func openRing(path string) (*ring, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	h := make([]byte, hdrSize)
	if _, err := f.ReadAt(h, 0); err != nil {
		f.Close()
		if errors.Is(err, io.EOF) {
			return nil, errNotReady
		}
		return nil, err
	}
	if le.Uint64(h[hOffMagic:]) != ringMagic {
		f.Close()
		return nil, errNotReady
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, err
	}
	r := &ring{
		path:       path,
		f:          f,
		uid:        st.Uid,
		pid:        le.Uint32(h[hOffPID:]),
		ppid:       le.Uint32(h[hOffPPID:]),
		clock:      le.Uint32(h[hOffClock:]),
		nchunks:    le.Uint32(h[hOffNChunks:]),
		chunkSize:  le.Uint32(h[hOffChunkSize:]),
		threadsOff: le.Uint64(h[hOffThreadsOff:]),
		chunksOff:  le.Uint64(h[hOffChunksOff:]),
		stringsOff: le.Uint64(h[hOffStringsOff:]),
		stringsCap: le.Uint64(h[hOffStringsSize:]),
		dataOff:    le.Uint64(h[hOffDataOff:]),
		tsc0:       le.Uint64(h[hOffTSC0:]),
		mono0:      le.Uint64(h[hOffMono0:]),
		wall0:      le.Uint64(h[hOffWall0:]),
		strs:       map[uint32]trace.StringID{},
		codes:      map[uint32]trace.CodeID{},
		threads:    map[uint32]string{},
		drops:      map[uint32]uint64{},
		serials:    map[uint32]uint32{},
		tidThreads: map[uint32]uint32{},
		newest:     map[uint32]uint32{},
		pyDrops:    map[uint32]uint64{},
	}
	if v := le.Uint32(h[hOffVersion:]); v != ringVersion || le.Uint32(h[hOffRecSize:]) != recSize ||
		r.chunkSize%recSize != 0 || r.nchunks == 0 || r.nchunks > 1<<20 {
		f.Close()
		return nil, fmt.Errorf("%s: unsupported ring file (version %d, record size %d): the shim and cuprof differ in version",
			path, v, le.Uint32(h[hOffRecSize:]))
	}
	// The shim sizes the file before it writes the magic: every area lies
	// inside it, and a chunk (what one segment of the spill buffer holds)
	// is at most maxChunkSize.
	if err := r.checkAreas(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: corrupt ring file: %w", path, err)
	}
	r.exe = cstring(h[hOffExe : hOffExe+exeMax])
	n := min(int(le.Uint32(h[hOffCmdlineLen:])), cmdlineMax)
	for _, a := range strings.Split(strings.TrimRight(string(h[hOffCmdline:hOffCmdline+n]), "\x00"), "\x00") {
		if a != "" || len(r.cmdline) > 0 {
			r.cmdline = append(r.cmdline, a)
		}
	}
	for _, kv := range strings.Split(string(h[hOffEnv:hOffEnv+envMax]), "\x00") {
		if kv == "" {
			break
		}
		if k, v, ok := strings.Cut(kv, "="); ok {
			if r.env == nil {
				r.env = map[string]string{}
			}
			r.env[k] = v
		}
	}
	// nthreads counts every thread that asked for a slot, also those
	// past the last one: only max_threads slots exist, before the chunks.
	r.maxThreads = min(le.Uint32(h[hOffMaxThreads:]), 1<<16)
	if r.chunksOff < r.threadsOff {
		r.maxThreads = 0
	} else if room := (r.chunksOff - r.threadsOff) / slotSize; room < uint64(r.maxThreads) {
		r.maxThreads = uint32(room)
	}
	r.runs = []chunkRun{{chunksOff: r.chunksOff, dataOff: r.dataOff, n: r.nchunks, chunkSize: r.chunkSize}}
	r.addCursors(r.nchunks)
	if err := r.mapHeader(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: map the ring's header: %w", path, err)
	}
	return r, nil
}

// addCursors makes room for n more chunks.
func (r *ring) addCursors(n uint32) {
	for range n {
		r.cursors = append(r.cursors, cursor{done: true}) // generation 0 was never written
	}
	r.chunkBuf = append(r.chunkBuf, make([]byte, int(n)*chunkHdrSize)...)
}

// readSegments follows the links to segments the ring grew by since the
// last poll (extOff: the header's first link), checking that each lies in
// the file.
func (r *ring) readSegments(extOff uint64) error {
	for len(r.runs) <= maxSegs {
		next := extOff
		if last := r.runs[len(r.runs)-1]; last.seg != 0 {
			var b [8]byte
			if _, err := r.f.ReadAt(b[:], int64(last.seg)+gOffNextOff); err != nil {
				return err
			}
			next = le.Uint64(b[:])
		}
		if next == 0 {
			return nil
		}
		var g [segHdrSize]byte
		if _, err := r.f.ReadAt(g[:], int64(next)); err != nil {
			return fmt.Errorf("segment at %d: %w", next, err)
		}
		if le.Uint64(g[gOffMagic:]) != segMagic {
			return nil // linked before its header reached us: the next poll reads it
		}
		run := chunkRun{chunksOff: le.Uint64(g[gOffChunksOff:]), dataOff: le.Uint64(g[gOffDataOff:]),
			n: le.Uint32(g[gOffNChunks:]), chunkSize: le.Uint32(g[gOffChunkSize:]), seg: next}
		st, err := r.f.Stat()
		if err != nil {
			return err
		}
		size := uint64(st.Size())
		total := uint64(len(r.cursors)) + uint64(run.n)
		if run.n == 0 || total > 1<<22 || run.chunkSize == 0 || run.chunkSize%recSize != 0 || run.chunkSize > maxChunkSize ||
			next > size || run.chunksOff < next+segHdrSize || run.chunksOff > size ||
			uint64(run.n)*chunkHdrSize > size-run.chunksOff ||
			run.dataOff > size || uint64(run.n)*uint64(run.chunkSize) > size-run.dataOff {
			return fmt.Errorf("segment at %d (%d chunks of %d bytes) does not fit the file (%d bytes)", next, run.n, run.chunkSize, size)
		}
		run.first = uint32(len(r.cursors))
		r.runs = append(r.runs, run)
		r.addCursors(run.n)
	}
	return nil
}

// maxChunkSize bounds a ring's chunk size (the shim's are under 64 KiB).
const maxChunkSize = 16 << 20

// checkAreas checks that the areas the header describes lie in the file.
func (r *ring) checkAreas(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := uint64(st.Size())
	if r.chunkSize > maxChunkSize {
		return fmt.Errorf("chunk size %d", r.chunkSize)
	}
	for _, a := range []struct {
		name     string
		off, len uint64
	}{
		{"chunk table", r.chunksOff, uint64(r.nchunks) * chunkHdrSize},
		{"string area", r.stringsOff, r.stringsCap},
		{"chunks", r.dataOff, uint64(r.nchunks) * uint64(r.chunkSize)},
	} {
		if a.off > size || a.len > size-a.off {
			return fmt.Errorf("%s [%d, +%d) past the end (%d bytes)", a.name, a.off, a.len, size)
		}
	}
	return nil
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func (r *ring) close() {
	r.unmapHeader()
	r.f.Close()
	if r.spill != nil {
		r.spill.Close()
	}
	if r.marks != nil {
		r.marks.f.Close()
	}
}

// resume sets the ring's read positions from the read marks a recorder
// left in it (poll), so that a poll reads what was committed after them.
func (r *ring) resume() error {
	var ext [8]byte
	if _, err := r.f.ReadAt(ext[:], hOffExtOff); err != nil {
		return err
	}
	if err := r.readSegments(le.Uint64(ext[:])); err != nil {
		return err
	}
	for _, run := range r.runs {
		buf := r.chunkBuf[run.first*chunkHdrSize : (run.first+run.n)*chunkHdrSize]
		if _, err := r.f.ReadAt(buf, int64(run.chunksOff)); err != nil {
			return err
		}
	}
	for c := range r.cursors {
		b := r.chunkBuf[c*chunkHdrSize:]
		gen, readGen := le.Uint32(b[cOffGen:]), le.Uint32(b[cOffReadGen:])
		switch {
		case le.Uint32(b[cOffState:]) == chunkFree:
		case readGen == gen:
			r.cursors[c] = cursor{gen: gen, pos: uint32(min(le.Uint64(b[cOffRead:]), 1<<31))}
		default:
			r.cursors[c] = cursor{gen: gen} // nothing of this generation read
		}
	}
	return nil
}

// gone reports whether the ring's process image has gone: its process
// has died, or a newer image of its pid (after exec) opened a ring. A
// ring that is gone gets no more records.
func (r *ring) gone(rings []*ring) bool {
	if err := syscall.Kill(int(r.pid), 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	for _, o := range rings {
		if o != r && o.pid == r.pid && o.mono0 > r.mono0 {
			return true
		}
	}
	return false
}

// testHookSpilled, when set (by a test), runs in poll once the poll's
// records are in the spill file and before the ring's read marks are.
var testHookSpilled func(r *ring)

// poll reads what the shim committed since the last poll: new strings,
// records of owned and full chunks (freeing the full ones), drop counters.
// The records go to sp (which spills them to r.spill); it returns the number
// of new records.
func (r *ring) poll(st *trace.StringTable, sp *spiller) (int, error) {
	if r.hdrBuf == nil {
		r.hdrBuf = make([]byte, hdrSize)
	}
	h := r.hdrBuf
	// The heartbeat first: a writer waiting for room goes on waiting while
	// it moves (cuprof_ring.h).
	r.polls++
	var beat [4]byte
	le.PutUint32(beat[:], r.polls)
	if _, err := r.f.WriteAt(beat[:], hOffPolls); err != nil {
		return 0, err
	}
	if _, err := r.f.ReadAt(h, 0); err != nil {
		return 0, err
	}
	r.whenFull = le.Uint32(h[hOffWhenFull:])
	r.waiters = le.Uint32(h[hOffWaiters:])
	r.waits = le.Uint64(h[hOffWaits:])
	r.waitNs = le.Uint64(h[hOffWaitNs:])
	r.st = st
	if err := r.readStrings(st, le.Uint32(h[hOffStringsUsed:])); err != nil {
		return 0, err
	}
	r.overflow = le.Uint64(h[hOffOverflowDrops:])
	r.strDrops = le.Uint64(h[hOffStringDrops:])
	r.strCuts = le.Uint32(h[hOffStringCuts:])
	ex := le.Uint32(h[hOffExited:])
	r.exited = ex != 0
	if ex&exitedStatus != 0 {
		r.exitKnown, r.exitCode = true, int32(ex>>8&0xff)
	}
	r.pyEvent = le.Uint64(h[hOffPyEventMilliticks:])
	for i, off := range []int{hOffPyCEventMilliticks, hOffPyInsideMilliticks, hOffPyCInsideMilliticks,
		hOffPyHiddenMilliticks, hOffPyCHiddenMilliticks, hOffPyLoneMilliticks} {
		r.pyCosts[i] = le.Uint64(h[off:])
	}
	r.inPlaceCold = le.Uint64(h[hOffInplaceColdTicks:])
	r.inPlaceWarm = le.Uint64(h[hOffInplaceWarmTicks:])
	counts := le.Uint64(h[hOffInplaceCounts:])
	r.inPlaceColdN, r.inPlaceWarmN = counts&0xffffffff, counts>>32
	r.pyCodeDrops = le.Uint64(h[hOffPyCodeDrops:])
	if st := h[hOffPyStatus : hOffPyStatus+pyStatusMax]; st[0] != 0 {
		r.pyStatus = strings.ToValidUTF8(cstring(st), "?")
	}
	r.growDrops = le.Uint64(h[hOffGrowDrops:])
	r.stallDrops = le.Uint64(h[hOffStallDrops:])
	r.nestedDrops = le.Uint64(h[hOffNestedDrops:])
	r.lostChildren = le.Uint64(h[hOffLostChildren:])
	r.lostChildEvents = le.Uint64(h[hOffLostChildEvents:])
	r.passLeft = r.passLeft[:0]
	for api := 1; api < passApis; api++ {
		if n := le.Uint64(h[hOffPassCalls+8*api:]); n != 0 {
			r.passLeft = append(r.passLeft, passCount{api: trace.API(api), calls: n})
		}
	}
	r.released = le.Uint32(h[hOffReleased:])
	if err := r.readSegments(le.Uint64(h[hOffExtOff:])); err != nil {
		return 0, err
	}
	for _, run := range r.runs {
		if _, err := r.f.ReadAt(r.chunkBuf[run.first*chunkHdrSize:(run.first+run.n)*chunkHdrSize], int64(run.chunksOff)); err != nil {
			return 0, err
		}
	}
	before := r.n
	sp.st = st // the names of r.decode's events
	sp.begin(r)
	if r.pw != nil {
		r.pw.hold = true // until the marks file says what this poll reads (pollmarks.go)
		defer func() {
			if r.pw.hold { // a poll that failed: what it spilled is written, with no marks
				sp.commit(nil)
			}
		}()
	}
	// The chunks with new records, read in the order of their first new
	// record's start: each thread's records then reach the spill file in
	// time order even when the spiller writes in the middle of a poll.
	pend := sp.pend[:0]
	var key [8]byte
	for c := uint32(0); c < uint32(len(r.cursors)); c++ {
		b := r.chunkBuf[c*chunkHdrSize:]
		state := le.Uint32(b[cOffState:])
		gen := le.Uint32(b[cOffGen:])
		if state == chunkFree {
			continue
		}
		cur := &r.cursors[c]
		newGen := gen != cur.gen
		if newGen {
			*cur = cursor{gen: gen}
		}
		if cur.done {
			continue
		}
		tid, count, serial := le.Uint32(b[cOffTID:]), le.Uint32(b[cOffCount:]), le.Uint32(b[cOffSlot:])
		if state == chunkFull || newGen {
			// The owner stores its last count before it marks the chunk
			// full, and the owner and a zero count before the new
			// generation; but one copy of the header need not read them
			// in that order (its loads are not ordered, on arm64 nor
			// within x86 fast strings): a stale count would lose a full
			// chunk's last records when it is freed, or read a previous
			// generation's records as new. Read them again, after the
			// state and generation (a chunk changes hands only once the
			// reader frees it).
			var tc [cOffSlot + 4 - cOffTID]byte
			if _, err := r.f.ReadAt(tc[:], r.chunkHdrOff(c)+cOffTID); err != nil {
				return 0, err
			}
			tid, count, serial = le.Uint32(tc[:]), le.Uint32(tc[cOffCount-cOffTID:]), le.Uint32(tc[cOffSlot-cOffTID:])
		}
		tid = r.threadID(tid, serial)
		run, _ := r.run(c)
		p := pendingRead{c: c, from: cur.pos, to: min(count, run.chunkSize/recSize), tid: tid, gen: gen, full: state == chunkFull}
		if p.to > p.from {
			if _, err := r.f.ReadAt(key[:], r.chunkOff(c, p.from)+rOffStart); err != nil {
				return 0, err
			}
			p.key = le.Uint64(key[:])
		}
		pend = append(pend, p)
	}
	sort.SliceStable(pend, func(i, j int) bool { return pend[i].key < pend[j].key })
	sp.pend = pend
	for _, p := range pend {
		if p.to > p.from {
			if err := r.readRecords(p.c, p.from, p.to, p.tid, sp); err != nil {
				return 0, err
			}
			r.cursors[p.c].pos = p.to
		}
	}
	// What was read is in the spill file before the ring says so: each
	// chunk's read mark, then FREE for the full ones (the owner stored its
	// last count before marking the chunk full). A recorder killed at any
	// point leaves every committed record in the spill file or past a read
	// mark of the ring or of the spill's marks file (recover), none freed
	// unspilled, none in the spill file and after a mark.
	if err := sp.flush(); err != nil {
		return 0, err
	}
	sp.commit(pend)
	if testHookSpilled != nil {
		testHookSpilled(r)
	}
	freed := 0
	for _, p := range pend {
		if p.to > p.from {
			var mark [12]byte
			le.PutUint32(mark[:], p.gen)
			le.PutUint64(mark[4:], uint64(p.to))
			if _, err := r.f.WriteAt(mark[:], r.chunkHdrOff(p.c)+cOffReadGen); err != nil {
				return 0, err
			}
		}
		if p.full {
			r.cursors[p.c].done = true
			var four [4]byte
			le.PutUint32(four[:], chunkFree)
			if _, err := r.f.WriteAt(four[:], r.chunkHdrOff(p.c)+cOffState); err != nil {
				return 0, err
			}
			freed++
		}
	}
	if freed > 0 {
		r.released += uint32(freed)
		var four [4]byte
		le.PutUint32(four[:], r.released)
		if _, err := r.f.WriteAt(four[:], hOffReleased); err != nil {
			return 0, err
		}
		r.wakeWaiters(freed)
	}
	if err := r.readThreads(le.Uint32(h[hOffNThreads:])); err != nil {
		return 0, err
	}
	return r.n - before, nil
}

// str is the trace's id of the ring's string id (0 for 0). A string
// interned after this poll read the string area and before the record
// naming it was committed is not known yet: the area is read again.
func (r *ring) str(id uint32) trace.StringID {
	if id == 0 {
		return 0
	}
	s, ok := r.strs[id]
	if !ok && r.rereadStrings() {
		s = r.strs[id]
	}
	return s
}

// rereadStrings reads the ring's string area again, up to what it holds
// now (strings and code entries interned since the poll began).
func (r *ring) rereadStrings() bool {
	if r.st == nil {
		return false
	}
	var used [4]byte
	if _, err := r.f.ReadAt(used[:], hOffStringsUsed); err != nil {
		return false
	}
	return r.readStrings(r.st, le.Uint32(used[:])) == nil
}

func (r *ring) readStrings(st *trace.StringTable, used uint32) error {
	if uint64(used) > min(r.stringsCap, 1<<24) {
		used = uint32(min(r.stringsCap, 1<<24))
	}
	if used <= r.strOff {
		return nil
	}
	buf := make([]byte, used-r.strOff)
	if _, err := r.f.ReadAt(buf, int64(r.stringsOff)+int64(r.strOff)); err != nil {
		return err
	}
	off := 0
	for off+8 <= len(buf) {
		id := le.Uint32(buf[off:])
		n := int(le.Uint32(buf[off+4:]))
		if n > len(buf)-off-8 {
			break
		}
		if s := buf[off+8 : off+8+n]; len(s) > 0 && s[0] == 0 {
			if r.codeTab == nil {
				r.codeTab = newCodeTable()
			}
			if c, ok := parseCode(st, s); ok {
				r.codes[id] = r.codeTab.id(c)
			}
		} else {
			r.strs[id] = st.ID(string(s))
		}
		off += 8 + (n+3)&^3
	}
	r.strOff += uint32(off)
	return nil
}

func (r *ring) readRecords(c, from, to, tid uint32, sp *spiller) error {
	buf, err := sp.segment(tid, int(to-from))
	if err != nil {
		return err
	}
	if _, err := r.f.ReadAt(buf, r.chunkOff(c, from)); err != nil {
		return err
	}
	r.n += eachRecord(buf, func(b []byte) {
		r.lastTick = max(r.lastTick, le.Uint64(b[rOffStart:]))
		if trace.Kind(b[rOffKind]) == trace.KindCall && trace.API(le.Uint16(b[rOffAPI:])) == trace.APIDriverGetVersion &&
			b[rOffExt]&extArgs != 0 {
			fl := le.Uint64(b[recSize+aOffFlags:])
			if (b[rOffExt]&extDetail == 0 || le.Uint32(b[2*recSize+dOffResult:]) == 0) && fl != 0 {
				r.driver = int32(fl)
			}
		}
	})
	return nil
}

// recSlots is how many slots the record whose head starts b takes.
func recSlots(b []byte) int {
	ext := b[rOffExt]
	return 1 + int(ext&extArgs) + int(ext&extDetail)>>1
}

// eachRecord calls fn with each whole record of buf, a run of slots that
// starts at a record's head, and returns how many there were. A record whose
// slots would run past buf's end (only a corrupt ring has one) ends the run.
func eachRecord(buf []byte, fn func(rec []byte)) int {
	n := 0
	for i := 0; i+recSize <= len(buf); n++ {
		k := recSlots(buf[i:]) * recSize
		if i+k > len(buf) {
			break
		}
		fn(buf[i : i+k])
		i += k
	}
	return n
}

// decode turns one record (its head and extension slots, as eachRecord
// hands them out) into an event; absent slots mean zero arguments, result
// 0, device -1, no name, and an end start + dur (the detail slot has the
// full end).
func (r *ring) decode(b []byte, tid uint32) trace.Event {
	kind := trace.Kind(b[rOffKind])
	start := le.Uint64(b[rOffStart:])
	dur := le.Uint32(b[rOffDur:])
	ev := trace.Event{
		Kind:   kind,
		PID:    r.pid,
		TID:    tid,
		Start:  int64(start),
		End:    int64(start + uint64(dur)),
		Device: -1,
		Caller: le.Uint64(b[rOffCaller:]),
	}
	ext := b[rOffExt]
	x := b[recSize:]
	var stream, aux, size, flags uint64
	if ext&extArgs != 0 {
		stream, aux = le.Uint64(x[aOffStream:]), le.Uint64(x[aOffAux:])
		size, flags = le.Uint64(x[aOffSize:]), le.Uint64(x[aOffFlags:])
		x = x[recSize:]
	}
	var result int32
	var name uint32
	var object uint8
	if ext&extDetail != 0 {
		ev.End = int64(le.Uint64(x[dOffEnd:]))
		result = int32(le.Uint32(x[dOffResult:]))
		ev.Device = int32(le.Uint32(x[dOffDevice:]))
		name, object = le.Uint32(x[dOffName:]), x[dOffObject]
	}
	handle := le.Uint64(b[rOffHandle:])
	switch kind {
	case trace.KindFrame:
		// The hidden counts (what the hooks did in its self time
		// and left no frame of): a byte each above the flags in the
		// one-slot form, else the args' stream and size and caller.
		ev.Flags, ev.Size, ev.Aux, ev.ID = flags, stream, size, ev.Caller
		if ext&extDetail == 0 {
			// The one-slot form: the code's string id and the flags
			// in caller.
			c := ev.Caller
			name, ev.Flags = uint32(c), c>>32&0xff
			ev.Size, ev.Aux, ev.ID = c>>40&0xff, c>>48&0xff, c>>56
		}
		c, ok := r.codes[name]
		if !ok && r.rereadStrings() {
			c = r.codes[name]
		}
		ev.Code = c
		if t := handle; t != 0 && t <= 1<<32-1 {
			ev.TID = r.threadOf(uint32(t)) // written at exit on behalf of a thread still in it
		}
		ev.Device = trace.NoDevice
		ev.Caller = 0
	case trace.KindCall:
		ev.API = trace.API(le.Uint16(b[rOffAPI:]))
		ev.Result = trace.Result(result)
		ev.Handle, ev.Stream, ev.Aux, ev.Size, ev.Flags = handle, stream, aux, size, flags
	default:
		ev.Name = r.str(name)
		ev.Domain = r.str(uint32(aux))
		switch kind {
		case trace.KindRangeStart, trace.KindRangeEnd:
			ev.ID = handle
		case trace.KindObjectName:
			ev.Handle = handle
			ev.Object = trace.Object(object)
		case trace.KindCount:
			ev.Size = size
			ev.Domain = 0
		}
		if kind != trace.KindSpan && kind != trace.KindCapture {
			ev.End = ev.Start
		}
		ev.Caller = 0
	}
	return ev
}

func (r *ring) readThreads(n uint32) error {
	n = min(n, r.maxThreads)
	if n == 0 {
		return nil
	}
	buf := make([]byte, int(n)*slotSize)
	if _, err := r.f.ReadAt(buf, int64(r.threadsOff)); err != nil {
		return err
	}
	// Each slot is a thread of its own (threadID; each poll reads every
	// slot again, so the sums start over).
	clear(r.drops)
	clear(r.pyDrops)
	for i := 0; i < len(buf); i += slotSize {
		tid := le.Uint32(buf[i+sOffTID:])
		if tid == 0 {
			continue
		}
		tid = r.threadID(tid, uint32(i/slotSize))
		r.threads[tid] = cstring(buf[i+sOffName : i+sOffName+16])
		if d := le.Uint64(buf[i+sOffDrops:]); d > 0 {
			r.drops[tid] += d
		}
		if d := le.Uint32(buf[i+sOffPyDrops:]); d > 0 {
			r.pyDrops[tid] += uint64(d)
		}
	}
	return nil
}

// reusedTIDShift: a thread whose tid an earlier thread of its process had
// gets the id tid | k<<reusedTIDShift, k = 1, 2, ... (at most 1023): Linux's
// tids stay below 1<<22 (PID_MAX_LIMIT), so the low bits are the kernel's
// tid (docs/format.md).
const reusedTIDShift = 22

// threadID is the trace's id of the process's thread with kernel tid tid
// and shim serial serial: the tid for the first thread seen with it, the
// tid with the count of earlier ones above reusedTIDShift for the later
// ones, so that threads the kernel gave one tid stay apart.
func (r *ring) threadID(tid, serial uint32) uint32 {
	const low = 1<<reusedTIDShift - 1
	if id, ok := r.serials[serial]; ok && id&low == tid&low {
		return id
	}
	k := r.tidThreads[tid]
	r.tidThreads[tid] = k + 1
	id := tid
	if k > 0 && tid <= low {
		id = tid | min(k, 1<<(32-reusedTIDShift)-1)<<reusedTIDShift
	}
	r.serials[serial] = id
	r.newest[tid] = id
	return id
}

// threadOf is the trace's id of the newest thread seen with tid.
func (r *ring) threadOf(tid uint32) uint32 {
	if id, ok := r.newest[tid]; ok {
		return id
	}
	return tid
}

// totalDrops is every event this ring's process could not record.
func (r *ring) totalDrops() uint64 {
	n := r.overflow + r.pyCodeDrops + r.growDrops + r.stallDrops + r.nestedDrops + r.lostChildEvents
	for _, d := range r.drops {
		n += d
	}
	for _, d := range r.pyDrops {
		n += d
	}
	return n
}

// codeTable interns the code entries of every ring by content, so that
// processes share them; codes[0] is the zero entry.
type codeTable struct {
	ids   map[trace.Code]trace.CodeID
	codes []trace.Code
}

func newCodeTable() *codeTable {
	return &codeTable{ids: map[trace.Code]trace.CodeID{}, codes: []trace.Code{{}}}
}

func (ct *codeTable) id(c trace.Code) trace.CodeID {
	if id, ok := ct.ids[c]; ok {
		return id
	}
	id := trace.CodeID(len(ct.codes))
	ct.ids[c] = id
	ct.codes = append(ct.codes, c)
	return id
}

// parseCode decodes a code entry of the string area (cuprof_ring.h):
// "\0" KIND "\0" qualname "\0" module "\0" file "\0" line. Its strings go
// to st.
func parseCode(st *trace.StringTable, s []byte) (trace.Code, bool) {
	f := strings.Split(string(s[1:]), "\x00")
	if len(f) != 5 || len(f[0]) != 1 || f[1] == "" {
		return trace.Code{}, false
	}
	kind := trace.CodeKind(f[0][0] - '0')
	if !kind.Valid() {
		return trace.Code{}, false
	}
	line, err := strconv.ParseUint(f[4], 10, 32)
	if err != nil {
		line = 0
	}
	valid := func(s string) string { return strings.ToValidUTF8(s, "?") }
	return trace.Code{Kind: kind, Name: st.ID(valid(f[1])), Module: st.ID(valid(f[2])),
		File: st.ID(valid(f[3])), Line: uint32(line)}, true
}
