package output

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Direct has a new file (one written to a temporary file and renamed) written
// with direct I/O where its file system takes it: the bytes go to the device
// from a buffer of the process, through O_DIRECT, instead of being copied into
// the page cache and written back at Commit's sync. For outputs of hundreds of
// megabytes, whose bytes are not read back: on the benchmark VM the kernel's
// cost of taking 1.2 GB through the page cache varied from 0.24 to 3.5 s of
// system time within minutes (dd), and was 0.13 s with O_DIRECT. A file system
// that refuses the flag, or a write with it, gets the same bytes written the
// ordinary way.
func Direct() Option { return optionFunc(func(c *config) { c.direct = true }) }

const (
	// directBuffer is what a direct output gathers before each write: a
	// multiple of every logical block size (at most the 4 KiB page).
	directBuffer = 4 << 20

	// directPage is the alignment of what is written from the caller's
	// memory (its address and length): the page, a multiple of every
	// logical block size.
	directPage = 4 << 10
)

// directWriter gathers an output's bytes in a page-aligned buffer and writes
// it whole, at offsets that are multiples of its size; the last, partial
// buffer is written with O_DIRECT cleared.
type directWriter struct {
	f   *os.File
	buf []byte // mapped: page-aligned
	n   int
	on  bool // O_DIRECT is set on f
}

// newDirect sets O_DIRECT on f and returns its writer, or nil where the file
// system does not take it.
func newDirect(f *os.File) *directWriter {
	if setDirect(f, true) != nil {
		return nil
	}
	buf, err := unix.Mmap(-1, 0, directBuffer, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		setDirect(f, false)
		return nil
	}
	return &directWriter{f: f, buf: buf, on: true}
}

func setDirect(f *os.File, on bool) error {
	fd := int(f.Fd())
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if on {
		fl |= unix.O_DIRECT
	} else {
		fl &^= unix.O_DIRECT
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl)
	return err
}

// Write gathers p in the buffer, except that a p that starts page-aligned
// in memory while the buffer is empty has its whole pages written from
// where it is: a writer of aligned blocks (exporters/perfetto's) has its
// bytes go to the device without a copy.
func (d *directWriter) Write(p []byte) (int, error) {
	done := 0
	if d.n == 0 && d.on && len(p) >= directPage && aligned(p, directPage) {
		done = len(p) &^ (directPage - 1)
		if err := d.write(p[:done]); err != nil {
			return 0, err
		}
	}
	for done < len(p) {
		c := copy(d.buf[d.n:], p[done:])
		d.n += c
		done += c
		if d.n == len(d.buf) {
			if err := d.flush(); err != nil {
				return done, err
			}
		}
	}
	return done, nil
}

// flush writes the buffer.
func (d *directWriter) flush() error {
	err := d.write(d.buf[:d.n])
	d.n = 0
	return err
}

// write writes b, whole pages while O_DIRECT is on. A write O_DIRECT makes
// fail (EINVAL: a file system that took the flag and not the I/O) is
// finished without it.
func (d *directWriter) write(b []byte) error {
	n, err := d.f.Write(b)
	if err != nil && d.on && errors.Is(err, unix.EINVAL) {
		d.on = false
		if err = setDirect(d.f, false); err == nil {
			_, err = d.f.Write(b[n:])
		}
	}
	return err
}

// finish writes what is buffered, without O_DIRECT (its length need not be
// a multiple of a block), and lets the buffer go.
func (d *directWriter) finish() error {
	var err error
	if d.n > 0 {
		if d.on {
			d.on = false
			err = setDirect(d.f, false)
		}
		if err == nil {
			err = d.flush()
		}
	}
	d.release()
	return err
}

func (d *directWriter) release() {
	if d.buf != nil {
		unix.Munmap(d.buf)
		d.buf = nil
	}
}
