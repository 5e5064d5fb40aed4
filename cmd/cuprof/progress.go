package main

import (
	"fmt"
	"iter"
	"os"
	"time"

	"github.com/cuprof/cuprof/trace"
)

// The commands that read a trace draw a progress line on stderr, in record's
// style, when stderr is a terminal and the reading has taken longer than
// progressAfter: "cuprof: report: 41% of 5000000 events (2.6M/s), 3s". It is
// redrawn a few times a second over itself and cleared when the reading
// ends, so it never stays in the output; with stderr not a terminal nothing
// is drawn.

// progressAfter is how long a read runs before its progress is drawn; a
// variable for tests.
var progressAfter = 2 * time.Second

// progressEvery is how many events pass between looks at the clock.
const progressEvery = 1 << 16

// readProgress counts the events a command reads and draws its progress.
type readProgress struct {
	tty   *os.File
	name  string
	total int64 // events in a pass
	multi bool  // several passes: say which
	start time.Time
	next  time.Time // when to draw next
	n     int64     // events read in all passes
	drawn bool
}

// newReadProgress returns the progress of command name reading total
// events, in several passes when multi, or nil when stderr is not a
// terminal or stdout is the same terminal and streamed (the line would
// be drawn inside the output).
func newReadProgress(g *globalOptions, name string, total int64, multi, streamsStdout bool) *readProgress {
	tty, ok := g.stderr.(*os.File)
	if !ok || !isTerminal(tty) || total <= 0 || streamsStdout && sameTerminal(g.stdout, tty) {
		return nil
	}
	now := time.Now()
	return &readProgress{tty: tty, name: name, total: total, multi: multi, start: now, next: now.Add(progressAfter)}
}

// eventRead, when set (by the memory tests), is called after each event a
// command reads from a trace through its progress line, so that a test can
// look at the heap at counted points of the replay.
var eventRead func()

// wrap counts the events of seq as they are read.
func (p *readProgress) wrap(seq iter.Seq[*trace.Event]) iter.Seq[*trace.Event] {
	if hook := eventRead; hook != nil {
		inner := seq
		seq = func(yield func(*trace.Event) bool) {
			for e := range inner {
				if !yield(e) {
					return
				}
				hook()
			}
		}
	}
	if p == nil {
		return seq
	}
	return func(yield func(*trace.Event) bool) {
		k := 0
		for e := range seq {
			if k++; k == progressEvery {
				p.step(int64(k))
				k = 0
			}
			if !yield(e) {
				break
			}
		}
		p.n += int64(k)
	}
}

func (p *readProgress) step(k int64) {
	p.n += k
	now := time.Now()
	if now.Before(p.next) {
		return
	}
	p.next = now.Add(250 * time.Millisecond)
	el := now.Sub(p.start)
	pass := ""
	if p.multi {
		pass = fmt.Sprintf("pass %d, ", p.n/p.total+1)
	}
	line := fmt.Sprintf("cuprof: %s: %s%d%% of %d events (%s/s), %s", p.name, pass, 100*(p.n%p.total)/p.total, p.total,
		humanRate(float64(p.n)/el.Seconds()), el.Round(time.Second))
	if w := termWidth(p.tty); w > 1 && len(line) >= w {
		line = line[:w-1] // a wrapped line could not be cleared
	}
	p.tty.WriteString("\r\033[K" + line)
	p.drawn = true
}

// done clears the progress line.
func (p *readProgress) done() {
	if p != nil && p.drawn {
		p.tty.WriteString("\r\033[K")
		p.drawn = false
	}
}

// humanRate writes an events-per-second rate the way record's status does.
func humanRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}
