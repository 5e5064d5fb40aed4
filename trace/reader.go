package trace

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// maxTableBytes bounds the memory a trace's strings and tables may take
// once decoded (Strings, Code, Symbols, Mappings, Processes, Threads,
// Drops, GPUs): a file that needs more is refused before the memory is
// taken. cuprof's writers stay far below it (a recording's tables are a
// few MB); a crafted file of tiny strings or empty records would otherwise
// take 16 to 100 bytes of memory per byte of file. A variable for tests.
var maxTableBytes int64 = 64 << 20

// tableBudget counts the memory the decoded tables take against
// maxTableBytes.
type tableBudget struct{ used int64 }

// spend takes n bytes of the budget and reports whether there were enough.
func (b *tableBudget) spend(n int64) bool {
	if n > maxTableBytes-b.used {
		return false
	}
	b.used += n
	return true
}

// overBudget is the reason for a file whose tables take too much memory;
// what names the entry that went over.
func overBudget(what string) string {
	return fmt.Sprintf("its strings and tables would take more than %d MiB of memory (at %s); cuprof's writers stay far below that, so the file is damaged or not one cuprof wrote",
		maxTableBytes>>20, what)
}

// section is one framed section found by the scan pass.
type section struct {
	kind   sectionKind
	offset int // of the section header
	start  int // of the payload
	end    int // end of the payload
	count  int // events, for secEvents
	// lostBefore is the number of damaged bytes framing skipped before
	// the section that may have held strings or code entries.
	lostBefore int
}

// ReadBinary decodes a binary .cuprof file held in data. Events are returned
// in SortEvents order. A file cut short reads up to its last whole section
// and sets Trace.Loss; damage inside the file is a *CorruptError naming the
// byte offset. ReadBinary never panics, and what it allocates is bounded by
// len(data): an event record takes at least 2 bytes, and is decoded into one
// Event (112 bytes), so at most 56 bytes of events per byte of input.
//
// ReadBinary holds every event in memory; Open, NewFile and OpenReader read
// the same file as a stream, in memory independent of its length.
func ReadBinary(data []byte) (*Trace, error) {
	return readBinary(data, true)
}

func readBinary(data []byte, checkCRC bool) (*Trace, error) {
	return readBinaryInto(data, checkCRC, nil)
}

// readBinaryInto is readBinary decoding into buf when it is large enough
// (benchmarks use it to measure decoding apart from allocating).
func readBinaryInto(data []byte, checkCRC bool, buf []Event) (*Trace, error) {
	ix, err := scanBinary(memSource(data), checkCRC)
	if err != nil {
		return nil, err
	}
	t := ix.tables
	var out []Event
	if int64(cap(buf)) >= ix.events {
		out = buf[:ix.events]
	} else {
		out = make([]Event, ix.events)
	}
	if err := newEventMerger(memSource(data), ix, false).collect(out); err != nil {
		return nil, err
	}
	t.Events = out
	return t, nil
}

// batchRef is where the scan found one event batch. The index of a trace is
// 40 bytes per batch, that is per up to 4096 events.
type batchRef struct {
	off     int64 // of the payload
	len     int32 // payload bytes
	count   int32 // events
	strings int32 // its string IDs are below this
	codes   int32 // its code IDs are below this
	thread  int32 // its thread, numbered in PID, TID order
	seq     int32 // its number among the batches, in file order
	base    int64 // its base time: no event of it starts earlier
}

// binaryIndex is what scanBinary finds in a binary trace: its tables,
// decoded, and where its event batches are.
type binaryIndex struct {
	tables  *Trace     // everything but the events (Loss included)
	batches []batchRef // by base time, then thread, then file order
	events  int64      // in all batches
}

// scanBinary frames the sections of a binary trace (checking them unless
// !checkCRC, for the fuzzer), decodes the tables and strings, and keeps the
// place of each event batch. Its Loss is set for a file cut short or
// damaged; Strings lost with a damaged section are LostString, up to the
// most any batch may refer to.
func scanBinary(src source, checkCRC bool) (*binaryIndex, error) {
	corrupt := func(off int, format string, args ...any) error {
		return &CorruptError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	hdr, err := src.bytes(0, headerLen)
	if err != nil {
		return nil, err
	}
	if len(hdr) < headerLen {
		return nil, corrupt(0, "file too short for a .cuprof header (%d bytes)", src.size())
	}
	if string(hdr[:len(binaryMagic)]) != binaryMagic {
		return nil, fmt.Errorf("%w: bad magic bytes", ErrNotTrace)
	}
	// Pass 1: frame the sections, check CRCs, count events.
	var fr frameResult
	switch v := binary.LittleEndian.Uint16(hdr[len(binaryMagic):]); v {
	case 1:
		fr, err = frameV1(src, checkCRC)
	case 2:
		fr, err = frameV2(src, checkCRC)
	default:
		return nil, fmt.Errorf("unsupported .cuprof format version %d (this cuprof reads versions 1 to %d): use a matching cuprof", v, BinaryVersion)
	}
	if err != nil {
		return nil, err
	}
	t := &Trace{}
	ix := &binaryIndex{tables: t}
	secs := fr.secs
	var total int64
	for k := range secs {
		total += int64(secs[k].count)
	}
	damaged := len(fr.damaged) > 0 // strings may need placeholders
	// maxStrings bounds the string IDs events may refer to, maxCodes the
	// code IDs.
	var maxStrings, maxCodes int

	// Pass 2: decode tables and strings in file order, noting how many
	// strings each batch may refer to.
	t.Strings = []string{""}
	var budget tableBudget
	var lostCodes [][2]int // entries standing for lost code sections, named at the end
	threads := map[threadKey]int32{}
	var batches uint64
	var lostEvents int64
	sawMeta := false
	for k := range secs {
		s := &secs[k]
		p, err := src.bytes(int64(s.start), s.end-s.start)
		if err != nil {
			return nil, err
		}
		var reason string
		var at int
		switch s.kind {
		case secStrings:
			reason, at = readStrings(p, t, s.lostBefore, &budget)
		case secMeta:
			if sawMeta {
				return nil, corrupt(s.offset, "second metadata section")
			}
			sawMeta = true
			gpus := t.Meta.GPUs
			reason, at = decodeTableRecord(p, &t.Meta, metaTable)
			t.Meta.GPUs = gpus
		case secGPU:
			t.Meta.GPUs, reason, at = readRecords(p, t.Meta.GPUs, gpuTable, &budget)
		case secProcess:
			t.Processes, reason, at = readRecords(p, t.Processes, processTable, &budget)
		case secThread:
			t.Threads, reason, at = readRecords(p, t.Threads, threadTable, &budget)
		case secMapping:
			t.Mappings, reason, at = readRecords(p, t.Mappings, mappingTable, &budget)
		case secSymbol:
			t.Symbols, reason, at = readRecords(p, t.Symbols, symbolTable, &budget)
		case secDrop:
			t.Drops, reason, at = readRecords(p, t.Drops, dropTable, &budget)
		case secCode:
			if len(t.Code) == 0 {
				t.Code = []Code{{}} // ID 0, not stored
			}
			if first, ok := codeSectionFirst(p); ok {
				if first > len(t.Code) && first-len(t.Code) <= s.lostBefore {
					// Entries of a lost code section: each took at least
					// a byte of what was lost.
					lostCodes = append(lostCodes, [2]int{len(t.Code), first})
					t.Code = append(t.Code, make([]Code, first-len(t.Code))...)
				}
				if first != len(t.Code) {
					return nil, corrupt(s.start, "code section starts at ID %d, want %d", first, len(t.Code))
				}
			}
			from := len(t.Code)
			t.Code, reason, at = readRecords(p, t.Code, codeTable, &budget)
			for _, c := range t.Code[from:] {
				if reason != "" {
					break
				}
				id := max(c.Name, c.Module, c.File)
				if int64(id) < int64(len(t.Strings))+int64(s.lostBefore) && id >= StringID(len(t.Strings)) {
					// The string was in a section damage lost: each lost
					// string took at least a byte of what was lost.
					padStrings(t, int(id)+1)
				}
				if id >= StringID(len(t.Strings)) {
					reason, at = fmt.Sprintf("code entry names string %d, not defined before it (%d strings)",
						id, len(t.Strings)), 0
				}
			}
		case secEvents:
			// After damage, a batch may refer to strings of a lost strings
			// section: each took at least a byte of what was lost.
			strs := len(t.Strings) + s.lostBefore
			codes := len(t.Code)
			if s.lostBefore > 0 {
				codes = max(len(t.Code), 1) + s.lostBefore
			}
			batches++
			if s.count == 0 {
				break
			}
			pid, tid, _, i, _ := batchHeader(p) // checked by framing
			u, j := uvarintAt(p, i)
			if j < 0 {
				return nil, corrupt(s.start+i, "bad batch base time")
			}
			th, ok := threads[threadKey{pid, tid}]
			if !ok {
				th = int32(len(threads))
				threads[threadKey{pid, tid}] = th
			}
			ix.batches = append(ix.batches, batchRef{off: int64(s.start), len: int32(s.end - s.start),
				count: int32(s.count), strings: int32(strs), codes: int32(codes), thread: th,
				seq: int32(len(ix.batches)), base: unzigzag(u)})
			maxStrings = max(maxStrings, strs)
			maxCodes = max(maxCodes, codes)
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
	ix.events = total
	if damaged {
		// Names of lost strings sections: as many as batches may use; the
		// same for code entries.
		padStrings(t, maxStrings)
		padCodes(t, maxCodes)
		if len(lostCodes) > 0 {
			lost := lostStringID(t)
			for _, r := range lostCodes {
				for i := r[0]; i < r[1]; i++ {
					t.Code[i] = Code{Kind: CodePython, Name: lost}
				}
			}
		}
	}
	t.Loss = fr.loss(lostEvents)
	if !fr.footer && t.Loss == nil {
		t.Loss = &Loss{Offset: src.size(), Bytes: 0,
			Reason: "file ends without a footer (the writer did not finish: crash, kill or still running)"}
	}
	// Number threads by PID and TID, so that the order of events equal in
	// Start, End and kind does not depend on how a writer laid out its
	// batches.
	keys := make([]threadKey, len(threads))
	for k, th := range threads {
		keys[th] = k
	}
	rank := make([]int32, len(keys))
	byID := make([]int32, len(keys))
	for i := range byID {
		byID[i] = int32(i)
	}
	sort.Slice(byID, func(i, j int) bool {
		a, b := keys[byID[i]], keys[byID[j]]
		return a.pid < b.pid || a.pid == b.pid && a.tid < b.tid
	})
	for r, th := range byID {
		rank[th] = int32(r)
	}
	for i := range ix.batches {
		ix.batches[i].thread = rank[ix.batches[i].thread]
	}
	sort.Slice(ix.batches, func(i, j int) bool {
		a, b := &ix.batches[i], &ix.batches[j]
		if a.base != b.base {
			return a.base < b.base
		}
		if a.thread != b.thread {
			return a.thread < b.thread
		}
		return a.seq < b.seq
	})
	return ix, nil
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

// padCodes appends entries named LostString to t.Code until it has n: they
// stand for the code entries of a code section a damaged file lost.
func padCodes(t *Trace, n int) {
	if len(t.Code) >= n {
		return
	}
	if len(t.Code) == 0 {
		t.Code = []Code{{}}
	}
	lost := lostStringID(t)
	for len(t.Code) < n {
		t.Code = append(t.Code, Code{Kind: CodePython, Name: lost})
	}
}

// lostStringID returns the ID of a LostString in t.Strings, appending one
// when there is none.
func lostStringID(t *Trace) StringID {
	for i, s := range t.Strings {
		if s == LostString {
			return StringID(i)
		}
	}
	t.Strings = append(t.Strings, LostString)
	return StringID(len(t.Strings) - 1)
}

// codeSectionFirst returns the ID the first record of code section p says
// it has, if it says one.
func codeSectionFirst(p []byte) (int, bool) {
	l, n := binary.Uvarint(p)
	if n <= 0 || l > uint64(len(p)-n) {
		return 0, false // readRecords names the damage
	}
	var cf codeFirst
	if reason, _ := decodeTableRecord(p[n:n+int(l)], &cf, codeFirstTable); reason != "" || cf.ID == 0 {
		return 0, false
	}
	return int(cf.ID), true
}

// readStrings decodes a strings section into t.Strings. After lost bytes
// of damaged sections, it may start up to lost IDs after the last one read;
// the strings between are LostString. The strings share one allocation, the
// section's payload, and their memory is counted in budget before it is
// taken.
func readStrings(p []byte, t *Trace, lost int, budget *tableBudget) (string, int) {
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
	const header = int64(unsafeSizeofString)
	if !budget.spend(int64(count)*header + int64(len(p)-i)) {
		return overBudget(fmt.Sprintf("the strings from ID %d", first)), 0
	}
	t.Strings = slices.Grow(t.Strings, int(count))
	all := string(p[i:])
	base := i
	for k := uint64(0); k < count; k++ {
		l, n := binary.Uvarint(p[i:])
		if n <= 0 || l > uint64(len(p)-i-n) {
			return "bad string length", i
		}
		i += n
		t.Strings = append(t.Strings, all[i-base:i-base+int(l)])
		i += int(l)
	}
	if i != len(p) {
		return "bytes left after the last string", i
	}
	return "", 0
}

// unsafeSizeofString is the size of a string header: what each string of a
// table costs besides its bytes.
const unsafeSizeofString = 2 * strconv.IntSize / 8

// readRecords decodes a section of length-prefixed table records, counting
// each record's memory (its struct and its bytes) in budget.
func readRecords[T any](p []byte, dst []T, fields []tableField[T], budget *tableBudget) ([]T, string, int) {
	size := int64(reflect.TypeFor[T]().Size())
	i := 0
	for i < len(p) {
		l, n := binary.Uvarint(p[i:])
		if n <= 0 || l > uint64(len(p)-i-n) {
			return dst, "bad record length", i
		}
		// The slice is grown here, doubling, so that what it allocates is
		// what the budget counts: its capacity and each record's bytes.
		grow := 0
		if len(dst) == cap(dst) {
			grow = max(cap(dst), 8)
		}
		if !budget.spend(int64(grow)*size + int64(l)) {
			return dst, overBudget(fmt.Sprintf("%s record %d", strings.ToLower(reflect.TypeFor[T]().Name()), len(dst))), i
		}
		dst = slices.Grow(dst, grow)
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
