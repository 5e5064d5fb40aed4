package trace

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"sync/atomic"
)

// The event merge: every batch is a sorted run (the writer sorts each one),
// so the trace in SortEvents order is a k-way merge of its batches. A batch
// is opened, its payload read and decoded a few events at a time, only when
// its base time (a lower bound of its first event) comes up in the merge,
// and let go of when its last event has been merged. Only the open batches
// are in memory: those whose time span covers the merge's current time.
//
// For a file of this package's writers that is about one batch per thread,
// plus one per event written long after it started (a span or frame written
// at its end with a Start before the events of the batches around it: its
// batch opens at that Start). docs/format.md ("Reading as a stream") states
// the bound.

// mergeChunk is how many events an open batch decodes ahead: small enough
// that every open batch's buffer stays in cache.
const mergeChunk = 64

// mergeKey is the sort key of a merge candidate, kept in the heap so that
// comparisons touch no event. Events of different batches with equal Start,
// End and rank go in thread order (by PID, then TID), then in file order.
type mergeKey struct {
	start, end int64
	rank       uint8 // kindRank+1 for events, 0 for a batch not yet open
	thread     int32
	seq        int32
}

// keyOf is the key of e, an event of batch b.
func keyOf(e *Event, b *batchRef) mergeKey {
	return mergeKey{start: e.Start, end: e.End, rank: kindRank(e.Kind) + 1, thread: b.thread, seq: b.seq}
}

// openKey is the key of batch b before it is opened: it goes before every
// event the batch can hold.
func openKey(b *batchRef) mergeKey {
	return mergeKey{start: b.base, end: math.MaxInt64, rank: 0, thread: b.thread, seq: b.seq}
}

// before is SortEvents' order on keys, then thread and file order.
func (a *mergeKey) before(b *mergeKey) bool {
	if a.start != b.start {
		return a.start < b.start
	}
	if a.end != b.end {
		return a.end > b.end
	}
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.thread != b.thread {
		return a.thread < b.thread
	}
	return a.seq < b.seq
}

// keyBefore is mergeKey{start, end, rank, thread, seq}.before(b), without
// the key.
func keyBefore(start, end int64, rank uint8, thread, seq int32, b *mergeKey) bool {
	if start != b.start {
		return start < b.start
	}
	if end != b.end {
		return end > b.end
	}
	if rank != b.rank {
		return rank < b.rank
	}
	if thread != b.thread {
		return thread < b.thread
	}
	return seq < b.seq
}

// inOrder reports whether prev and next, two keys of one batch, are in order.
func inOrder(prev, next *mergeKey) bool {
	if prev.start != next.start {
		return prev.start < next.start
	}
	if prev.end != next.end {
		return prev.end > next.end
	}
	return prev.rank <= next.rank
}

// openBatch is a batch being merged.
type openBatch struct {
	ref *batchRef
	raw []byte // payload buffer, kept for the next batch opened in this slot
	dec batchDecoder
	buf []Event // decoded, not yet merged: buf[pos:]
	pos int
}

// eventMerger yields the events of a scanned binary trace in SortEvents
// order. Its candidates are the leaves of a tournament tree: one per open
// batch, one (feed) for the next batch to open, the others done (kept on a
// free list). Opening a batch turns the feed's leaf into the batch's and
// puts the feed on a free leaf; closing one frees its leaf: each replays
// one leaf's path, log2(leaves) matches, however many batches are open (a
// trace of 200,000 threads holds as many open at once). Only doubling the
// leaves plays every match again, so the matches played add up to a few
// per leaf over the whole trace.
type eventMerger struct {
	src      source
	ix       *binaryIndex
	checkCRC bool         // check payloads again when they are read (files may change)
	toOpen   int          // next batch of ix.batches to open
	slots    []*openBatch // by leaf, made when a batch first opens there (nil: done)
	keys     []mergeKey   // by leaf; len(slots) is a power of two
	tree     winnerTree
	free     []int32  // leaves that are done, not the feed's
	feed     int32    // the leaf of the next batch to open; -1 when none is left
	open     int      // batches open now
	taken    int      // events of the winner nextRun returned: step past them first
	last     mergeKey // the key of the last of them
	err      error
	maxOpen  atomic.Int64 // most batches open at once, for tests and benchmarks (read while a pipeline's producer runs)
}

func newEventMerger(src source, ix *binaryIndex, checkCRC bool) *eventMerger {
	m := &eventMerger{src: src, ix: ix, checkCRC: checkCRC, feed: -1}
	m.slots = make([]*openBatch, 1)
	m.keys = []mergeKey{doneKey()}
	if len(ix.batches) > 0 {
		m.feed = 0
		m.keys[0] = openKey(&ix.batches[0])
	}
	m.tree.build(m.keys)
	return m
}

// nextRun returns the next events in SortEvents order: a run of the
// winner's decoded events that all go before every other leaf's next key;
// nil at the end. The slice is valid until the next call, and the caller
// may modify its events.
func (m *eventMerger) nextRun() ([]Event, error) {
	if m.err != nil {
		return nil, m.err
	}
	if m.taken > 0 {
		if err := m.step(); err != nil {
			m.err = err
			return nil, err
		}
	}
	for {
		w := m.tree.winner()
		if w == m.feed {
			if err := m.openBatch(w); err != nil {
				m.err = err
				return nil, err
			}
			continue
		}
		b := m.slots[w]
		if b == nil || b.ref == nil {
			return nil, nil // every leaf is done
		}
		// The runner-up is the best of the winners beside the winner's path.
		bound := doneKey()
		for n := int(w) + len(m.keys); n > 1; n >>= 1 {
			if l := m.tree.win[n^1]; m.keys[l].before(&bound) {
				bound = m.keys[l]
			}
		}
		// The keys of the run's events are compared field by field, never
		// built: a mergeKey made per event and copied stalled on store
		// forwarding (two thirds of this function's time).
		prev := m.keys[w]
		start, end, rank := prev.start, prev.end, prev.rank
		thread, seq := b.ref.thread, b.ref.seq
		j := b.pos + 1
		for ; j < len(b.buf); j++ {
			e := &b.buf[j]
			s, en, rk := e.Start, e.End, kindRank(e.Kind)+1
			if s < start || s == start && (en > end || en == end && rk < rank) {
				m.err = outOfOrder(b.ref) // !inOrder(prev, key)
				return nil, m.err
			}
			if !keyBefore(s, en, rk, thread, seq, &bound) {
				break
			}
			start, end, rank = s, en, rk
		}
		m.last = mergeKey{start: start, end: end, rank: rank, thread: thread, seq: seq}
		m.taken = j - b.pos
		return b.buf[b.pos:j], nil
	}
}

// collect merges all events into out, which has room for exactly them.
func (m *eventMerger) collect(out []Event) error {
	for o := 0; o < len(out); {
		run, err := m.nextRun()
		if err != nil {
			return err
		}
		if len(run) == 0 {
			return &CorruptError{Reason: "batches hold fewer events than their headers say"}
		}
		o += copy(out[o:], run)
	}
	return nil
}

func outOfOrder(b *batchRef) error {
	return &CorruptError{Offset: b.off,
		Reason: "events of a batch out of SortEvents order (same Start, End or kind order wrong)"}
}

// step moves the winner past the run nextRun returned.
func (m *eventMerger) step() error {
	w := m.tree.winner()
	b := m.slots[w]
	b.pos += m.taken
	m.taken = 0
	if b.pos == len(b.buf) {
		if b.dec.left == 0 {
			// The batch is done: let it go.
			b.ref = nil
			b.dec.p = nil
			m.open--
			m.keys[w] = doneKey()
			m.tree.replay(m.keys, w)
			m.free = append(m.free, w)
			return nil
		}
		if err := b.fill(); err != nil {
			return err
		}
	}
	// The leaf's key is written in place, field by field: a key built
	// aside and copied stalled on store forwarding (two fifths of step's
	// own samples).
	e, k := &b.buf[b.pos], &m.keys[w]
	k.start, k.end, k.rank, k.thread, k.seq = e.Start, e.End, kindRank(e.Kind)+1, b.ref.thread, b.ref.seq
	if !inOrder(&m.last, k) {
		return outOfOrder(b.ref)
	}
	m.tree.replay(m.keys, w)
	return nil
}

// openBatch opens the next batch to open on leaf w, the feed's, and moves
// the feed to a free leaf.
func (m *eventMerger) openBatch(w int32) error {
	ref := &m.ix.batches[m.toOpen]
	m.toOpen++
	b := m.slots[w]
	if b == nil {
		b = new(openBatch)
		m.slots[w] = b
	}
	b.ref = ref
	m.open++
	if int64(m.open) > m.maxOpen.Load() {
		m.maxOpen.Store(int64(m.open))
	}
	n := int(ref.len)
	if m.checkCRC {
		n += 4
	}
	raw, err := m.src.payload(b.raw, ref.off, n)
	if err != nil {
		return err
	}
	if _, ok := m.src.(memSource); !ok {
		b.raw = raw
	}
	p := raw[:ref.len]
	if m.checkCRC && crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(raw[ref.len:]) {
		return &CorruptError{Offset: ref.off, Reason: "section checksum mismatch (did the file change while it was read?)"}
	}
	if reason, at := b.dec.reset(p, int(ref.strings), int(ref.codes)); reason != "" {
		return &CorruptError{Offset: ref.off + int64(at), Reason: reason}
	}
	if err := b.fill(); err != nil {
		return err
	}
	m.keys[w] = keyOf(&b.buf[0], ref)
	m.tree.replay(m.keys, w)
	m.feed = -1
	if m.toOpen < len(m.ix.batches) {
		m.feed = m.freeLeaf()
		m.keys[m.feed] = openKey(&m.ix.batches[m.toOpen])
		m.tree.replay(m.keys, m.feed)
	}
	return nil
}

// freeLeaf returns a leaf that is done, doubling the leaves (and playing
// every match again) when none is.
func (m *eventMerger) freeLeaf() int32 {
	if n := len(m.free); n > 0 {
		f := m.free[n-1]
		m.free = m.free[:n-1]
		return f
	}
	n := len(m.slots)
	m.slots = append(m.slots, make([]*openBatch, n)...)
	for i := range n {
		m.keys = append(m.keys, doneKey())
		if i > 0 {
			m.free = append(m.free, int32(2*n-i))
		}
	}
	m.tree.build(m.keys)
	return int32(n)
}

// fill decodes the batch's next events into its buffer.
func (b *openBatch) fill() error {
	if want := min(mergeChunk, b.dec.left); cap(b.buf) < want {
		// A slot's buffer grows to what its batches need: a file of many
		// short batches open at once costs their events, not 64 each.
		b.buf = make([]Event, want)
	}
	b.buf = b.buf[:min(mergeChunk, b.dec.left)]
	b.pos = 0
	if reason, at := b.dec.decode(b.buf); reason != "" {
		return &CorruptError{Offset: b.ref.off + int64(at), Reason: reason}
	}
	return nil
}

// doneKey is the key of a leaf with nothing to merge: it goes after every
// event.
func doneKey() mergeKey {
	return mergeKey{start: math.MaxInt64, end: math.MinInt64, rank: math.MaxUint8,
		thread: math.MaxInt32, seq: math.MaxInt32}
}

// winnerTree picks the leaf with the earliest key among k (a power of two)
// with log2(k) key comparisons per change of one leaf's key, whichever
// leaf it is and whichever way its key moved: node n (1 <= n < k) holds
// the winner of the match between its children 2n and 2n+1, node k+i is
// leaf i, node 1 the overall winner.
type winnerTree struct {
	win    []int32
	played int64 // matches played by build, for the tests' bound on its work
}

// winner is the leaf with the earliest key (with one leaf, node 1 is the
// leaf itself).
func (t *winnerTree) winner() int32 { return t.win[1] }

// build plays every match of keys again.
func (t *winnerTree) build(keys []mergeKey) {
	k := len(keys)
	t.win = append(t.win[:0], make([]int32, 2*k)...)
	win := t.win
	for i := 0; i < k; i++ {
		win[k+i] = int32(i)
	}
	for n := k - 1; n > 0; n-- {
		a, b := win[2*n], win[2*n+1]
		if keys[b].before(&keys[a]) {
			a = b
		}
		win[n] = a
	}
	t.played += int64(k)
}

// replay plays again the matches on leaf w's path after its key changed.
func (t *winnerTree) replay(keys []mergeKey, w int32) {
	win := t.win
	for n := (int(w) + len(keys)) >> 1; n > 0; n >>= 1 {
		a, b := win[2*n], win[2*n+1]
		if keys[b].before(&keys[a]) {
			a = b
		}
		win[n] = a
	}
}
