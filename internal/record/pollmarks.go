package record

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"syscall"
)

// A poll's records and the ring's read marks that say they were read
// cannot reach the disk in one write: the records go to the spill file,
// the marks to the ring. A recorder killed between the two left records
// in the spill file whose marks the ring never got, and `cuprof recover`
// read them twice (from the spill, and from the ring after its old
// marks). So each poll is spilled in three steps: its records are encoded
// into memory (pollWriter holds them), the marks they will bring about go
// to a small file beside the spill (ring-N.spill.marks) with the spill's
// size before the poll and the bytes the poll adds, then the records go
// to the spill file in one write, and only then the marks to the ring.
// Recover applies the marks file's marks where the spill file holds all of
// its poll's bytes: a recorder killed at any point leaves every record
// read once.
//
// The marks file, rewritten at each poll that read records:
//
//	u32 magic, u32 count, u64 spill size before the poll, u64 bytes the poll adds,
//	count x {u32 chunk, u32 generation, u64 read up to}, u32 CRC-32 (IEEE) of all before it
const (
	pollMarksMagic  = 0x4b4d5043 // "CPMK"
	pollMarksHeader = 24
	pollMarkSize    = 16
)

// pollWriter is what a spill file's trace.Writer writes to: the file, or,
// while a poll's records are being spilled (hold), memory. Its first error
// sticks, as the Writer's does.
type pollWriter struct {
	f       *os.File
	hold    bool
	buf     []byte
	batches []heldBatch // the batches in buf, in order
	err     error
}

// heldBatch is a batch of n events of thread tid in a pollWriter's
// buffer, which ends at end.
type heldBatch struct {
	end int
	tid uint32
	n   int
}

// batch notes that the last bytes held are a batch of n events of thread
// tid (with the tables written before it).
func (w *pollWriter) batch(tid uint32, n int) {
	w.batches = append(w.batches, heldBatch{end: len(w.buf), tid: tid, n: n})
}

func (w *pollWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.hold {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	n, err := w.f.Write(p)
	w.err = err
	return n, err
}

// pollMark is a chunk's read mark as a poll leaves it.
type pollMark struct {
	chunk, gen uint32
	to         uint64
}

// pollMarks is the spill's marks file and the encoding buffer of its
// record.
type pollMarks struct {
	f   *os.File
	buf []byte
}

// createPollMarks creates the marks file of the spill file at spillPath.
func createPollMarks(spillPath string) (*pollMarks, error) {
	f, err := os.OpenFile(spillPath+".marks", os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create a spill's marks file: %w", err)
	}
	return &pollMarks{f: f}, nil
}

// commit writes what w holds to its file after marks has said so; with
// nothing held it writes nothing. A failed write is w's sticky error; it
// returns the batches it did not write whole.
func (w *pollWriter) commit(pm *pollMarks, marks []pollMark) (lost []heldBatch, err error) {
	w.hold = false
	defer func() {
		if cap(w.buf) > maxPollBytes {
			w.buf = nil
		} else {
			w.buf = w.buf[:0]
		}
		w.batches = w.batches[:0]
	}()
	if w.err != nil {
		return w.batches, w.err
	}
	if len(w.buf) == 0 {
		return nil, nil
	}
	if pm != nil {
		// Without the marks (the file could not be written) the records
		// are still spilled: at worst recover reads them twice.
		if size, err := w.f.Seek(0, io.SeekCurrent); err == nil {
			pm.write(uint64(size), uint64(len(w.buf)), marks)
		}
	}
	var n int
	n, w.err = w.f.Write(w.buf)
	if w.err == nil {
		return nil, nil
	}
	for i, b := range w.batches {
		if b.end > n {
			return append([]heldBatch(nil), w.batches[i:]...), w.err
		}
	}
	return nil, w.err
}

// write replaces the marks file's record.
func (pm *pollMarks) write(before, adds uint64, marks []pollMark) error {
	b := pm.buf[:0]
	b = le.AppendUint32(b, pollMarksMagic)
	b = le.AppendUint32(b, uint32(len(marks)))
	b = le.AppendUint64(b, before)
	b = le.AppendUint64(b, adds)
	for _, m := range marks {
		b = le.AppendUint32(b, m.chunk)
		b = le.AppendUint32(b, m.gen)
		b = le.AppendUint64(b, m.to)
	}
	b = le.AppendUint32(b, crc32.ChecksumIEEE(b))
	pm.buf = b
	_, err := pm.f.WriteAt(b, 0)
	return err
}

// readPollMarks reads the marks of the last poll of the spill file at
// spillPath that reached it whole: none when the marks file is missing,
// damaged, or its poll's bytes are not all in the spill file.
func readPollMarks(spillPath string, maxChunks int) ([]pollMark, error) {
	f, err := os.OpenFile(spillPath+".marks", os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// A record of at most maxChunks marks: what a ring of that many
	// chunks can have; a larger file is not one.
	limit := int64(pollMarksHeader + maxChunks*pollMarkSize + 4)
	if !st.Mode().IsRegular() || st.Size() < pollMarksHeader+4 || st.Size() > limit {
		return nil, nil
	}
	b := make([]byte, st.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	if le.Uint32(b) != pollMarksMagic {
		return nil, nil
	}
	n := int(le.Uint32(b[4:]))
	end := pollMarksHeader + n*pollMarkSize
	if n > maxChunks || end+4 > len(b) || crc32.ChecksumIEEE(b[:end]) != le.Uint32(b[end:]) {
		return nil, nil // torn by a kill mid-write: its poll's records did not reach the spill
	}
	sp, err := os.Stat(spillPath)
	if err != nil {
		return nil, err
	}
	before, adds := le.Uint64(b[8:]), le.Uint64(b[16:])
	if adds > uint64(sp.Size()) || uint64(sp.Size())-adds < before {
		return nil, nil // the poll's write did not finish: its marks are not the spill's
	}
	marks := make([]pollMark, n)
	for i := range marks {
		m := b[pollMarksHeader+i*pollMarkSize:]
		marks[i] = pollMark{chunk: le.Uint32(m), gen: le.Uint32(m[4:]), to: le.Uint64(m[8:])}
	}
	return marks, nil
}

// applyPollMarks moves r's cursors to the marks of its spill's last
// whole poll where they are ahead of the ring's own.
func (r *ring) applyPollMarks(marks []pollMark) {
	for _, m := range marks {
		if int(m.chunk) >= len(r.cursors) {
			continue
		}
		cur := &r.cursors[m.chunk]
		if cur.gen == m.gen && uint64(cur.pos) < m.to {
			cur.pos = uint32(min(m.to, 1<<31))
		}
	}
}
