package analysis

// objMap maps (process, object kind, handle) to V. It is a map[objectKey]V
// split by process and kind into maps keyed by the handle alone: the
// replay looks objects up several times a call, and a map of uint64 keys
// hashes in a fraction of the time of the 16-byte struct key (with its
// padding, hashed piecewise). The last process looked up is remembered, as
// traces are mostly one process. The zero value is empty and ready to use.
type objMap[V any] struct {
	n       int // entries
	lastPID uint32
	last    *kindMaps[V] // the maps of lastPID, nil before the first set
	procs   map[uint32]*kindMaps[V]
}

// kindMaps are one process's handles, by object kind (a trace.Object,
// uint8, indexes it).
type kindMaps[V any] [1 << 8]map[uint64]V

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
	km := m.kinds(k.pid)
	if km == nil {
		var zero V
		return zero, false
	}
	v, ok := km[k.kind][k.handle]
	return v, ok
}

func (m *objMap[V]) set(k objectKey, v V) {
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
}

func (m *objMap[V]) del(k objectKey) {
	if m.n == 0 {
		return
	}
	km := m.kinds(k.pid)
	if km == nil {
		return
	}
	h := km[k.kind]
	n := len(h)
	delete(h, k.handle)
	m.n -= n - len(h)
}
