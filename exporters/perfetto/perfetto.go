package perfetto

import (
	"bufio"
	"io"
	"math/bits"
	"strconv"

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
	fAnnotNameIID     = 1
	fAnnotIntValue    = 4
	fAnnotStringValue = 6
	fAnnotName        = 10

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
	pw := &protoWriter{w: bufio.NewWriterSize(w, 1<<16)}
	for i := range pw.iids {
		pw.iids[i] = map[string]uint64{}
	}
	return newWriter(t, pw)
}

// protoWriter renders the timeline as TracePackets of one sequence, with
// event names, categories and annotation names interned: each is written
// once, in the InternedData of the first packet that uses it.
type protoWriter struct {
	w        *bufio.Writer
	pkt      []byte // packet being built
	msg      []byte // nested message scratch
	sub      []byte
	iids     [4]map[string]uint64 // by InternedData field: categories, event names, annotation names
	interned []byte               // InternedData of the packet being built
	err      error
	cleared  bool
	n        int64
}

var _ sink = (*protoWriter)(nil)

func (pw *protoWriter) packet() {
	if pw.err != nil {
		return
	}
	var hdr [16]byte
	h := protowire.AppendTag(hdr[:0], fTracePacket, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(len(pw.pkt)))
	pw.n += int64(len(h) + len(pw.pkt))
	if _, err := pw.w.Write(h); err != nil {
		pw.err = err
		return
	}
	if _, err := pw.w.Write(pw.pkt); err != nil {
		pw.err = err
	}
}

func (pw *protoWriter) size() int64 { return pw.n }

func (pw *protoWriter) finish() error {
	if pw.err != nil {
		return pw.err
	}
	return pw.w.Flush()
}

func appendString(b []byte, f protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendVarint(b []byte, f protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, f, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendBytes(b []byte, f protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

// appendHex appends field f as the text 0x... of v.
func appendHex(b []byte, f protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, f, protowire.BytesType)
	n := 2 + (bits.Len64(v)+3)/4
	if v == 0 {
		n = 3
	}
	b = protowire.AppendVarint(b, uint64(n))
	b = append(b, '0', 'x')
	return strconv.AppendUint(b, v, 16)
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
	p := pw.pkt[:0]
	p = appendVarint(p, fPacketSequenceID, sequenceID)
	if !pw.cleared {
		p = appendVarint(p, fPacketSequenceFlags, seqIncrementalStateCleared)
		pw.cleared = true
	}
	p = appendBytes(p, fPacketTrackDesc, m)
	pw.pkt = p
	pw.packet()
}

// event writes a TrackEvent packet at t from the message in pw.msg.
func (pw *protoWriter) event(t int64) {
	p := pw.pkt[:0]
	p = appendVarint(p, fPacketTimestamp, uint64(t))
	p = appendVarint(p, fPacketSequenceID, sequenceID)
	p = appendVarint(p, fPacketSequenceFlags, seqNeedsIncrementalState)
	if len(pw.interned) > 0 {
		p = appendBytes(p, fPacketInternedData, pw.interned)
		pw.interned = pw.interned[:0]
	}
	p = appendBytes(p, fPacketTrackEvent, pw.msg)
	pw.pkt = p
	pw.packet()
}

func (pw *protoWriter) annotations(m []byte, args []arg) []byte {
	for _, a := range args {
		d := pw.sub[:0]
		d = appendVarint(d, fAnnotNameIID, pw.intern(fInternedAnnotNames, a.key))
		switch a.kind {
		case argInt:
			d = appendVarint(d, fAnnotIntValue, uint64(a.num))
		case argHex:
			d = appendHex(d, fAnnotStringValue, uint64(a.num))
		default:
			d = appendString(d, fAnnotStringValue, a.str)
		}
		m = appendBytes(m, fEventDebugAnnots, d)
		pw.sub = d
	}
	return m
}

func (pw *protoWriter) begin(t int64, tr *track, name, cat string, args []arg, flowOut, flowIn uint64, _ int64) {
	m := pw.msg[:0]
	m = appendVarint(m, fEventType, typeSliceBegin)
	m = appendVarint(m, fEventTrackUUID, tr.uuid)
	m = appendVarint(m, fEventNameIID, pw.intern(fInternedEventNames, name))
	if cat != "" {
		m = appendVarint(m, fEventCategoryIIDs, pw.intern(fInternedCategories, cat))
	}
	m = pw.annotations(m, args)
	if flowOut != 0 {
		m = protowire.AppendTag(m, fEventFlowIDs, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, flowOut)
	}
	if flowIn != 0 {
		m = protowire.AppendTag(m, fEventTermFlowIDs, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, flowIn)
	}
	pw.msg = m
	pw.event(t)
}

func (pw *protoWriter) end(t int64, tr *track, args []arg, _ bool) {
	m := pw.msg[:0]
	m = appendVarint(m, fEventType, typeSliceEnd)
	m = appendVarint(m, fEventTrackUUID, tr.uuid)
	m = pw.annotations(m, args)
	pw.msg = m
	pw.event(t)
}

func (pw *protoWriter) complete(tr *track, start, end int64, name, cat string, args []arg) {
	pw.begin(start, tr, name, cat, args, 0, 0, end-start)
	pw.end(end, tr, nil, true)
}

func (pw *protoWriter) instant(t int64, tr *track, name string) {
	m := pw.msg[:0]
	m = appendVarint(m, fEventType, typeInstant)
	m = appendVarint(m, fEventTrackUUID, tr.uuid)
	m = appendString(m, fEventName, name)
	pw.msg = m
	pw.event(t)
}

func (pw *protoWriter) counter(t int64, tr *track, v int64) {
	m := pw.msg[:0]
	m = appendVarint(m, fEventType, typeCounter)
	m = appendVarint(m, fEventTrackUUID, tr.uuid)
	m = appendVarint(m, fEventCounterValue, uint64(v))
	pw.msg = m
	pw.event(t)
}

// intern returns the iid of name in the given InternedData table, adding an
// entry to the packet being built when the name is new.
func (pw *protoWriter) intern(table protowire.Number, name string) uint64 {
	m := pw.iids[table]
	if iid, ok := m[name]; ok {
		return iid
	}
	iid := uint64(len(m) + 1)
	m[name] = iid
	var e []byte
	e = appendVarint(e, fInternedIID, iid)
	e = appendString(e, fInternedName, name)
	pw.interned = appendBytes(pw.interned, table, e)
	return iid
}
