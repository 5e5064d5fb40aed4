package perfetto

import (
	"encoding/binary"
	"io"
	"math/bits"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// Field numbers from Perfetto's public protos (protos/perfetto/trace/...).
const (
	fTracePacket = 1 // Trace.packet

	// TracePacket
	fPacketClockSnapshot = 6
	fPacketTimestamp     = 8
	fPacketSequenceID    = 10 // trusted_packet_sequence_id
	fPacketTrackEvent    = 11
	fPacketInternedData  = 12
	fPacketSequenceFlags = 13
	fPacketClockID       = 58 // timestamp_clock_id
	fPacketDefaults      = 59 // trace_packet_defaults
	fPacketTrackDesc     = 60

	// TracePacketDefaults and its TrackEventDefaults
	fDefaultsClockID    = 58 // timestamp_clock_id
	fDefaultsTrackEvent = 11 // track_event_defaults
	fEventDefaultsTrack = 11 // track_uuid

	// ClockSnapshot and its Clock
	fSnapshotClocks       = 1
	fSnapshotPrimaryClock = 2 // primary_trace_clock
	fClockID              = 1
	fClockTimestamp       = 2
	fClockIncremental     = 3 // is_incremental

	clockBoottime    = 6  // BUILTIN_CLOCK_BOOTTIME: the trace's clock, as before any snapshot
	clockIncremental = 64 // the first sequence-scoped clock id

	seqIncrementalStateCleared = 1
	seqNeedsIncrementalState   = 2

	// TrackDescriptor
	fTrackUUID       = 1
	fTrackName       = 2
	fTrackProcess    = 3
	fTrackThread     = 4
	fTrackParentUUID = 5
	fTrackCounter    = 8
	fTrackChildOrder = 11 // child_ordering
	fTrackSiblingRnk = 12 // sibling_order_rank

	childOrderingExplicit = 3

	// ProcessDescriptor
	fProcessPID     = 1
	fProcessCmdline = 2
	fProcessName    = 6

	// ThreadDescriptor
	fThreadPID  = 1
	fThreadTID  = 2
	fThreadName = 5

	// CounterDescriptor
	fCounterUnit     = 3
	counterUnitBytes = 3 // UNIT_SIZE_BYTES

	// TrackEvent
	fEventCategories   = 22
	fEventDebugAnnots  = 4
	fEventType         = 9
	fEventNameIID      = 10
	fEventTrackUUID    = 11
	fEventName         = 23
	fEventCounterValue = 30
	fEventFlowIDs      = 47 // fixed64
	fEventTermFlowIDs  = 48 // fixed64

	typeSliceBegin = 1
	typeSliceEnd   = 2
	typeInstant    = 3
	typeCounter    = 4

	// DebugAnnotation
	fAnnotNameIID      = 1
	fAnnotIntValue     = 4
	fAnnotStringValue  = 6
	fAnnotPointerValue = 7 // shown as 0x and lowercase hex digits, as argHex is
	fAnnotName         = 10

	// InternedData and its EventCategory, EventName, DebugAnnotationName
	fInternedCategories = 1
	fInternedEventNames = 2
	fInternedAnnotNames = 3
	fInternedIID        = 1 // iid of each interned entry
	fInternedName       = 2 // name of each interned entry
	fEventCategoryIIDs  = 3 // TrackEvent.category_iids

	sharedSequence = 1 // trusted_packet_sequence_id of the tracks without one of their own
)

// Write writes t as a Perfetto protobuf trace (a Trace message of
// TracePackets), analysing it once (package analysis) as it writes. Events
// must be in trace.SortEvents order.
func Write(w io.Writer, t *trace.Trace) error {
	tw := NewWriter(w, t)
	analysis.Of(t, tw.Options()...)
	return tw.Close()
}

// NewWriter returns a Writer of the Perfetto protobuf timeline of a trace
// with the tables of t (Meta, Strings, Processes, Threads, Code; t.Events
// is not read) to w.
func NewWriter(w io.Writer, t *trace.Trace) *Writer {
	return newWriter(t, newProtoWriter(w, t))
}

func newProtoWriter(w io.Writer, t *trace.Trace) *protoWriter {
	pw := &protoWriter{names: map[string]uint64{}, objIID: map[objName]uint64{},
		shared: &sequence{id: sharedSequence}, seqOf: []*sequence{nil}, nextSeq: sharedSequence + 1}
	pw.w, pw.out = newBlockWriter(w, blockSize+1<<16)
	pw.apiIID = make([]uint64, len(trace.APIs())+1)
	pw.strIID = make([]uint64, len(t.Strings))
	pw.codeIID = make([]uint64, len(t.Code))
	return pw
}

// blockSize is how much output the writers gather before they write it:
// past the buffer of the command's output file (256 KiB), so that blocks go
// to the file without being copied again, and as large as the direct
// output's buffer: a direct write of 1 MiB took more system time for the
// same bytes (the 5M Chrome JSON timeline: 0.52-0.63 s against 0.29-0.40
// with 4 MiB, 2 rounds each at load 7-8), for 15-20 MB more peak RSS.
const blockSize = 4 << 20

// protoWriter renders the timeline as TracePackets with event names,
// categories and annotation names interned: each is written once per packet
// sequence, in the InternedData of the first packet of the sequence that
// uses it. Packets are appended to out and written in blocks of blockSize.
//
// Each thread track and each counter track has a packet sequence of its own
// (records of one track come in time order), where timestamps are deltas:
// its first packet clears the sequence's state and sets its defaults (the
// track, and a sequence clock, clockIncremental, marked is_incremental in a
// ClockSnapshot that puts it at the track's first time on the trace's clock,
// BOOTTIME), so that each packet's timestamp is the time since the
// sequence's previous packet and its event names no track, as Perfetto's
// SDK writes them (track_event_internal.cc). A record earlier than the one
// before it (none are) would carry its absolute time on BOOTTIME instead.
// Every other track (processes, lane groups and lanes, whose lifetimes are
// written when they end and out of time order) and every track descriptor
// are on sharedSequence with absolute timestamps.
type protoWriter struct {
	w        *blockWriter
	out      []byte
	msg      []byte // the TrackEvent or TrackDescriptor being built
	sub      []byte
	interned []byte // InternedData of the packet being built
	err      error
	cleared  bool
	n        int64 // bytes written from out

	// iids, 0 until numbered (one numbering for every sequence): event
	// names by what they stand for (API, string of the table, code) else by
	// text; categories; annotation names
	apiIID, strIID, codeIID []uint64
	objIID                  map[objName]uint64
	names                   map[string]uint64
	nNames                  uint64
	catIID                  [256]uint64
	nCats                   uint64
	keyIID                  [numKeys]uint64
	nKeys                   uint64

	shared  *sequence
	seqOf   []*sequence // by track uuid (1, 2, ... in the order declared)
	nextSeq uint64
}

// sequence is a packet sequence and what has been interned on it.
type sequence struct {
	id          uint64
	incremental bool     // a track's own: delta timestamps, the track by default
	track       uint64   // incremental: its track
	started     bool     // incremental: its first packet is out
	last        int64    // incremental: the time of its last packet
	names       []uint64 // bits by iid: event names interned
	cats        [4]uint64
	keys        uint64 // bits by argKey
}

// The annotation names a sequence interned are bits of a uint64.
var _ [64 - numKeys]struct{}

func (s *sequence) hasName(iid uint64) bool {
	return iid>>6 < uint64(len(s.names)) && s.names[iid>>6]&(1<<(iid&63)) != 0
}

func (s *sequence) addName(iid uint64) {
	for iid>>6 >= uint64(len(s.names)) {
		s.names = append(s.names, 0)
	}
	s.names[iid>>6] |= 1 << (iid & 63)
}

var _ sink = (*protoWriter)(nil)

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendTag appends the key of field f of wire type t.
func appendTag(b []byte, f protowire.Number, t protowire.Type) []byte {
	return appendUvarint(b, uint64(f)<<3|uint64(t))
}

func appendVarint(b []byte, f protowire.Number, v uint64) []byte {
	return appendUvarint(appendTag(b, f, protowire.VarintType), v)
}

func appendString(b []byte, f protowire.Number, s string) []byte {
	b = appendUvarint(appendTag(b, f, protowire.BytesType), uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, f protowire.Number, m []byte) []byte {
	b = appendUvarint(appendTag(b, f, protowire.BytesType), uint64(len(m)))
	return append(b, m...)
}

// appendHexText appends 0x and the lowercase hex digits of v.
func appendHexText(b []byte, v uint64) []byte {
	n := (bits.Len64(v|1) + 3) / 4
	b = append(b, '0', 'x')
	for i := n - 1; i >= 0; i-- {
		b = append(b, hexDigits[v>>(4*uint(i))&0xf])
	}
	return b
}

// packet appends a TracePacket of the fields in hdr and the message m in
// field f.
func (pw *protoWriter) packet(hdr []byte, f protowire.Number, m []byte) {
	inner := len(hdr) + uvarintLen(uint64(f)<<3) + uvarintLen(uint64(len(m))) + len(m)
	if len(pw.interned) > 0 {
		inner += 1 + uvarintLen(uint64(len(pw.interned))) + len(pw.interned)
	}
	o := pw.out
	o = append(o, fTracePacket<<3|byte(protowire.BytesType))
	o = appendUvarint(o, uint64(inner))
	o = append(o, hdr...)
	if len(pw.interned) > 0 {
		o = appendBytes(o, fPacketInternedData, pw.interned)
		pw.interned = pw.interned[:0]
	}
	o = appendBytes(o, f, m)
	pw.out = o
	if len(o) >= blockSize {
		pw.flush()
	}
}

func (pw *protoWriter) flush() {
	n := len(pw.out)
	var err error
	pw.out, err = pw.w.write(pw.out)
	pw.n += int64(n - len(pw.out))
	if pw.err == nil {
		pw.err = err
	}
}

func (pw *protoWriter) size() int64 { return pw.n + int64(len(pw.out)) }

func (pw *protoWriter) finish() error {
	pw.w.close() // its error is the last write's
	pw.flush()
	return pw.err
}

func (pw *protoWriter) declare(tr *track) {
	seq := pw.shared
	if tr.kind == trackThread || tr.kind == trackCounter {
		seq = &sequence{id: pw.nextSeq, incremental: true, track: tr.uuid}
		pw.nextSeq++
	}
	if tr.uuid != uint64(len(pw.seqOf)) {
		panic("perfetto: tracks not numbered in the order declared")
	}
	pw.seqOf = append(pw.seqOf, seq)
	m := pw.msg[:0]
	m = appendVarint(m, fTrackUUID, tr.uuid)
	if tr.parent != 0 {
		m = appendVarint(m, fTrackParentUUID, tr.parent)
	}
	switch tr.kind {
	case trackProcess:
		s := pw.sub[:0]
		s = appendVarint(s, fProcessPID, uint64(tr.pid))
		for _, a := range tr.cmd {
			s = appendString(s, fProcessCmdline, a)
		}
		s = appendString(s, fProcessName, tr.name)
		m = appendBytes(m, fTrackProcess, s)
		pw.sub = s
	case trackThread:
		s := pw.sub[:0]
		s = appendVarint(s, fThreadPID, uint64(tr.pid))
		s = appendVarint(s, fThreadTID, uint64(tr.tid))
		s = appendString(s, fThreadName, tr.name)
		m = appendBytes(m, fTrackThread, s)
		pw.sub = s
	case trackCounter:
		m = appendString(m, fTrackName, tr.name)
		s := appendVarint(pw.sub[:0], fCounterUnit, counterUnitBytes)
		m = appendBytes(m, fTrackCounter, s)
		pw.sub = s
	default:
		m = appendString(m, fTrackName, tr.name)
	}
	if tr.kind == trackGroup {
		m = appendVarint(m, fTrackChildOrder, childOrderingExplicit)
	}
	if tr.kind != trackProcess && tr.kind != trackThread {
		m = appendVarint(m, fTrackSiblingRnk, uint64(int64(tr.order)))
	}
	pw.msg = m
	var hdr [8]byte
	h := appendVarint(hdr[:0], fPacketSequenceID, sharedSequence)
	if !pw.cleared {
		h = appendVarint(h, fPacketSequenceFlags, seqIncrementalStateCleared)
		pw.cleared = true
	}
	pw.packet(h, fPacketTrackDesc, m)
}

// openEvent starts the TrackEvent packet of a record of type typ on tr at
// t in out, after the InternedData of its names (interned on seq before,
// by the caller): its timestamp, sequence, flags and the event's type and
// track. interned says the event refers to interned names (on the shared
// sequence, only such packets need its incremental state; on a track's
// own, every packet does). It returns where the packet's and the event's
// contents begin, each after one byte kept for its length: closeEvent
// writes the lengths.
func (pw *protoWriter) openEvent(seq *sequence, t int64, tr *track, typ byte, interned bool) (o []byte, packet, event int) {
	if seq.incremental && !seq.started {
		pw.startSequence(seq, t)
	}
	if seq.incremental && t >= seq.last && len(pw.interned) == 0 {
		// most records: written in place, into room made once
		o = pw.out
		n := len(o)
		if cap(o)-n < eventHeadRoom {
			o = slices.Grow(o, eventHeadRoom)
		}
		h := o[n : n+eventHeadRoom]
		h[0], h[1], h[2] = fTracePacket<<3|byte(protowire.BytesType), 0, fPacketTimestamp<<3
		i := putUvarint(h, 3, uint64(t-seq.last))
		seq.last = t
		h[i] = fPacketSequenceID << 3
		i = putUvarint(h, i+1, seq.id)
		h = h[i : i+6]
		h[0], h[1] = fPacketSequenceFlags<<3, seqNeedsIncrementalState
		h[2], h[3] = fPacketTrackEvent<<3|byte(protowire.BytesType), 0
		h[4], h[5] = fEventType<<3, typ
		return o[:n+i+6], n + 2, n + i + 4
	}
	o = append(pw.out, fTracePacket<<3|byte(protowire.BytesType), 0)
	packet = len(o)
	o = append(o, fPacketTimestamp<<3)
	switch {
	case !seq.incremental:
		o = appendUvarint(o, uint64(t))
	case t >= seq.last:
		o = appendUvarint(o, uint64(t-seq.last))
		seq.last = t
	default: // back in time: absolute, on the trace's clock
		o = appendUvarint(o, uint64(t))
		o = appendVarint(o, fPacketClockID, clockBoottime)
	}
	o = append(o, fPacketSequenceID<<3)
	o = appendUvarint(o, seq.id)
	if interned || seq.incremental {
		o = append(o, fPacketSequenceFlags<<3, seqNeedsIncrementalState)
	}
	if len(pw.interned) > 0 {
		o = appendBytes(o, fPacketInternedData, pw.interned)
		pw.interned = pw.interned[:0]
	}
	o = append(o, fPacketTrackEvent<<3|byte(protowire.BytesType), 0)
	event = len(o)
	o = append(o, fEventType<<3, typ)
	if !seq.incremental {
		o = append(o, fEventTrackUUID<<3)
		o = appendUvarint(o, tr.uuid)
	}
	return o, packet, event
}

// eventHeadRoom is room for the start of a record on its track's own
// sequence: five bytes of tags and lengths, two varints, three bytes.
const eventHeadRoom = 5 + 2*binary.MaxVarintLen64 + 3

// putUvarint writes v as a varint at b[i:] and returns where it ends.
func putUvarint(b []byte, i int, v uint64) int {
	for v >= 0x80 {
		b[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	b[i] = byte(v)
	return i + 1
}

// startSequence writes the first packet of a track's own sequence, at the
// time t of its first record: it clears the sequence's incremental state,
// makes the track and clockIncremental its defaults, and puts
// clockIncremental (incremental) at t on BOOTTIME, the trace's clock.
func (pw *protoWriter) startSequence(seq *sequence, t int64) {
	var hdr [64]byte
	h := appendVarint(hdr[:0], fPacketSequenceID, seq.id)
	h = appendVarint(h, fPacketSequenceFlags, seqIncrementalStateCleared)
	m := appendVarint(pw.msg[:0], fDefaultsClockID, clockIncremental)
	s := appendVarint(pw.sub[:0], fEventDefaultsTrack, seq.track)
	m = appendBytes(m, fDefaultsTrackEvent, s)
	h = appendBytes(h, fPacketDefaults, m) // before the snapshot, as the SDK writes it
	var clock [32]byte
	c := appendVarint(clock[:0], fClockID, clockBoottime)
	c = appendVarint(c, fClockTimestamp, uint64(t))
	s = appendBytes(s[:0], fSnapshotClocks, c)
	c = appendVarint(clock[:0], fClockID, clockIncremental)
	c = appendVarint(c, fClockTimestamp, uint64(t))
	c = appendVarint(c, fClockIncremental, 1)
	s = appendBytes(s, fSnapshotClocks, c)
	s = appendVarint(s, fSnapshotPrimaryClock, clockBoottime)
	pw.msg, pw.sub = m, s
	interned := pw.interned // the first record's: it goes with that record
	pw.interned = nil
	pw.packet(h, fPacketClockSnapshot, s)
	pw.interned = interned
	seq.started, seq.last = true, t
}

// closeEvent writes the lengths of the event and the packet opened at
// packet and event, moving their contents when a length takes more than
// the byte kept for it.
func (pw *protoWriter) closeEvent(o []byte, packet, event int) {
	if n := len(o) - packet; n < 0x80 { // and so is the event's: one byte each, in place
		o[event-1], o[packet-1] = byte(len(o)-event), byte(n)
	} else {
		o = putLen(o, event)
		o = putLen(o, packet)
	}
	pw.out = o
	if len(o) >= blockSize {
		pw.flush()
	}
}

// putLen writes the length of o[at:] as the uvarint of the byte before
// it, moving o[at:] when that takes more than a byte.
func putLen(o []byte, at int) []byte {
	n := len(o) - at
	if n < 0x80 {
		o[at-1] = byte(n)
		return o
	}
	k := uvarintLen(uint64(n))
	o = append(o, make([]byte, k-1)...)
	copy(o[at-1+k:], o[at:at+n])
	b := o[at-1 : at-1]
	appendUvarint(b, uint64(n))
	return o
}

// internKeys interns on seq the annotation names of args not interned
// there yet.
func (pw *protoWriter) internKeys(seq *sequence, args []arg) {
	for i := range args {
		if k := args[i].key; seq.keys&(1<<k) == 0 {
			pw.internKey(seq, k)
		}
	}
}

// internKeySet interns on seq the annotation names of the set keys (a bit
// by argKey) not interned there yet, in the order of the keys.
func (pw *protoWriter) internKeySet(seq *sequence, keys uint64) {
	for m := keys &^ seq.keys; m != 0; m &= m - 1 {
		pw.internKey(seq, argKey(bits.TrailingZeros64(m)))
	}
}

func (pw *protoWriter) internKey(seq *sequence, k argKey) {
	seq.keys |= 1 << k
	if pw.keyIID[k] == 0 {
		pw.nKeys++
		pw.keyIID[k] = pw.nKeys
	}
	pw.internEntry(fInternedAnnotNames, pw.keyIID[k], k.String())
}

// annotations appends args as DebugAnnotations; internKeys interned their
// names. An annotation name's iid is below 64 (one byte), so a number's
// annotation is at most 13 bytes and its length one byte: numbers, all but
// a few of the annotations, are written without working out lengths
// first.
func (pw *protoWriter) annotations(m []byte, args []arg) []byte {
	for i := range args {
		a := &args[i]
		switch a.kind {
		case argInt:
			m = pw.numberAnnot(m, a.key, fAnnotIntValue, uint64(a.num))
		case argHex:
			m = pw.numberAnnot(m, a.key, fAnnotPointerValue, uint64(a.num))
		default:
			m = pw.stringAnnot(m, a.key, a.str)
		}
	}
	return m
}

// numberAnnot appends the annotation k of the number v in field f of the
// DebugAnnotation (int or pointer value).
func (pw *protoWriter) numberAnnot(m []byte, k argKey, f byte, v uint64) []byte {
	m = append(m, fEventDebugAnnots<<3|byte(protowire.BytesType), byte(3+uvarintLen(v)),
		fAnnotNameIID<<3, byte(pw.keyIID[k]), f<<3|byte(protowire.VarintType))
	return appendUvarint(m, v)
}

// stringAnnot appends the annotation k of the text s.
func (pw *protoWriter) stringAnnot(m []byte, k argKey, s string) []byte {
	vlen := 1 + uvarintLen(uint64(len(s))) + len(s)
	m = append(m, fEventDebugAnnots<<3|byte(protowire.BytesType))
	m = appendUvarint(m, uint64(2+vlen))
	m = append(m, fAnnotNameIID<<3, byte(pw.keyIID[k]))
	return appendString(m, fAnnotStringValue, s)
}

// nameIID returns the iid of an event name, numbering it when new and
// interning it on seq when new there.
func (pw *protoWriter) nameIID(seq *sequence, n *sliceName) uint64 {
	var slot *uint64
	switch n.kind {
	case nameAPI:
		if int(n.id) < len(pw.apiIID) {
			slot = &pw.apiIID[n.id]
		}
	case nameString:
		if int(n.id) < len(pw.strIID) {
			slot = &pw.strIID[n.id]
		}
	case nameCode:
		if int(n.id) < len(pw.codeIID) {
			slot = &pw.codeIID[n.id]
		}
	}
	var iid uint64
	switch {
	case slot != nil && *slot != 0:
		iid = *slot
	case n.kind == nameObject:
		var ok bool
		if iid, ok = pw.objIID[n.obj]; !ok {
			if len(pw.objIID) >= maxObjectNames {
				return 0 // written in full: a trace that makes objects forever names each once
			}
			iid = pw.textIID(string(n.b))
			pw.objIID[n.obj] = iid
		}
	default:
		iid = pw.textIID(n.s)
		if slot != nil {
			*slot = iid
		}
	}
	if !seq.hasName(iid) {
		seq.addName(iid)
		if n.kind == nameObject {
			n.s = string(n.b)
		}
		pw.internEntry(fInternedEventNames, iid, n.s)
	}
	return iid
}

// maxObjectNames is how many lifetimes' names (an object's kind, handle
// and given name) are interned; those past it are written in full in their
// slice (TrackEvent.name), so that a trace making new objects forever (an
// allocation at a new address each time) keeps no table that grows with
// them. A name is interned to be written once and referred to by number:
// past the first few thousand objects, a new name is mostly new.
const maxObjectNames = 1 << 14

// textIID returns the iid of the event name s, numbering it when new: two
// keys of one name (an API and a range named alike) share its iid.
func (pw *protoWriter) textIID(s string) uint64 {
	iid, ok := pw.names[s]
	if !ok {
		pw.nNames++
		iid = pw.nNames
		pw.names[s] = iid
	}
	return iid
}

func (pw *protoWriter) begin(t int64, tr *track, name sliceName, cat category, args []arg, flowOut, flowIn uint64, _ int64) {
	// the names first: their InternedData goes before the event
	seq := pw.seqOf[tr.uuid]
	nameIID, catIID := pw.nameIID(seq, &name), pw.catIIDOf(seq, cat)
	pw.internKeys(seq, args)
	m, packet, event := pw.openEvent(seq, t, tr, typeSliceBegin, true)
	if nameIID == 0 { // a lifetime's name past maxObjectNames
		m = appendBytes(m, fEventName, name.b)
		m = append(m, fEventCategoryIIDs<<3)
		m = appendUvarint(m, catIID)
	} else {
		m = appendNames(m, nameIID, catIID)
	}
	m = pw.annotations(m, args)
	pw.closeEvent(appendFlows(m, flowOut, flowIn), packet, event)
}

// call is begin with a call's arguments, written from its fields in the
// order of their keys (as begin writes arguments: in their order).
func (pw *protoWriter) call(t int64, tr *track, name *sliceName, cat category, c *callFields, flowOut, flowIn uint64, _ int64) {
	seq := pw.seqOf[tr.uuid]
	nameIID, catIID := pw.nameIID(seq, name), pw.catIIDOf(seq, cat)
	if keys := c.keys(); keys&^seq.keys != 0 {
		pw.internKeySet(seq, keys)
	}
	m, packet, event := pw.openEvent(seq, t, tr, typeSliceBegin, true)
	m = appendNames(m, nameIID, catIID)
	if !c.result.OK() {
		m = pw.stringAnnot(m, keyResult, c.result.String())
	}
	if c.handle != 0 {
		m = pw.numberAnnot(m, keyHandle, fAnnotPointerValue, c.handle)
	}
	if c.stream != 0 {
		m = pw.numberAnnot(m, keyStream, fAnnotPointerValue, c.stream)
	}
	if c.size != 0 {
		m = pw.numberAnnot(m, keyBytes, fAnnotIntValue, c.size)
	}
	if c.device != trace.NoDevice {
		m = pw.numberAnnot(m, keyDevice, fAnnotIntValue, uint64(int64(c.device)))
	}
	if c.caller != "" {
		m = pw.stringAnnot(m, keyCaller, c.caller)
	}
	pw.closeEvent(appendFlows(m, flowOut, flowIn), packet, event)
}

// catIIDOf returns the iid of a category, numbering it when new and
// interning it on seq when new there.
func (pw *protoWriter) catIIDOf(seq *sequence, cat category) uint64 {
	catIID := pw.catIID[cat]
	if catIID == 0 {
		pw.nCats++
		catIID = pw.nCats
		pw.catIID[cat] = catIID
	}
	if seq.cats[cat>>6]&(1<<(cat&63)) == 0 {
		seq.cats[cat>>6] |= 1 << (cat & 63)
		pw.internEntry(fInternedCategories, catIID, cat.String())
	}
	return catIID
}

// appendNames appends a slice's name and category iids.
func appendNames(m []byte, nameIID, catIID uint64) []byte {
	m = append(m, fEventNameIID<<3)
	m = appendUvarint(m, nameIID)
	m = append(m, fEventCategoryIIDs<<3)
	return appendUvarint(m, catIID)
}

// appendFlows appends the flows out of and into a slice, those not 0.
func appendFlows(m []byte, flowOut, flowIn uint64) []byte {
	if flowOut != 0 {
		m = appendTag(m, fEventFlowIDs, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, flowOut)
	}
	if flowIn != 0 {
		m = appendTag(m, fEventTermFlowIDs, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, flowIn)
	}
	return m
}

func (pw *protoWriter) end(t int64, tr *track, args []arg, _ bool) {
	seq := pw.seqOf[tr.uuid]
	pw.internKeys(seq, args)
	m, packet, event := pw.openEvent(seq, t, tr, typeSliceEnd, len(args) > 0)
	m = pw.annotations(m, args)
	pw.closeEvent(m, packet, event)
}

func (pw *protoWriter) complete(tr *track, start, end int64, name sliceName, cat category, args []arg) {
	pw.begin(start, tr, name, cat, args, 0, 0, end-start)
	pw.end(end, tr, nil, true)
}

func (pw *protoWriter) instant(t int64, tr *track, name string) {
	m, packet, event := pw.openEvent(pw.seqOf[tr.uuid], t, tr, typeInstant, false)
	m = appendString(m, fEventName, name)
	pw.closeEvent(m, packet, event)
}

func (pw *protoWriter) counter(t int64, tr *track, v int64) {
	m, packet, event := pw.openEvent(pw.seqOf[tr.uuid], t, tr, typeCounter, false)
	m = appendVarint(m, fEventCounterValue, uint64(v))
	pw.closeEvent(m, packet, event)
}

// internEntry adds an entry of an InternedData table to the packet being
// built.
func (pw *protoWriter) internEntry(table protowire.Number, iid uint64, name string) {
	b := pw.interned
	b = appendTag(b, table, protowire.BytesType)
	b = appendUvarint(b, uint64(1+uvarintLen(iid)+1+uvarintLen(uint64(len(name)))+len(name)))
	b = appendVarint(b, fInternedIID, iid)
	b = appendString(b, fInternedName, name)
	pw.interned = b
}
