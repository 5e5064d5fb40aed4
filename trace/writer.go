package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Writer writes a binary .cuprof file as a stream, for the capture path:
//
//	w := trace.NewWriter(f, meta)          // writes the header and metadata
//	name := w.String("step")                // intern names before using them
//	w.AddProcess(p); w.AddThread(th)        // tables, any time
//	code := w.AddCode(c)                    // code entries of Python frames
//	w.WriteBatch(pid, tid, events)          // events of one thread, any order
//	...
//	err := w.Close()                        // writes the footer; f stays open
//
// Every section goes to the underlying writer in one Write call as soon as
// it is complete (tables and new strings just before the next batch), so a
// process that dies mid-trace leaves a file that reads up to its last whole
// batch. Writer does not buffer beyond one section: wrap a file in a
// bufio.Writer when batches are small. Errors are sticky: after the first,
// every method returns it. A Writer is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	err error

	strings     map[string]StringID
	nstrings    int    // strings interned, "" included
	pendingFrom int    // first ID not yet written
	pending     []byte // encoded strings not yet written
	npending    int

	tables  [secCode + 1][]byte // encoded table records not yet written, by section kind
	ncodes  int                 // code entries added, the zero entry included
	enc     *batchEncoder
	sorted  []Event
	section []byte

	threads  map[threadKey]int // index in buffered, by thread
	buffered [][]Event         // WriteEvent's events not yet written, by thread

	events, batches uint64
	closed          bool
}

// NewWriter writes the file header and m to w and returns a Writer for the
// rest. A write error is returned by the next method called.
func NewWriter(w io.Writer, m Meta) *Writer {
	wr := newHeaderWriter(w)
	wr.writeMeta(&m)
	wr.writeGPUs(m.GPUs)
	return wr
}

// newHeaderWriter writes the file header and returns a Writer for the
// rest, the metadata included (writeMeta, at any point: the text form's
// stream gives it where its line comes).
func newHeaderWriter(w io.Writer) *Writer {
	wr := &Writer{
		w:           w,
		strings:     map[string]StringID{"": 0},
		nstrings:    1,
		pendingFrom: 1,
		enc:         newBatchEncoder(),
	}
	hdr := make([]byte, 0, headerLen)
	hdr = append(hdr, binaryMagic...)
	hdr = binary.LittleEndian.AppendUint16(hdr, BinaryVersion)
	hdr = binary.LittleEndian.AppendUint16(hdr, 0)
	if _, err := w.Write(hdr); err != nil {
		wr.err = err
	}
	return wr
}

// writeMeta writes the metadata section (once a file), GPUs aside.
func (w *Writer) writeMeta(m *Meta) {
	w.writeSection(secMeta, appendTableRecord(nil, m, metaTable))
}

// writeGPUs writes a section of GPU records, none when gpus is empty.
func (w *Writer) writeGPUs(gpus []GPU) {
	if len(gpus) > 0 {
		var b []byte
		for i := range gpus {
			b = appendRecord(b, &gpus[i], gpuTable)
		}
		w.writeSection(secGPU, b)
	}
}

// appendRecord appends one length-prefixed table record.
func appendRecord[T any](b []byte, rec *T, fields []tableField[T]) []byte {
	body := appendTableRecord(nil, rec, fields)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// writeSection frames payload as a section and writes it.
func (w *Writer) writeSection(kind sectionKind, payload []byte) {
	if w.err != nil {
		return
	}
	if len(payload) > maxSectionLen {
		w.err = fmt.Errorf("write trace: %d-byte section exceeds the %d-byte limit", len(payload), maxSectionLen)
		return
	}
	b := appendSectionHeader(w.section[:0], kind, len(payload))
	b = append(b, payload...)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	w.section = b
	if _, err := w.w.Write(b); err != nil {
		w.err = err
	}
}

// String interns s and returns its ID, for Event.Name and Event.Domain. New
// strings are written before the next batch.
func (w *Writer) String(s string) StringID {
	if id, ok := w.strings[s]; ok {
		return id
	}
	id := w.addString(s)
	w.strings[s] = id
	return id
}

// addString appends s to the string table whether or not it is already
// there (WriteBinary keeps a trace's string IDs as they are).
func (w *Writer) addString(s string) StringID {
	id := StringID(w.nstrings)
	w.nstrings++
	w.pending = binary.AppendUvarint(w.pending, uint64(len(s)))
	w.pending = append(w.pending, s...)
	w.npending++
	if len(w.pending) >= stringChunk {
		w.flushStrings()
	}
	return id
}

func (w *Writer) flushStrings() {
	if w.npending == 0 {
		return
	}
	b := binary.AppendUvarint(nil, uint64(w.pendingFrom))
	b = binary.AppendUvarint(b, uint64(w.npending))
	b = append(b, w.pending...)
	w.writeSection(secStrings, b)
	w.pendingFrom += w.npending
	w.npending = 0
	w.pending = w.pending[:0]
}

// AddProcess records a process; it is written before the next batch.
func (w *Writer) AddProcess(p Process) error {
	w.tables[secProcess] = appendRecord(w.tables[secProcess], &p, processTable)
	return w.maybeFlushTables()
}

// AddThread records a thread; it is written before the next batch.
func (w *Writer) AddThread(t Thread) error {
	w.tables[secThread] = appendRecord(w.tables[secThread], &t, threadTable)
	return w.maybeFlushTables()
}

// AddMapping records a loaded object; it is written before the next batch.
func (w *Writer) AddMapping(m Mapping) error {
	w.tables[secMapping] = appendRecord(w.tables[secMapping], &m, mappingTable)
	return w.maybeFlushTables()
}

// AddSymbol records a resolved function; it is written before the next batch.
func (w *Writer) AddSymbol(s Symbol) error {
	w.tables[secSymbol] = appendRecord(w.tables[secSymbol], &s, symbolTable)
	return w.maybeFlushTables()
}

// AddDrop records events a thread lost; it is written before the next batch.
// Several drops of one thread add up.
func (w *Writer) AddDrop(d Drop) error {
	w.tables[secDrop] = appendRecord(w.tables[secDrop], &d, dropTable)
	return w.maybeFlushTables()
}

// AddCode adds an entry to the code table and returns its ID, for
// Event.Code of frames; it is written before the next batch. Its strings
// must be IDs returned by String. Entries are not deduplicated: the caller
// interns them.
func (w *Writer) AddCode(c Code) CodeID {
	if w.ncodes == 0 {
		w.ncodes = 1 // the zero entry
	}
	if max(c.Name, c.Module, c.File) >= StringID(w.nstrings) && w.err == nil {
		w.err = fmt.Errorf("write trace: code entry refers to string %d but only %d are interned",
			max(c.Name, c.Module, c.File), w.nstrings)
	}
	body := appendTableRecord(nil, &c, codeTable)
	if len(w.tables[secCode]) == 0 {
		// The first record of a section says its ID.
		body = appendKey(body, codeFirstTag, wireVarint)
		body = binary.AppendUvarint(body, uint64(w.ncodes))
	}
	w.tables[secCode] = binary.AppendUvarint(w.tables[secCode], uint64(len(body)))
	w.tables[secCode] = append(w.tables[secCode], body...)
	w.ncodes++
	w.maybeFlushTables()
	return CodeID(w.ncodes - 1)
}

func (w *Writer) maybeFlushTables() error {
	for _, b := range w.tables {
		if len(b) >= stringChunk {
			w.flushTables()
			break
		}
	}
	return w.err
}

// flushTables writes pending strings and table records.
func (w *Writer) flushTables() {
	w.flushStrings()
	for k, b := range w.tables {
		if len(b) > 0 {
			w.writeSection(sectionKind(k), b)
			w.tables[k] = b[:0]
		}
	}
}

// WriteBatch writes events of thread pid/tid (their PID and TID fields are
// ignored). They may be in any order and any number; the Writer sorts them
// and splits them into batches of at most 4096. Name and Domain must be IDs
// returned by String. events is not modified or retained.
func (w *Writer) WriteBatch(pid, tid uint32, events []Event) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("write trace: WriteBatch after Close")
	}
	for i := range events {
		e := &events[i]
		if !e.Kind.Valid() {
			return fmt.Errorf("write trace: event %d of thread %d/%d has invalid kind %d", i, pid, tid, e.Kind)
		}
		if e.End < e.Start {
			return fmt.Errorf("write trace: event %d of thread %d/%d ends before it starts (t=%d end=%d)", i, pid, tid, e.Start, e.End)
		}
		if int(e.Name) >= w.nstrings || int(e.Domain) >= w.nstrings {
			return fmt.Errorf("write trace: event %d of thread %d/%d refers to string %d/%d but only %d are interned",
				i, pid, tid, e.Name, e.Domain, w.nstrings)
		}
		if e.Code != 0 && int(e.Code) >= w.ncodes {
			return fmt.Errorf("write trace: event %d of thread %d/%d refers to code %d but only %d are added",
				i, pid, tid, e.Code, max(w.ncodes-1, 0))
		}
	}
	if !eventsSorted(events) {
		w.sorted = append(w.sorted[:0], events...)
		SortEvents(w.sorted)
		events = w.sorted
	}
	w.flushTables()
	for len(events) > 0 && w.err == nil {
		n := min(len(events), maxBatchEvents)
		w.writeSection(secEvents, w.enc.encode(pid, tid, events[:n]))
		w.events += uint64(n)
		w.batches++
		events = events[n:]
	}
	return w.err
}

// Close writes what is pending and the footer. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.flushEvents()
	w.closed = true
	w.flushTables()
	b := binary.AppendUvarint(nil, w.events)
	b = binary.AppendUvarint(b, w.batches)
	b = binary.AppendUvarint(b, uint64(w.nstrings))
	w.writeSection(secFooter, b)
	return w.err
}

// WriteBinary writes t in the binary form. String IDs are kept as they are,
// so ReadBinary gives back the same tables and events (events in SortEvents
// order).
func WriteBinary(w io.Writer, t *Trace) error {
	wr, err := NewTraceWriter(w, t)
	if err != nil {
		return err
	}
	// Group events by thread, threads in order of first appearance, keeping
	// each thread's events in trace order.
	type tk struct{ pid, tid uint32 }
	index := map[tk]int{}
	var keys []tk
	var counts []int
	thread := make([]uint16, len(t.Events)) // thread number of each event, when < 1<<16
	last, lastJ := tk{}, -1
	for i := range t.Events {
		k := tk{t.Events[i].PID, t.Events[i].TID}
		j := lastJ
		if k != last || j < 0 {
			var ok bool
			if j, ok = index[k]; !ok {
				j = len(keys)
				index[k] = j
				keys = append(keys, k)
				counts = append(counts, 0)
			}
			last, lastJ = k, j
		}
		counts[j]++
		thread[i] = uint16(j)
	}
	if len(keys) <= 1 {
		if len(keys) == 1 {
			if err := wr.WriteBatch(keys[0].pid, keys[0].tid, t.Events); err != nil {
				return err
			}
		}
		return wr.Close()
	}
	offs := make([]int, len(keys)+1)
	for j, c := range counts {
		offs[j+1] = offs[j] + c
	}
	grouped := make([]Event, len(t.Events))
	fill := append([]int(nil), offs[:len(keys)]...)
	for i := range t.Events {
		j := int(thread[i])
		if len(keys) > 1<<16 {
			j = index[tk{t.Events[i].PID, t.Events[i].TID}]
		}
		grouped[fill[j]] = t.Events[i]
		fill[j]++
	}
	for j, k := range keys {
		if err := wr.WriteBatch(k.pid, k.tid, grouped[offs[j]:offs[j+1]]); err != nil {
			return err
		}
	}
	return wr.Close()
}

// NewTraceWriter starts writing a copy of the trace whose tables are t's
// (its Events are not read): the header, metadata, t.Strings and t.Code with
// their IDs kept, and the tables. Its events follow with WriteEvent (or WriteBatch),
// for example those of a File read as a stream.
func NewTraceWriter(w io.Writer, t *Trace) (*Writer, error) {
	wr := NewWriter(w, t.Meta)
	for i, s := range t.Strings {
		if i == 0 {
			if s != "" {
				return nil, errors.New("write trace: Strings[0] must be the empty string")
			}
			continue
		}
		id := wr.addString(s)
		if _, ok := wr.strings[s]; !ok {
			wr.strings[s] = id
		}
	}
	for _, p := range t.Processes {
		wr.AddProcess(p)
	}
	for _, th := range t.Threads {
		wr.AddThread(th)
	}
	for _, m := range t.Mappings {
		wr.AddMapping(m)
	}
	for _, s := range t.Symbols {
		wr.AddSymbol(s)
	}
	for _, d := range t.Drops {
		wr.AddDrop(d)
	}
	for i, c := range t.Code {
		if i == 0 {
			if c != (Code{}) {
				return nil, errors.New("write trace: Code[0] must be the zero entry")
			}
			continue
		}
		wr.AddCode(c)
	}
	return wr, wr.err
}

// WriteEvent adds one event, of the thread its PID and TID name. Events are
// buffered per thread and written a full batch (4096) at a time, the rest at
// Close: memory is one batch per thread. Events in SortEvents order make
// batches in time order, which a stream reads holding one batch per thread.
func (w *Writer) WriteEvent(e *Event) error {
	if w.err != nil {
		return w.err
	}
	k := threadKey{e.PID, e.TID}
	if w.threads == nil {
		w.threads = map[threadKey]int{}
	}
	j, ok := w.threads[k]
	if !ok {
		j = len(w.buffered)
		w.threads[k] = j
		w.buffered = append(w.buffered, nil)
	}
	b := append(w.buffered[j], *e)
	if len(b) == maxBatchEvents {
		if err := w.WriteBatch(k.pid, k.tid, b); err != nil {
			return err
		}
		b = b[:0]
	}
	w.buffered[j] = b
	return nil
}

// flushEvents writes the events WriteEvent buffered, threads in order of
// first event.
func (w *Writer) flushEvents() {
	order := make([]threadKey, len(w.buffered))
	for k, j := range w.threads {
		order[j] = k
	}
	for j, k := range order {
		if len(w.buffered[j]) > 0 && w.err == nil {
			// A bad event is Close's error, not a batch silently lost.
			if err := w.WriteBatch(k.pid, k.tid, w.buffered[j]); err != nil {
				w.err = err
			}
		}
		w.buffered[j] = nil
	}
}

// eventsSorted reports whether ev is in SortEvents order.
func eventsSorted(ev []Event) bool {
	for i := 1; i < len(ev); i++ {
		if eventLess(&ev[i], &ev[i-1]) {
			return false
		}
	}
	return true
}

// eventLess is SortEvents' order.
func eventLess(a, b *Event) bool {
	if a.Start != b.Start {
		return a.Start < b.Start
	}
	if a.End != b.End {
		return a.End > b.End
	}
	return kindRank(a.Kind) < kindRank(b.Kind)
}

func kindRank(k Kind) uint8 {
	if k < kindLimit {
		return kindOrder[k]
	}
	return 1
}
