package analysis

// objMap maps (process, object kind, handle) to V. It is a map[objectKey]V
// split by process and kind into maps keyed by the handle alone: the
// replay looks objects up several times a call, and a map of uint64 keys
// hashes in a fraction of the time of the 16-byte struct key (with its
// padding, hashed piecewise). The last process looked up is remembered, as
// traces are mostly one process, and per kind the last key looked up, set
// or deleted with its answer, as calls name the same stream, context or
// allocation again and again. The zero value is empty and ready to use.
type objMap[V any] struct {
	n       int // entries
	lastPID uint32
	last    *kindMaps[V] // the maps of lastPID, nil before the first set
	procs   map[uint32]*kindMaps[V]
	hits    [kindSlots]lastHit[V]
	other   map[objectKey]V // kinds of kindSlots and above (none in the API table)
}

// kindSlots is how many object kinds have maps of their own, more than
// the API table has (trace.Objects).
const kindSlots = 32

// kindMaps are one process's handles, by object kind.
type kindMaps[V any] [kindSlots]map[uint64]V

// lastHit is the answer for one key of its kind: its value and whether it
// is in the map (valid is false before any).
type lastHit[V any] struct {
	pid       uint32
	ok, valid bool
	h         uint64
	v         V
}

// kinds returns the maps of process pid, nil when it has none.
func (m *objMap[V]) kinds(pid uint32) *kindMaps[V] {
	if m.last != nil && m.lastPID == pid {
		return m.last
	}
	km := m.procs[pid]
	if km != nil {
		m.last, m.lastPID = km, pid
	}
	return km
}

func (m *objMap[V]) get(k objectKey) (V, bool) {
	if m.n == 0 {
		var zero V
		return zero, false
	}
	if k.kind >= kindSlots {
		v, ok := m.other[k]
		return v, ok
	}
	c := &m.hits[k.kind]
	if c.valid && c.h == k.handle && c.pid == k.pid {
		return c.v, c.ok
	}
	var v V
	var ok bool
	if km := m.kinds(k.pid); km != nil {
		v, ok = km[k.kind][k.handle]
	}
	*c = lastHit[V]{pid: k.pid, h: k.handle, v: v, ok: ok, valid: true}
	return v, ok
}

func (m *objMap[V]) set(k objectKey, v V) {
	if k.kind >= kindSlots {
		if m.other == nil {
			m.other = map[objectKey]V{}
		}
		n := len(m.other)
		m.other[k] = v
		m.n += len(m.other) - n
		return
	}
	km := m.kinds(k.pid)
	if km == nil {
		if m.procs == nil {
			m.procs = map[uint32]*kindMaps[V]{}
		}
		km = new(kindMaps[V])
		m.procs[k.pid] = km
		m.last, m.lastPID = km, k.pid
	}
	h := km[k.kind]
	if h == nil {
		h = map[uint64]V{}
		km[k.kind] = h
	}
	n := len(h)
	h[k.handle] = v
	m.n += len(h) - n
	m.hits[k.kind] = lastHit[V]{pid: k.pid, h: k.handle, v: v, ok: true, valid: true}
}

func (m *objMap[V]) del(k objectKey) {
	if m.n == 0 {
		return
	}
	if k.kind >= kindSlots {
		n := len(m.other)
		delete(m.other, k)
		m.n -= n - len(m.other)
		return
	}
	m.hits[k.kind] = lastHit[V]{pid: k.pid, h: k.handle, valid: true}
	km := m.kinds(k.pid)
	if km == nil {
		return
	}
	h := km[k.kind]
	n := len(h)
	delete(h, k.handle)
	m.n -= n - len(h)
}
