package trace

import (
	"encoding/binary"
	"fmt"
	"math"
)

// section is one framed section found by the scan pass.
type section struct {
	kind    sectionKind
	offset  int // of the kind byte
	start   int // of the payload
	end     int // end of the payload
	count   int // events, for secEvents
	strings int // for secEvents: strings defined before it
	// lostBefore is the number of damaged bytes framing skipped before
	// the section.
	lostBefore int
}

// ReadBinary decodes a binary .cuprof file held in data. Events are returned
// in SortEvents order. A file cut short reads up to its last whole section
// and sets Trace.Loss; damage inside the file is a *CorruptError naming the
// byte offset. ReadBinary never panics, and what it allocates is bounded by
// len(data): an event record takes at least 2 bytes, and is decoded into one
// Event (104 bytes), so at most 52 bytes of events per byte of input.
func ReadBinary(data []byte) (*Trace, error) {
	return readBinary(data, true)
}

func readBinary(data []byte, checkCRC bool) (*Trace, error) {
	return readBinaryInto(data, checkCRC, nil)
}

// readBinaryInto is readBinary decoding into buf when it is large enough
// (benchmarks use it to measure decoding apart from allocating).
func readBinaryInto(data []byte, checkCRC bool, buf []Event) (*Trace, error) {
	corrupt := func(off int, format string, args ...any) error {
		return &CorruptError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	if len(data) < headerLen {
		return nil, corrupt(0, "file too short for a .cuprof header (%d bytes)", len(data))
	}
	if string(data[:len(binaryMagic)]) != binaryMagic {
		return nil, fmt.Errorf("%w: bad magic bytes", ErrNotTrace)
	}
	// Pass 1: frame the sections, check CRCs, count events.
	var fr frameResult
	var err error
	switch v := binary.LittleEndian.Uint16(data[len(binaryMagic):]); v {
	case 1:
		fr, err = frameV1(data, checkCRC)
	case 2:
		fr, err = frameV2(data, checkCRC)
	default:
		return nil, fmt.Errorf("unsupported .cuprof format version %d (this cuprof reads versions 1 to %d): use a matching cuprof", v, BinaryVersion)
	}
	if err != nil {
		return nil, err
	}
	t := &Trace{}
	secs := fr.secs
	var total int64
	for k := range secs {
		total += int64(secs[k].count)
	}
	damaged := len(fr.damaged) > 0

	// Pass 2: decode tables and strings in file order, noting how many
	// strings each batch may refer to.
	t.Strings = []string{""}
	var batches uint64
	var lostEvents int64
	sawMeta := false
	for k := range secs {
		s := &secs[k]
		p := data[s.start:s.end]
		var reason string
		var at int
		switch s.kind {
		case secStrings:
			reason, at = readStrings(p, t, s.lostBefore)
		case secMeta:
			if sawMeta {
				return nil, corrupt(s.offset, "second metadata section")
			}
			sawMeta = true
			gpus := t.Meta.GPUs
			reason, at = decodeTableRecord(p, &t.Meta, metaTable)
			t.Meta.GPUs = gpus
		case secGPU:
			t.Meta.GPUs, reason, at = readRecords(p, t.Meta.GPUs, gpuTable)
		case secProcess:
			t.Processes, reason, at = readRecords(p, t.Processes, processTable)
		case secThread:
			t.Threads, reason, at = readRecords(p, t.Threads, threadTable)
		case secMapping:
			t.Mappings, reason, at = readRecords(p, t.Mappings, mappingTable)
		case secSymbol:
			t.Symbols, reason, at = readRecords(p, t.Symbols, symbolTable)
		case secDrop:
			t.Drops, reason, at = readRecords(p, t.Drops, dropTable)
		case secEvents:
			// After damage, a batch may refer to strings of a lost strings
			// section: each took at least a byte of what was lost.
			s.strings = len(t.Strings) + s.lostBefore
			batches++
		case secFooter:
			var counts [3]uint64
			i := 0
			for k := range counts {
				v, n := binary.Uvarint(p[i:])
				if n <= 0 {
					return nil, corrupt(s.start+i, "bad footer")
				}
				counts[k] = v
				i += n
			}
			if counts[0] == uint64(total) && counts[1] == batches && counts[2] == uint64(len(t.Strings)) {
				break
			}
			if !damaged {
				return nil, corrupt(s.offset, "footer counts %d events, %d batches, %d strings; the file holds %d, %d, %d",
					counts[0], counts[1], counts[2], total, batches, len(t.Strings))
			}
			// Sections were lost: the footer says how much.
			if counts[0] > uint64(total) {
				lostEvents = int64(min(counts[0]-uint64(total), math.MaxInt64/2))
			}
			if counts[2] > uint64(len(t.Strings)) {
				padStrings(t, int(min(counts[2], uint64(len(t.Strings)+s.lostBefore))))
			}
		}
		if reason != "" {
			return nil, corrupt(s.start+at, "%s", reason)
		}
	}

	// Pass 3: decode the batches, merging threads into SortEvents order.
	ev, err := decodeEvents(data, secs, int(total), buf)
	if err != nil {
		return nil, err
	}
	t.Events = ev
	if damaged {
		// Give names of lost strings sections a placeholder.
		need := len(t.Strings)
		for i := range ev {
			need = max(need, int(ev[i].Name)+1, int(ev[i].Domain)+1)
		}
		padStrings(t, need)
	}
	t.Loss = fr.loss(lostEvents)
	if !fr.footer && t.Loss == nil {
		t.Loss = &Loss{Offset: int64(len(data)), Bytes: 0,
			Reason: "file ends without a footer (the writer did not finish: crash, kill or still running)"}
	}
	return t, nil
}

// LostString stands for each string of a strings section that a damaged
// file lost.
const LostString = "(lost)"

// padStrings appends LostString to t.Strings until it has n strings.
func padStrings(t *Trace, n int) {
	for len(t.Strings) < n {
		t.Strings = append(t.Strings, LostString)
	}
}

// mergeChunk is how many events a thread decodes ahead during the merge:
// small enough that every thread's buffer stays in cache.
const mergeChunk = 64

// cursor walks one thread's batches during the merge.
type cursor struct {
	batches []*section
	cur     *section // the batch dec is decoding
	dec     batchDecoder
	buf     []Event // decoded, not yet merged events: buf[pos:]
	pos     int
}

// mergeKey is the sort key of a cursor's next event, kept in the merge heap
// so that comparisons touch no event.
type mergeKey struct {
	start, end int64
	rank       uint8
	cur        int32 // the cursor; ties go to the lower, keeping the merge stable
}

func keyOf(e *Event, cur int32) mergeKey {
	return mergeKey{start: e.Start, end: e.End, rank: kindRank(e.Kind), cur: cur}
}

// before is SortEvents' order on keys, then the cursor number.
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
	return a.cur < b.cur
}

// doneKey marks a finished cursor: it goes after every event.
func doneKey(cur int32) mergeKey {
	return mergeKey{start: math.MaxInt64, end: math.MinInt64, rank: math.MaxUint8, cur: cur}
}

// loserTree picks the cursor with the earliest next event among k (a power
// of two) with log2(k) key comparisons per event: node n holds the loser of
// the match played there, node 0 the overall winner.
type loserTree struct {
	keys []mergeKey // by cursor
	tree []int32
}

func newLoserTree(keys []mergeKey) *loserTree {
	k := len(keys)
	t := &loserTree{keys: keys, tree: make([]int32, k)}
	win := make([]int32, 2*k)
	for i := 0; i < k; i++ {
		win[k+i] = int32(i)
	}
	for n := k - 1; n > 0; n-- {
		a, b := win[2*n], win[2*n+1]
		if keys[b].before(&keys[a]) {
			a, b = b, a
		}
		win[n], t.tree[n] = a, b
	}
	if k > 1 {
		t.tree[0] = win[1]
	}
	return t
}

// replay updates the tree after the key of cursor w (the winner) changed.
func (t *loserTree) replay(w int32) {
	keys, tree := t.keys, t.tree
	for n := (int(w) + len(keys)) >> 1; n > 0; n >>= 1 {
		if l := tree[n]; keys[l].before(&keys[w]) {
			tree[n], w = w, l
		}
	}
	tree[0] = w
}

// decodeEvents decodes all event batches into one slice in SortEvents order.
// Batches of one thread follow each other in time, so each thread is a sorted
// run. The runs are merged with a heap while being decoded, a few events at a
// time into a small per-thread buffer, so every event is decoded once and
// copied once.
func decodeEvents(data []byte, secs []section, total int, buf []Event) ([]Event, error) {
	type tk struct{ pid, tid uint32 }
	index := map[tk]int{}
	var curs []cursor
	for k := range secs {
		s := &secs[k]
		if s.kind != secEvents || s.count == 0 {
			continue
		}
		pid, tid, _, _, _ := batchHeader(data[s.start:s.end])
		j, ok := index[tk{pid, tid}]
		if !ok {
			j = len(curs)
			index[tk{pid, tid}] = j
			curs = append(curs, cursor{})
		}
		curs[j].batches = append(curs[j].batches, s)
	}
	var out []Event
	if cap(buf) >= total {
		out = buf[:total]
	} else {
		out = make([]Event, total)
	}
	if len(curs) == 1 {
		c := &curs[0]
		o := 0
		for _, s := range c.batches {
			if reason, at := c.dec.reset(data[s.start:s.end], s.strings); reason != "" {
				return nil, &CorruptError{Offset: int64(s.start + at), Reason: reason}
			}
			if reason, at := c.dec.decode(out[o : o+s.count]); reason != "" {
				return nil, &CorruptError{Offset: int64(s.start + at), Reason: reason}
			}
			o += s.count
		}
		return sortRuns(out), nil
	}
	sorted := true
	// fill decodes c's next events; it reports false when c is done.
	fill := func(c *cursor) (bool, error) {
		if c.dec.left == 0 {
			if len(c.batches) == 0 {
				return false, nil
			}
			s := c.batches[0]
			c.batches, c.cur = c.batches[1:], s
			if reason, at := c.dec.reset(data[s.start:s.end], s.strings); reason != "" {
				return false, &CorruptError{Offset: int64(s.start + at), Reason: reason}
			}
		}
		if c.buf == nil {
			c.buf = make([]Event, mergeChunk)
		}
		c.buf = c.buf[:min(mergeChunk, c.dec.left)]
		c.pos = 0
		if reason, at := c.dec.decode(c.buf); reason != "" {
			return false, &CorruptError{Offset: int64(c.cur.start + at), Reason: reason}
		}
		return true, nil
	}
	k := 1
	for k < len(curs) {
		k *= 2
	}
	keys := make([]mergeKey, k)
	for j := range keys {
		keys[j] = doneKey(int32(j))
		if j >= len(curs) {
			continue
		}
		c := &curs[j]
		if ok, err := fill(c); err != nil {
			return nil, err
		} else if ok {
			keys[j] = keyOf(&c.buf[0], int32(j))
		}
	}
	lt := newLoserTree(keys)
	for o := range out {
		w := lt.tree[0]
		top := &keys[w]
		if top.rank == math.MaxUint8 {
			return nil, &CorruptError{Reason: "batches hold fewer events than their headers say"}
		}
		c := &curs[w]
		out[o] = c.buf[c.pos]
		c.pos++
		if c.pos == len(c.buf) {
			ok, err := fill(c)
			if err != nil {
				return nil, err
			}
			if !ok {
				*top = doneKey(w)
				lt.replay(w)
				continue
			}
		}
		nk := keyOf(&c.buf[c.pos], w)
		if nk.before(top) {
			sorted = false // the thread went back in time
		}
		*top = nk
		lt.replay(w)
	}
	if !sorted {
		// A thread whose batches were not in time order (no writer of this
		// package makes one).
		return sortRuns(out), nil
	}
	return out, nil
}

// readStrings decodes a strings section into t.Strings. After lost bytes
// of damaged sections, it may start up to lost IDs after the last one read;
// the strings between are LostString.
func readStrings(p []byte, t *Trace, lost int) (string, int) {
	first, n := binary.Uvarint(p)
	if n <= 0 {
		return "bad strings header", 0
	}
	i := n
	count, n := binary.Uvarint(p[i:])
	if n <= 0 {
		return "bad strings header", i
	}
	i += n
	if first > uint64(len(t.Strings)) && first-uint64(len(t.Strings)) <= uint64(lost) {
		padStrings(t, int(first))
	}
	if first != uint64(len(t.Strings)) {
		return fmt.Sprintf("strings section starts at ID %d, want %d", first, len(t.Strings)), 0
	}
	if count > uint64(len(p)-i) {
		return fmt.Sprintf("strings section claims %d strings in %d bytes", count, len(p)), 0
	}
	for k := uint64(0); k < count; k++ {
		l, n := binary.Uvarint(p[i:])
		if n <= 0 || l > uint64(len(p)-i-n) {
			return "bad string length", i
		}
		i += n
		t.Strings = append(t.Strings, string(p[i:i+int(l)]))
		i += int(l)
	}
	if i != len(p) {
		return "bytes left after the last string", i
	}
	return "", 0
}

// readRecords decodes a section of length-prefixed table records.
func readRecords[T any](p []byte, dst []T, fields []tableField[T]) ([]T, string, int) {
	i := 0
	for i < len(p) {
		l, n := binary.Uvarint(p[i:])
		if n <= 0 || l > uint64(len(p)-i-n) {
			return dst, "bad record length", i
		}
		i += n
		var rec T
		if reason, at := decodeTableRecord(p[i:i+int(l)], &rec, fields); reason != "" {
			return dst, reason, i + at
		}
		dst = append(dst, rec)
		i += int(l)
	}
	return dst, "", 0
}

// sortRuns puts ev in SortEvents order (the same order SortEvents would give
// it) using the sorted runs it is made of: batches of one thread are sorted,
// so a trace is a few runs and a k-way merge is much cheaper than a sort.
func sortRuns(ev []Event) []Event {
	runs := []int{0}
	for i := 1; i < len(ev); i++ {
		if eventLess(&ev[i], &ev[i-1]) {
			runs = append(runs, i)
		}
	}
	if len(runs) == 1 {
		return ev
	}
	runs = append(runs, len(ev))
	k := len(runs) - 1
	pos := make([]int, k) // next event of each run
	end := make([]int, k)
	for r := 0; r < k; r++ {
		pos[r], end[r] = runs[r], runs[r+1]
	}
	// A binary min-heap of run numbers ordered by their next event, ties
	// going to the lower run: that keeps the merge stable.
	before := func(a, b int) bool {
		x, y := &ev[pos[a]], &ev[pos[b]]
		if eventLess(x, y) {
			return true
		}
		if eventLess(y, x) {
			return false
		}
		return a < b
	}
	heap := make([]int, k)
	for r := range heap {
		heap[r] = r
	}
	down := func(i int) {
		n := len(heap)
		for {
			l := 2*i + 1
			if l >= n {
				return
			}
			m := l
			if r := l + 1; r < n && before(heap[r], heap[l]) {
				m = r
			}
			if !before(heap[m], heap[i]) {
				return
			}
			heap[i], heap[m] = heap[m], heap[i]
			i = m
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	out := make([]Event, len(ev))
	for o := range out {
		r := heap[0]
		out[o] = ev[pos[r]]
		pos[r]++
		if pos[r] == end[r] {
			heap[0] = heap[len(heap)-1]
			heap = heap[:len(heap)-1]
		}
		if len(heap) > 0 {
			down(0)
		}
	}
	return out
}
