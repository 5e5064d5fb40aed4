package analysis

import (
	"math/bits"
	"math/rand/v2"
)

// objMap maps (process, object kind, handle) to V. It is a map[objectKey]V
// split by process and kind into maps keyed by the handle alone: the
// replay looks objects up several times a call, and a map of uint64 keys
// hashes in a fraction of the time of the 16-byte struct key (with its
// padding, hashed piecewise). The last process looked up is remembered, as
// traces are mostly one process, and per kind the last key looked up, set
// or deleted with its answer, as calls name the same stream, context or
// allocation again and again. The handle maps are handleTables, not Go
// maps: streams and allocations are created and destroyed once a loop
// iteration, and the map's insert and delete with memhash64 were a tenth of
// report. The zero value is empty and ready to use.
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
type kindMaps[V any] [kindSlots]*handleTable[V]

// lastHit is the answer for one key of its kind: its value and whether it
// is in the map. The zero value answers for the zero key, absent, as the
// empty map does: no flag tells an unused one apart, and a key with a kind
// of kindSlots or more is never remembered, so that get's check is one
// comparison of keys.
type lastHit[V any] struct {
	k  objectKey
	ok bool
	v  V
}

// remember makes k the key of c, with answer v, ok. Written field by
// field: a lastHit literal, built on the stack and copied in with two
// overlapping 16-byte moves, stalled on store forwarding (two thirds of
// set's own time in the replay's profile).
func (c *lastHit[V]) remember(k objectKey, v V, ok bool) {
	c.k.pid, c.k.kind, c.k.handle, c.v, c.ok = k.pid, k.kind, k.handle, v, ok
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

// get returns the value of k and whether k is in the map: the kind's last
// hit when it is k's (most lookups end there, on one comparison of keys),
// else lookup's.
func (m *objMap[V]) get(k objectKey) (V, bool) {
	if c := &m.hits[k.kind%kindSlots]; c.k == k {
		return c.v, c.ok
	}
	return m.lookup(k)
}

// lookup is get past the last hit: the handle table's answer, which
// becomes the kind's last hit (a kind of kindSlots or more is in m.other
// and never remembered).
func (m *objMap[V]) lookup(k objectKey) (V, bool) {
	if m.n == 0 {
		var zero V
		return zero, false
	}
	if k.kind >= kindSlots {
		v, ok := m.other[k]
		return v, ok
	}
	var v V
	var ok bool
	if km := m.kinds(k.pid); km != nil && km[k.kind] != nil {
		v, ok = km[k.kind].get(k.handle)
	}
	m.hits[k.kind].remember(k, v, ok)
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
		h = &handleTable[V]{}
		km[k.kind] = h
	}
	if h.set(k.handle, v) {
		m.n++
	}
	m.hits[k.kind].remember(k, v, true)
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
	var zero V
	m.hits[k.kind].remember(k, zero, false)
	km := m.kinds(k.pid)
	if km == nil {
		return
	}
	if h := km[k.kind]; h != nil && h.del(k.handle) {
		m.n--
	}
}

// handleTable maps handles to V: open addressing, probed linearly from a
// seeded multiplicative hash of the handle (its top bits), at most half full, deleting by shifting the entries after
// the hole back (no tombstones, so that a table of streams made and
// destroyed forever stays short). Handle 0 marks an empty slot and is kept
// on its own. The zero value is empty and ready to use.
type handleTable[V any] struct {
	keys  []uint64
	vals  []V
	n     int  // entries in keys
	shift uint // 64 - log2(len(keys))
	zero  bool // handle 0 is in the table, with value zeroV
	zeroV V
}

// handleSeed is mixed into every handle's hash, so that a hostile trace
// cannot choose handles whose probes all collide (Go's maps seed their
// hashes for the same reason); nothing depends on the table's layout.
var handleSeed = rand.Uint64() | 1

// home is the slot a handle's probe starts at.
func (t *handleTable[V]) home(h uint64) int {
	h = (h ^ handleSeed) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	return int((h * 0xbf58476d1ce4e5b9) >> t.shift)
}

func (t *handleTable[V]) get(h uint64) (V, bool) {
	if h == 0 {
		return t.zeroV, t.zero
	}
	if t.n > 0 {
		mask := len(t.keys) - 1
		for i := t.home(h); ; i = (i + 1) & mask {
			switch t.keys[i] {
			case h:
				return t.vals[i], true
			case 0:
				var zero V
				return zero, false
			}
		}
	}
	var zero V
	return zero, false
}

// set maps h to v and reports whether h was not in the table before.
func (t *handleTable[V]) set(h uint64, v V) bool {
	if h == 0 {
		added := !t.zero
		t.zero, t.zeroV = true, v
		return added
	}
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := len(t.keys) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		switch t.keys[i] {
		case h:
			t.vals[i] = v
			return false
		case 0:
			t.keys[i], t.vals[i] = h, v
			t.n++
			return true
		}
	}
}

// del removes h and reports whether it was in the table.
func (t *handleTable[V]) del(h uint64) bool {
	var zero V
	if h == 0 {
		was := t.zero
		t.zero, t.zeroV = false, zero
		return was
	}
	if t.n == 0 {
		return false
	}
	mask := len(t.keys) - 1
	i := t.home(h)
	for ; t.keys[i] != h; i = (i + 1) & mask {
		if t.keys[i] == 0 {
			return false
		}
	}
	// Shift back each entry after the hole whose probe passes the hole
	// (its home is not cyclically in (i, j]).
	for j := (i + 1) & mask; t.keys[j] != 0; j = (j + 1) & mask {
		if k := t.home(t.keys[j]); (j-k)&mask >= (j-i)&mask {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.keys[i], t.vals[i] = 0, zero
	t.n--
	return true
}

// grow doubles the table (16 slots at first) and places every entry again.
func (t *handleTable[V]) grow() {
	keys, vals := t.keys, t.vals
	size := max(16, 2*len(keys))
	t.keys, t.vals = make([]uint64, size), make([]V, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := size - 1
	for o, h := range keys {
		if h == 0 {
			continue
		}
		i := t.home(h)
		for t.keys[i] != 0 {
			i = (i + 1) & mask
		}
		t.keys[i], t.vals[i] = h, vals[o]
	}
}
