package perfetto

import (
	"io"
	"math/bits"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// Field numbers from Perfetto's public protos (protos/perfetto/trace/...).
const (
	fTracePacket = 1 // Trace.packet

	// TracePacket
	fPacketTimestamp     = 8
	fPacketSequenceID    = 10 // trusted_packet_sequence_id
	fPacketTrackEvent    = 11
	fPacketInternedData  = 12
	fPacketSequenceFlags = 13
	fPacketTrackDesc     = 60

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

	sequenceID = 1
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
	pw := &protoWriter{names: map[string]uint64{}, objIID: map[objName]uint64{}}
	pw.w, pw.out = newBlockWriter(w, blockSize+1<<16)
	pw.apiIID = make([]uint64, len(trace.APIs())+1)
	pw.strIID = make([]uint64, len(t.Strings))
	pw.codeIID = make([]uint64, len(t.Code))
	return newWriter(t, pw)
}

// blockSize is how much output the writers gather before they write it:
// past the buffer of the command's output file (256 KiB), so that blocks go
// to the file without being copied again.
const blockSize = 1 << 20

// protoWriter renders the timeline as TracePackets of one sequence, with
// event names, categories and annotation names interned: each is written
// once, in the InternedData of the first packet that uses it. Packets are
// appended to out and written in blocks of blockSize.
type protoWriter struct {
	w        *blockWriter
	out      []byte
	msg      []byte // the TrackEvent or TrackDescriptor being built
	sub      []byte
	interned []byte // InternedData of the packet being built
	err      error
	cleared  bool
	n        int64 // bytes written from out

	// iids, 0 until interned: event names by what they stand for (API,
	// string of the table, code) else by text; categories; annotation names
	apiIID, strIID, codeIID []uint64
	objIID                  map[objName]uint64
	names                   map[string]uint64
	nNames                  uint64
	catIID                  [256]uint64
	nCats                   uint64
	keyIID                  [numKeys]uint64
	nKeys                   uint64
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
	pw.n += int64(len(pw.out))
	var err error
	pw.out, err = pw.w.write(pw.out)
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
	h := appendVarint(hdr[:0], fPacketSequenceID, sequenceID)
	if !pw.cleared {
		h = appendVarint(h, fPacketSequenceFlags, seqIncrementalStateCleared)
		pw.cleared = true
	}
	pw.packet(h, fPacketTrackDesc, m)
}

// openEvent starts a TrackEvent packet at t in out, after the InternedData
// of its names (interned before, by the caller); interned says the event
// refers to interned names (its packet needs the sequence's incremental
// state). It returns where the packet's and the event's contents begin,
// each after one byte kept for its length: closeEvent writes the lengths.
func (pw *protoWriter) openEvent(t int64, interned bool) (o []byte, packet, event int) {
	o = append(pw.out, fTracePacket<<3|byte(protowire.BytesType), 0)
	packet = len(o)
	o = append(o, fPacketTimestamp<<3)
	o = appendUvarint(o, uint64(t))
	o = append(o, fPacketSequenceID<<3, sequenceID)
	if interned {
		o = append(o, fPacketSequenceFlags<<3, seqNeedsIncrementalState)
	}
	if len(pw.interned) > 0 {
		o = appendBytes(o, fPacketInternedData, pw.interned)
		pw.interned = pw.interned[:0]
	}
	o = append(o, fPacketTrackEvent<<3|byte(protowire.BytesType), 0)
	return o, packet, len(o)
}

// closeEvent writes the lengths of the event and the packet opened at
// packet and event, moving their contents when a length takes more than
// the byte kept for it.
func (pw *protoWriter) closeEvent(o []byte, packet, event int) {
	o = putLen(o, event)
	o = putLen(o, packet)
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

// internKeys interns the annotation names of args not interned yet.
func (pw *protoWriter) internKeys(args []arg) {
	for i := range args {
		if k := args[i].key; pw.keyIID[k] == 0 {
			pw.nKeys++
			pw.keyIID[k] = pw.nKeys
			pw.internEntry(fInternedAnnotNames, pw.nKeys, k.String())
		}
	}
}

// annotations appends args as DebugAnnotations; internKeys interned their
// names.
func (pw *protoWriter) annotations(m []byte, args []arg) []byte {
	for i := range args {
		a := &args[i]
		iid := pw.keyIID[a.key]
		var vlen int
		switch a.kind {
		case argInt:
			vlen = 1 + uvarintLen(uint64(a.num))
		case argHex:
			vlen = 1 + uvarintLen(uint64(a.num))
		default:
			vlen = 1 + uvarintLen(uint64(len(a.str))) + len(a.str)
		}
		m = append(m, fEventDebugAnnots<<3|byte(protowire.BytesType))
		m = appendUvarint(m, uint64(1+uvarintLen(iid)+vlen))
		m = appendVarint(m, fAnnotNameIID, iid)
		switch a.kind {
		case argInt:
			m = appendVarint(m, fAnnotIntValue, uint64(a.num))
		case argHex:
			m = appendVarint(m, fAnnotPointerValue, uint64(a.num))
		default:
			m = appendString(m, fAnnotStringValue, a.str)
		}
	}
	return m
}

// nameIID returns the iid of an event name, interning it when new.
func (pw *protoWriter) nameIID(n sliceName) uint64 {
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
	if slot != nil && *slot != 0 {
		return *slot
	}
	if n.kind == nameObject {
		if iid, ok := pw.objIID[n.obj]; ok {
			return iid
		}
		n.s = string(n.b)
	}
	// by text: two keys of one name (an API and a range named alike) share
	// its iid
	iid, ok := pw.names[n.s]
	if !ok {
		pw.nNames++
		iid = pw.nNames
		pw.names[n.s] = iid
		pw.internEntry(fInternedEventNames, iid, n.s)
	}
	if slot != nil {
		*slot = iid
	}
	if n.kind == nameObject {
		pw.objIID[n.obj] = iid
	}
	return iid
}

func (pw *protoWriter) begin(t int64, tr *track, name sliceName, cat category, args []arg, flowOut, flowIn uint64, _ int64) {
	// the names first: their InternedData goes before the event
	nameIID := pw.nameIID(name)
	catIID := pw.catIID[cat]
	if catIID == 0 {
		pw.nCats++
		catIID = pw.nCats
		pw.catIID[cat] = catIID
		pw.internEntry(fInternedCategories, catIID, cat.String())
	}
	pw.internKeys(args)
	m, packet, event := pw.openEvent(t, true)
	m = append(m, fEventType<<3, typeSliceBegin, fEventTrackUUID<<3)
	m = appendUvarint(m, tr.uuid)
	m = append(m, fEventNameIID<<3)
	m = appendUvarint(m, nameIID)
	m = append(m, fEventCategoryIIDs<<3)
	m = appendUvarint(m, catIID)
	m = pw.annotations(m, args)
	if flowOut != 0 {
		m = appendTag(m, fEventFlowIDs, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, flowOut)
	}
	if flowIn != 0 {
		m = appendTag(m, fEventTermFlowIDs, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, flowIn)
	}
	pw.closeEvent(m, packet, event)
}

func (pw *protoWriter) end(t int64, tr *track, args []arg, _ bool) {
	pw.internKeys(args)
	m, packet, event := pw.openEvent(t, len(args) > 0)
	m = append(m, fEventType<<3, typeSliceEnd, fEventTrackUUID<<3)
	m = appendUvarint(m, tr.uuid)
	m = pw.annotations(m, args)
	pw.closeEvent(m, packet, event)
}

func (pw *protoWriter) complete(tr *track, start, end int64, name sliceName, cat category, args []arg) {
	pw.begin(start, tr, name, cat, args, 0, 0, end-start)
	pw.end(end, tr, nil, true)
}

func (pw *protoWriter) instant(t int64, tr *track, name string) {
	m, packet, event := pw.openEvent(t, false)
	m = append(m, fEventType<<3, typeInstant, fEventTrackUUID<<3)
	m = appendUvarint(m, tr.uuid)
	m = appendString(m, fEventName, name)
	pw.closeEvent(m, packet, event)
}

func (pw *protoWriter) counter(t int64, tr *track, v int64) {
	m, packet, event := pw.openEvent(t, false)
	m = append(m, fEventType<<3, typeCounter, fEventTrackUUID<<3)
	m = appendUvarint(m, tr.uuid)
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
