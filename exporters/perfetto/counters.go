package perfetto

import (
	"slices"
	"strconv"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// counters are the bytes-in-use counters, kept where the records are
// rendered (the pipe's renderer): the Writer hands over each change
// (pipe.delta) and the times its events begin at (pipe.tick), and the
// values of the counters that changed are written at each time before the
// next record, as the Writer wrote them where it ran (a tenth of the
// replay's goroutine's instructions, on the busier core).
type counters struct {
	mem     map[analysis.MemoryKey]*memCounter
	lastMem *memCounter // the one counter asked for last
	devs    map[devKey]*devCounter
	deltas  []delta // a heap
	dirty   []*memCounter
	dirtyD  []*devCounter
	flushed int64 // counter records are out up to here
}

// counter returns the bytes-in-use counter of k.
func (c *counters) counter(k analysis.MemoryKey, proc *track) *memCounter {
	if m := c.lastMem; m != nil && m.key == k {
		return m // most allocations are of the last one's device and pool
	}
	if m := c.mem[k]; m != nil {
		c.lastMem = m
		return m
	}
	dk := devKey{k.PID, k.Device, k.Kind}
	d := c.devs[dk]
	if d == nil {
		d = &devCounter{key: dk, proc: proc}
		c.devs[dk] = d
	}
	m := &memCounter{key: k, dev: d}
	c.mem[k] = m
	c.lastMem = m
	return m
}

// addDelta adds a change of m by bytes at t, order among those at t. It
// is stored in the heap field by field: a delta made and copied in stalled
// on store forwarding (4 % of the timeline's CPU profile at one
// instruction).
func (c *counters) addDelta(t int64, order int, m *memCounter, bytes int64) {
	if t < c.flushed {
		t = c.flushed // a time before what is out: broken clocks only
	}
	c.deltas = append(c.deltas, delta{})
	d := &c.deltas[len(c.deltas)-1]
	d.t, d.order, d.c, d.bytes = t, order, m, bytes
	heapUp(c.deltas, func(a, b delta) bool { return a.before(&b) })
}

// flushCounters writes the counters' values at the times before t: no
// change to come is earlier (allocations count from their create call's
// Start, end at the End of the call that ends them, and events come by
// Start).
func (p *pipe) flushCounters(t int64) {
	cs := &p.ctr
	for len(cs.deltas) > 0 && cs.deltas[0].t < t {
		at := cs.deltas[0].t
		for len(cs.deltas) > 0 && cs.deltas[0].t == at {
			d := heapPop(&cs.deltas, func(a, b delta) bool { return a.before(&b) })
			c := d.c
			old := c.cur
			c.cur = max(c.cur+d.bytes, 0)
			c.dev.sum += c.cur - old
			if !c.dirty {
				c.dirty = true
				cs.dirty = append(cs.dirty, c)
			}
			if !c.dev.dirty {
				c.dev.dirty = true
				cs.dirtyD = append(cs.dirtyD, c.dev)
			}
		}
		cs.flushed = at
		p.samples(at)
	}
}

// samples writes the values of the counters that changed at t: per device
// and kind the sum of its pools, and each pool's own.
func (p *pipe) samples(t int64) {
	cs := &p.ctr
	if len(cs.dirtyD) > 1 {
		slices.SortFunc(cs.dirtyD, func(a, b *devCounter) int { return devCmp(a.key, b.key) })
	}
	for _, d := range cs.dirtyD {
		d.dirty = false
		if d.tr == nil {
			dev := "device " + strconv.Itoa(int(d.key.dev))
			if d.key.dev == trace.NoDevice {
				dev = "unknown device"
			}
			what := map[trace.Object]string{trace.ObjectAllocation: "memory",
				trace.ObjectHostAllocation: "pinned host memory", trace.ObjectManagedAllocation: "managed memory",
				trace.ObjectMapping: "mapped memory"}[d.key.kind]
			d.tr = p.counterTrack(d.proc, dev+" "+what+" bytes in use", 2_000_000)
		}
		p.out.counter(t, d.tr, d.sum)
	}
	cs.dirtyD = cs.dirtyD[:0]
	if len(cs.dirty) > 1 {
		slices.SortFunc(cs.dirty, func(a, b *memCounter) int { return memCmp(a.key, b.key) })
	}
	for _, c := range cs.dirty {
		c.dirty = false
		k := c.key
		if k.Pool == 0 && !k.DefaultPool {
			continue
		}
		if c.tr == nil {
			name := "pool 0x" + strconv.FormatUint(k.Pool, 16) + " bytes in use"
			if k.Pool == 0 {
				name = "device " + strconv.Itoa(int(k.Device)) + " default pool bytes in use"
			}
			c.tr = p.counterTrack(c.dev.proc, name, 2_000_100)
		}
		p.out.counter(t, c.tr, c.cur)
	}
	cs.dirty = cs.dirty[:0]
}

func devCmp(a, b devKey) int {
	switch {
	case a.pid != b.pid:
		return cmpU(a.pid < b.pid)
	case a.dev != b.dev:
		return cmpU(a.dev < b.dev)
	case a.kind != b.kind:
		return cmpU(a.kind < b.kind)
	}
	return 0
}

// memCmp orders keys as analysis.BytesInUse does: by process, device and
// kind, the default pool first, then by pool.
func memCmp(a, b analysis.MemoryKey) int {
	if c := devCmp(devKey{a.PID, a.Device, a.Kind}, devKey{b.PID, b.Device, b.Kind}); c != 0 {
		return c
	}
	if a.DefaultPool != b.DefaultPool {
		return cmpU(a.DefaultPool)
	}
	if a.Pool != b.Pool {
		return cmpU(a.Pool < b.Pool)
	}
	return 0
}

func cmpU(less bool) int {
	if less {
		return -1
	}
	return 1
}

// counterTrack declares a counter track of the process proc.
func (p *pipe) counterTrack(proc *track, name string, order int) *track {
	tr := &track{up: proc, kind: trackCounter, name: name, pid: proc.pid, order: order}
	p.number(tr)
	p.out.declare(tr)
	return tr
}
