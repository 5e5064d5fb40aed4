package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/cuprof/cuprof/internal/record"
)

// The live status line of cuprof record follows nsys and py-spy: one line
// when the recording starts, a summary when it ends, and nothing drawn over
// the program's own output. The line is drawn only when stderr is a
// terminal and the program's stdout and stderr are not that terminal, or
// with --progress. With --progress and a shared terminal the program's
// output goes through a pseudo-terminal cuprof reads (so the program still
// sees a terminal): the status is drawn only when the program's cursor is
// at the start of a line, and cleared before any byte of the program's is
// written.

// statusLine draws record's progress on a terminal.
type statusLine struct {
	tty *os.File // cuprof's stderr, a terminal

	mu      sync.Mutex
	drawn   bool // a status is on the screen
	lineEnd bool // the program's last byte ended a line (or it wrote none)
	closed  bool

	// through the pseudo-terminal (--progress on a shared terminal)
	master, slave *os.File
	copied        chan struct{}
	winch         chan os.Signal
}

// startStatus decides whether and how record draws a status line, and
// returns the program's stdout and stderr (a pseudo-terminal in their
// place when it is needed). nil means no status line.
func startStatus(g *globalOptions, progress bool) (s *statusLine, stdout, stderr io.Writer) {
	stdout, stderr = g.stdout, g.stderr
	tty, ok := g.stderr.(*os.File)
	if !ok || !isTerminal(tty) {
		return nil, stdout, stderr // quiet when stderr is not a terminal
	}
	outShared, errShared := sameTerminal(g.stdout, tty), sameTerminal(g.stderr, tty)
	s = &statusLine{tty: tty, lineEnd: true}
	if !outShared && !errShared {
		return s, stdout, stderr
	}
	if !progress {
		return nil, stdout, stderr
	}
	if err := s.openPTY(); err != nil {
		fmt.Fprintf(g.stderr, "cuprof: no status line (%v)\n", err)
		return nil, stdout, stderr
	}
	if outShared {
		stdout = s.slave
	}
	if errShared {
		stderr = s.slave
	}
	return s, stdout, stderr
}

// update draws p, when that covers nothing of the program's.
func (s *statusLine) update(p record.Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.lineEnd {
		return
	}
	line := p.String()
	if w := termWidth(s.tty); w > 1 && len(line) >= w {
		line = line[:w-1] // a wrapped line could not be cleared
	}
	s.tty.WriteString("\r\033[K" + line)
	s.drawn = true
}

// clear removes the status from the screen; s.mu is held.
func (s *statusLine) clear() {
	if s.drawn {
		s.tty.WriteString("\r\033[K")
		s.drawn = false
	}
}

// programClosed is called once the program has exited: what it wrote to the
// pseudo-terminal is copied out, and the status cleared for good.
func (s *statusLine) close() {
	if s == nil {
		return
	}
	if s.master != nil {
		s.slave.Close() // the program's copies close with it
		select {
		case <-s.copied:
		case <-time.After(2 * time.Second): // a child kept the terminal open
		}
		signal.Stop(s.winch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.closed = true
}

// openPTY makes the pseudo-terminal the program writes to, sized and set up
// like the real one, and starts copying from it.
func (s *statusLine) openPTY() error {
	m, sl, err := newPTY()
	if err != nil {
		return err
	}
	// The real terminal's settings, without output processing: the bytes
	// the program writes reach the real terminal, which processes them as
	// if the program had written there.
	if t, err := unix.IoctlGetTermios(int(s.tty.Fd()), unix.TCGETS); err == nil {
		t.Oflag &^= unix.OPOST
		unix.IoctlSetTermios(int(sl.Fd()), unix.TCSETS, t)
	}
	s.master, s.slave = m, sl
	s.resize()
	s.winch = make(chan os.Signal, 1)
	signal.Notify(s.winch, syscall.SIGWINCH)
	go func() {
		for range s.winch {
			s.resize()
		}
	}()
	s.copied = make(chan struct{})
	go s.copy()
	return nil
}

// newPTY opens a pseudo-terminal pair.
func newPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open a pseudo-terminal: %w", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlock the pseudo-terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("name the pseudo-terminal: %w", err)
	}
	sl, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("open the pseudo-terminal: %w", err)
	}
	return m, sl, nil
}

func (s *statusLine) resize() {
	if ws, err := unix.IoctlGetWinsize(int(s.tty.Fd()), unix.TIOCGWINSZ); err == nil {
		unix.IoctlSetWinsize(int(s.slave.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// copy writes what the program writes to the real terminal, clearing the
// status first.
func (s *statusLine) copy() {
	defer close(s.copied)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.master.Read(buf)
		if n > 0 {
			s.mu.Lock()
			s.clear()
			s.tty.Write(buf[:n])
			s.lineEnd = bytes.HasSuffix(buf[:n], []byte("\n"))
			s.mu.Unlock()
		}
		if err != nil {
			// EIO: every copy of the slave is closed.
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) && !errors.Is(err, io.EOF) {
				fmt.Fprintf(s.tty, "cuprof: reading the program's output: %v\n", err)
			}
			s.master.Close()
			return
		}
	}
}

// isTerminal reports whether f is a terminal (golang.org/x/term). Making
// the pseudo-terminal and copying the real terminal's settings to it
// (openPTY, newPTY) stay on x/sys/unix: x/term has no pseudo-terminals and
// no way to copy one terminal's termios to another.
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// sameTerminal reports whether w is the terminal tty (the same device).
func sameTerminal(w io.Writer, tty *os.File) bool {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return false
	}
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Fstat(int(tty.Fd()), &b) != nil {
		return true // a terminal we cannot tell apart: assume the worst
	}
	return a.Rdev == b.Rdev
}

func termWidth(f *os.File) int {
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return w
}
