package legacy

import (
	"bufio"
	"io"
	"sort"

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
// TracePackets), analysing it once (package analysis). Events must be in
// trace.SortEvents order.
func Write(w io.Writer, t *trace.Trace) error {
	tl, a := analyse(t)
	return tl.WriteProto(w, a)
}

// WriteProto writes the timeline as a Perfetto protobuf trace; a is the
// analysis whose replay fed it.
func (tl *Timeline) WriteProto(w io.Writer, a *analysis.Analysis) error {
	return writeProto(w, tl.build(a))
}

// op is one TrackEvent to write, ordered by time.
type op struct {
	t     int64
	seq   int
	typ   uint8
	track int
	sl    *slice
	name  string
	value int64
}

func (tl *timeline) ops() []op {
	out := make([]op, 0, 2*len(tl.slices)+len(tl.instants)+len(tl.samples))
	seq := 0
	// per track, slices are stored in begin order and properly nested; emit
	// begins and ends with one stack per track
	byTrack := map[int][]int{}
	for i := range tl.slices {
		byTrack[tl.slices[i].track] = append(byTrack[tl.slices[i].track], i)
	}
	tracks := make([]int, 0, len(byTrack))
	for tr := range byTrack {
		tracks = append(tracks, tr)
	}
	sort.Ints(tracks)
	for _, tr := range tracks {
		var stack []*slice
		for _, i := range byTrack[tr] {
			s := &tl.slices[i]
			// thread slices close down to their parent, others by time
			for len(stack) > 0 && (s.nested && stack[len(stack)-1] != parentOf(tl, s) ||
				!s.nested && stack[len(stack)-1].end <= s.start) {
				top := stack[len(stack)-1]
				out = append(out, op{t: top.end, seq: seq, typ: typeSliceEnd, track: tr})
				seq++
				stack = stack[:len(stack)-1]
			}
			out = append(out, op{t: s.start, seq: seq, typ: typeSliceBegin, track: tr, sl: s})
			seq++
			stack = append(stack, s)
		}
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			out = append(out, op{t: top.end, seq: seq, typ: typeSliceEnd, track: tr})
			seq++
			stack = stack[:len(stack)-1]
		}
	}
	for _, in := range tl.instants {
		out = append(out, op{t: in.t, seq: seq, typ: typeInstant, track: in.track, name: in.name})
		seq++
	}
	for _, s := range tl.samples {
		out = append(out, op{t: s.t, seq: seq, typ: typeCounter, track: s.track, value: s.value})
		seq++
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].t != out[j].t {
			return out[i].t < out[j].t
		}
		return out[i].seq < out[j].seq
	})
	return out
}

// parentOf returns the slice s is nested in, nil at the top.
func parentOf(tl *timeline, s *slice) *slice {
	if s.up == 0 {
		return nil
	}
	return &tl.slices[s.up-1]
}

type protoWriter struct {
	w        *bufio.Writer
	pkt      []byte // packet being built
	msg      []byte // nested message scratch
	sub      []byte
	iids     [4]map[string]uint64 // by InternedData field: categories, event names, annotation names
	interned []byte               // InternedData of the packet being built
	err      error
	cleared  bool
}

func (pw *protoWriter) packet() {
	if pw.err != nil {
		return
	}
	var hdr []byte
	hdr = protowire.AppendTag(hdr, fTracePacket, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(len(pw.pkt)))
	if _, err := pw.w.Write(hdr); err != nil {
		pw.err = err
		return
	}
	if _, err := pw.w.Write(pw.pkt); err != nil {
		pw.err = err
	}
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

func writeProto(w io.Writer, tl *timeline) error {
	pw := &protoWriter{w: bufio.NewWriterSize(w, 1<<16)}
	for i := range pw.iids {
		pw.iids[i] = map[string]uint64{}
	}
	for i := range tl.tracks {
		pw.trackDescriptor(&tl.tracks[i])
	}
	for _, o := range tl.ops() {
		pw.event(tl, &o)
	}
	if pw.err != nil {
		return pw.err
	}
	return pw.w.Flush()
}

func (pw *protoWriter) trackDescriptor(tr *track) {
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

func (pw *protoWriter) event(tl *timeline, o *op) {
	pw.interned = pw.interned[:0]
	m := pw.msg[:0]
	m = appendVarint(m, fEventType, uint64(o.typ))
	m = appendVarint(m, fEventTrackUUID, tl.tracks[o.track].uuid)
	switch o.typ {
	case typeSliceBegin:
		s := o.sl
		m = appendVarint(m, fEventNameIID, pw.intern(fInternedEventNames, s.name))
		if s.cat != "" {
			m = appendVarint(m, fEventCategoryIIDs, pw.intern(fInternedCategories, s.cat))
		}
		for _, a := range s.args {
			d := pw.sub[:0]
			d = appendVarint(d, fAnnotNameIID, pw.intern(fInternedAnnotNames, a.key))
			if a.isNo {
				d = appendVarint(d, fAnnotIntValue, uint64(a.num))
			} else {
				d = appendString(d, fAnnotStringValue, a.str)
			}
			m = appendBytes(m, fEventDebugAnnots, d)
			pw.sub = d
		}
		if s.flowOut != 0 {
			m = protowire.AppendTag(m, fEventFlowIDs, protowire.Fixed64Type)
			m = protowire.AppendFixed64(m, s.flowOut)
		}
		if s.flowIn != 0 {
			m = protowire.AppendTag(m, fEventTermFlowIDs, protowire.Fixed64Type)
			m = protowire.AppendFixed64(m, s.flowIn)
		}
	case typeInstant:
		m = appendString(m, fEventName, o.name)
	case typeCounter:
		m = appendVarint(m, fEventCounterValue, uint64(o.value))
	}
	pw.msg = m
	p := pw.pkt[:0]
	p = appendVarint(p, fPacketTimestamp, uint64(o.t))
	p = appendVarint(p, fPacketSequenceID, sequenceID)
	p = appendVarint(p, fPacketSequenceFlags, seqNeedsIncrementalState)
	if len(pw.interned) > 0 {
		p = appendBytes(p, fPacketInternedData, pw.interned)
	}
	p = appendBytes(p, fPacketTrackEvent, m)
	pw.pkt = p
	pw.packet()
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
