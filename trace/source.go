package trace

import (
	"errors"
	"fmt"
	"io"
)

// source is where the bytes of a binary trace come from: a byte slice held
// in memory, or a file read with positioned reads (no mmap), so that a
// trace much larger than memory can be streamed.
type source interface {
	// size is the number of bytes in the trace.
	size() int64
	// bytes returns the n bytes at off, fewer where the data ends. The slice
	// is valid until the next call of bytes.
	bytes(off int64, n int) ([]byte, error)
	// payload returns the n bytes at off, in buf (grown when too small) or
	// as a view of data that never changes. It may be called concurrently
	// with other payload calls, never with bytes.
	payload(buf []byte, off int64, n int) ([]byte, error)
}

// memSource is a trace held in memory.
type memSource []byte

func (s memSource) size() int64 { return int64(len(s)) }

func (s memSource) bytes(off int64, n int) ([]byte, error) {
	end := min(off+int64(n), int64(len(s)))
	return s[off:end], nil
}

func (s memSource) payload(_ []byte, off int64, n int) ([]byte, error) {
	if off+int64(n) > int64(len(s)) {
		return nil, io.ErrUnexpectedEOF
	}
	return s[off : off+int64(n) : off+int64(n)], nil
}

// fileSource reads a trace with ReadAt. bytes serves sequential scans from a
// read-ahead window of at least windowSize bytes.
type fileSource struct {
	r      io.ReaderAt
	n      int64
	win    []byte
	winOff int64
}

const windowSize = 1 << 20

func (s *fileSource) size() int64 { return s.n }

func (s *fileSource) bytes(off int64, n int) ([]byte, error) {
	end := min(off+int64(n), s.n)
	if off >= s.winOff && end <= s.winOff+int64(len(s.win)) {
		return s.win[off-s.winOff : end-s.winOff], nil
	}
	want := int(min(int64(max(n, windowSize)), s.n-off))
	if cap(s.win) < want {
		s.win = make([]byte, want)
	}
	s.win = s.win[:want]
	if err := readFull(s.r, s.win, off); err != nil {
		s.win = s.win[:0]
		return nil, err
	}
	s.winOff = off
	return s.win[:end-off], nil
}

func (s *fileSource) payload(buf []byte, off int64, n int) ([]byte, error) {
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if err := readFull(s.r, buf, off); err != nil {
		return nil, err
	}
	return buf, nil
}

// readFull fills p from r at off; an io.EOF with p filled is no error.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read trace at byte offset %d: %w", off, err)
}
