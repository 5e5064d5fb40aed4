package cudawrap

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
)

// Leak is an object created through cudawrap and not closed.
type Leak struct {
	Kind   string   // "stream", "event", "buffer", "pool", "context"
	Handle uint64   // the driver handle (or device address of a buffer)
	Seq    uint64   // creation order
	Stack  []string // "function file:line" frames of the creating call, innermost first
}

func (l Leak) String() string {
	s := fmt.Sprintf("%s %#x", l.Kind, l.Handle)
	for _, f := range l.Stack {
		s += "\n\t" + f
	}
	return s
}

// leakEntry is what a live object holds: removed from the registry on Close.
type leakEntry struct {
	kind   string
	handle uint64
	seq    uint64
	n      int
	pcs    [16]uintptr
}

type leakRegistry struct {
	stacks bool
	mu     sync.Mutex
	seq    uint64
	live   map[*leakEntry]struct{}
}

// add registers an object; skip is the number of cudawrap frames above the
// caller's (so that the stack starts at the user's call).
func (r *leakRegistry) add(kind string, handle uint64, skip int) *leakEntry {
	e := &leakEntry{kind: kind, handle: handle}
	if r.stacks {
		e.n = runtime.Callers(skip+2, e.pcs[:])
	}
	r.mu.Lock()
	if r.live == nil {
		r.live = map[*leakEntry]struct{}{}
	}
	r.seq++
	e.seq = r.seq
	r.live[e] = struct{}{}
	r.mu.Unlock()
	return e
}

func (r *leakRegistry) remove(e *leakEntry) {
	if e == nil {
		return
	}
	r.mu.Lock()
	delete(r.live, e)
	r.mu.Unlock()
}

func (r *leakRegistry) list() []Leak {
	r.mu.Lock()
	entries := make([]*leakEntry, 0, len(r.live))
	for e := range r.live {
		entries = append(entries, e)
	}
	r.mu.Unlock()
	sort.Slice(entries, func(i, j int) bool { return entries[i].seq < entries[j].seq })
	out := make([]Leak, 0, len(entries))
	for _, e := range entries {
		l := Leak{Kind: e.kind, Handle: e.handle, Seq: e.seq}
		frames := runtime.CallersFrames(e.pcs[:e.n])
		for {
			f, more := frames.Next()
			if f.Function != "" {
				l.Stack = append(l.Stack, fmt.Sprintf("%s %s:%d", f.Function, f.File, f.Line))
			}
			if !more {
				break
			}
		}
		out = append(out, l)
	}
	return out
}
