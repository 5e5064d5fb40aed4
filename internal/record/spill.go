package record

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Spill files. The drainer does not keep the records it reads in memory: it
// appends them, still raw (struct cuprof_rec, ring clock ticks), to one spill
// file per ring in a private directory beside the output, and the trace is
// written from those files once the run is over and the clock calibrated.
// A spill file is a sequence of segments, each the records one thread
// committed to one chunk since the last poll:
//
//	tid uint32, count uint32, count records of recSize bytes
//
// A poll reads the chunks in the order of their first new record's end
// time, so each thread's segments follow each other in time.

// spillHdrSize is the size of a segment header.
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
	buf  []byte // segments as the spill file has them
	segs []segment
	pend []pendingRead // ring.poll's list
	// observe, when set, gets the segments of every write (records in buf).
	observe func(r *ring, segs []segment, buf []byte)
}

// createSpill creates r's spill file in dir.
func createSpill(dir string, r *ring, n int) error {
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("ring-%d.spill", n)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create a spill file: %w", err)
	}
	r.spill = f
	return nil
}

// begin starts a poll of r.
func (sp *spiller) begin(r *ring) {
	sp.r = r
	sp.buf, sp.segs = sp.buf[:0], sp.segs[:0]
}

// segment returns room for n records of thread tid, to be filled before the
// next call. What was gathered is written first when the buffer is full.
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

// flush appends the gathered segments to the spill file.
func (sp *spiller) flush() error {
	if len(sp.segs) == 0 {
		return nil
	}
	if _, err := sp.r.spill.Write(sp.buf); err != nil {
		return fmt.Errorf("write the spill file: %w (free some space beside the output file)", err)
	}
	if sp.observe != nil {
		sp.observe(sp.r, sp.segs, sp.buf)
	}
	sp.buf, sp.segs = sp.buf[:0], sp.segs[:0]
	if cap(sp.buf) > maxPollBytes { // one huge chunk: do not keep its buffer
		sp.buf = nil
	}
	return nil
}

// spillBlock is how many records replay hands over at a time.
const spillBlock = 1024

// replay reads r's spill file from the start and calls fn with its records
// in file order, at most spillBlock at a time, all of thread tid.
func (r *ring) replay(fn func(tid uint32, recs []byte) error) error {
	if r.spill == nil {
		return nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r.spill, 0, 1<<62), 1<<20)
	var hdr [spillHdrSize]byte
	buf := make([]byte, spillBlock*recSize)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read the spill file: %w", err)
		}
		tid, n := le.Uint32(hdr[:]), int(le.Uint32(hdr[4:]))
		for n > 0 {
			k := min(n, spillBlock)
			b := buf[:k*recSize]
			if _, err := io.ReadFull(br, b); err != nil {
				return fmt.Errorf("read the spill file: %w", err)
			}
			if err := fn(tid, b); err != nil {
				return err
			}
			n -= k
		}
	}
}
