package perfetto

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// A decoder for the Perfetto messages this package writes, from the schema in
// Perfetto's public protos (trace.proto, trace_packet.proto,
// trace_packet_defaults.proto, clock_snapshot.proto, track_descriptor.proto,
// process_descriptor.proto, thread_descriptor.proto, counter_descriptor.proto,
// track_event.proto, debug_annotation.proto, interned_data.proto). Fields it does not know are errors, so a test fails
// when the writer emits something unverified.

type pTrackDesc struct {
	UUID, Parent  uint64
	Name          string
	Process       *pProcess
	Thread        *pThread
	Counter       *pCounter
	ChildOrder    uint64
	SiblingRank   int64
	hasChildOrder bool
}

type pProcess struct {
	PID     int64
	Cmdline []string
	Name    string
}

type pThread struct {
	PID, TID int64
	Name     string
}

type pCounter struct{ Unit uint64 }

type pAnnot struct {
	Name    string
	NameIID uint64
	Str     string
	Int     int64
	isInt   bool
}

type pEvent struct {
	Type         uint64
	Track        uint64
	NameIID      uint64
	Name         string
	Categories   []string
	CategoryIIDs []uint64
	Annots       []pAnnot
	CounterValue int64
	FlowIDs      []uint64
	TermFlowIDs  []uint64
}

// pDefaults is a TracePacketDefaults.
type pDefaults struct {
	ClockID   uint64 // 0: none
	TrackUUID uint64 // its TrackEventDefaults' track_uuid, 0: none
}

type pClock struct {
	ID, Timestamp uint64
	Incremental   bool
}

type pSnapshot struct {
	Clocks  []pClock
	Primary uint64
}

type pPacket struct {
	Timestamp  uint64
	hasTS      bool
	ClockID    uint64 // timestamp_clock_id, 0: none
	SeqID      uint64
	SeqFlags   uint64
	Defaults   *pDefaults
	Snapshot   *pSnapshot
	Track      *pTrackDesc
	Event      *pEvent
	EventNames map[uint64]string
	Categories map[uint64]string
	AnnotNames map[uint64]string
}

type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			return nil, fmt.Errorf("field %d: unexpected wire type %d", num, typ)
		}
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

func want(f field, t protowire.Type, msg string) error {
	if f.typ != t {
		return fmt.Errorf("%s field %d: wire type %d, want %d", msg, f.num, f.typ, t)
	}
	return nil
}

func unknown(msg string, f field) error { return fmt.Errorf("%s: unknown field %d", msg, f.num) }

func decodeTrace(b []byte) ([]pPacket, error) {
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	var out []pPacket
	for _, f := range fs {
		if f.num != 1 || f.typ != protowire.BytesType {
			return nil, unknown("Trace", f)
		}
		p, err := decodePacket(f.b)
		if err != nil {
			return nil, fmt.Errorf("packet %d: %w", len(out), err)
		}
		out = append(out, p)
	}
	return out, nil
}

func decodePacket(b []byte) (pPacket, error) {
	var p pPacket
	fs, err := fields(b)
	if err != nil {
		return p, err
	}
	for _, f := range fs {
		switch f.num {
		case 8:
			err = want(f, protowire.VarintType, "TracePacket")
			p.Timestamp, p.hasTS = f.v, true
		case 10:
			err = want(f, protowire.VarintType, "TracePacket")
			p.SeqID = f.v
		case 13:
			err = want(f, protowire.VarintType, "TracePacket")
			p.SeqFlags = f.v
		case 58:
			err = want(f, protowire.VarintType, "TracePacket")
			p.ClockID = f.v
		case 59:
			if err = want(f, protowire.BytesType, "TracePacket"); err == nil {
				p.Defaults, err = decodeDefaults(f.b)
			}
		case 6:
			if err = want(f, protowire.BytesType, "TracePacket"); err == nil {
				p.Snapshot, err = decodeSnapshot(f.b)
			}
		case 60:
			if err = want(f, protowire.BytesType, "TracePacket"); err == nil {
				p.Track, err = decodeTrackDesc(f.b)
			}
		case 11:
			if err = want(f, protowire.BytesType, "TracePacket"); err == nil {
				p.Event, err = decodeEvent(f.b)
			}
		case 12:
			if err = want(f, protowire.BytesType, "TracePacket"); err == nil {
				p.Categories, p.EventNames, p.AnnotNames, err = decodeInterned(f.b)
			}
		default:
			err = unknown("TracePacket", f)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func decodeDefaults(b []byte) (*pDefaults, error) {
	d := &pDefaults{}
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		switch f.num {
		case 58:
			err = want(f, protowire.VarintType, "TracePacketDefaults")
			d.ClockID = f.v
		case 11:
			var sub []field
			if sub, err = fields(f.b); err == nil {
				for _, s := range sub {
					if s.num != 11 || s.typ != protowire.VarintType {
						err = unknown("TrackEventDefaults", s)
					}
					d.TrackUUID = s.v
				}
			}
		default:
			err = unknown("TracePacketDefaults", f)
		}
		if err != nil {
			return nil, err
		}
	}
	return d, nil
}

func decodeSnapshot(b []byte) (*pSnapshot, error) {
	sn := &pSnapshot{}
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		switch f.num {
		case 1:
			var c pClock
			var sub []field
			if sub, err = fields(f.b); err == nil {
				for _, s := range sub {
					switch s.num {
					case 1:
						c.ID = s.v
					case 2:
						c.Timestamp = s.v
					case 3:
						c.Incremental = s.v != 0
					default:
						err = unknown("ClockSnapshot.Clock", s)
					}
				}
			}
			sn.Clocks = append(sn.Clocks, c)
		case 2:
			err = want(f, protowire.VarintType, "ClockSnapshot")
			sn.Primary = f.v
		default:
			err = unknown("ClockSnapshot", f)
		}
		if err != nil {
			return nil, err
		}
	}
	return sn, nil
}

func decodeTrackDesc(b []byte) (*pTrackDesc, error) {
	d := &pTrackDesc{}
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		switch f.num {
		case 1:
			err = want(f, protowire.VarintType, "TrackDescriptor")
			d.UUID = f.v
		case 5:
			err = want(f, protowire.VarintType, "TrackDescriptor")
			d.Parent = f.v
		case 2:
			err = want(f, protowire.BytesType, "TrackDescriptor")
			d.Name = string(f.b)
		case 11:
			err = want(f, protowire.VarintType, "TrackDescriptor")
			d.ChildOrder, d.hasChildOrder = f.v, true
		case 12:
			err = want(f, protowire.VarintType, "TrackDescriptor")
			d.SiblingRank = int64(int32(f.v))
		case 3:
			d.Process = &pProcess{}
			var sub []field
			if sub, err = fields(f.b); err == nil {
				for _, s := range sub {
					switch s.num {
					case 1:
						d.Process.PID = int64(int32(s.v))
					case 2:
						d.Process.Cmdline = append(d.Process.Cmdline, string(s.b))
					case 6:
						d.Process.Name = string(s.b)
					default:
						err = unknown("ProcessDescriptor", s)
					}
				}
			}
		case 4:
			d.Thread = &pThread{}
			var sub []field
			if sub, err = fields(f.b); err == nil {
				for _, s := range sub {
					switch s.num {
					case 1:
						d.Thread.PID = int64(int32(s.v))
					case 2:
						d.Thread.TID = int64(int32(s.v))
					case 5:
						d.Thread.Name = string(s.b)
					default:
						err = unknown("ThreadDescriptor", s)
					}
				}
			}
		case 8:
			d.Counter = &pCounter{}
			var sub []field
			if sub, err = fields(f.b); err == nil {
				for _, s := range sub {
					if s.num != 3 {
						err = unknown("CounterDescriptor", s)
					}
					d.Counter.Unit = s.v
				}
			}
		default:
			err = unknown("TrackDescriptor", f)
		}
		if err != nil {
			return nil, err
		}
	}
	return d, nil
}

func decodeEvent(b []byte) (*pEvent, error) {
	e := &pEvent{}
	fs, err := fields(b)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		switch f.num {
		case 9:
			err = want(f, protowire.VarintType, "TrackEvent")
			e.Type = f.v
		case 11:
			err = want(f, protowire.VarintType, "TrackEvent")
			e.Track = f.v
		case 10:
			err = want(f, protowire.VarintType, "TrackEvent")
			e.NameIID = f.v
		case 23:
			err = want(f, protowire.BytesType, "TrackEvent")
			e.Name = string(f.b)
		case 22:
			err = want(f, protowire.BytesType, "TrackEvent")
			e.Categories = append(e.Categories, string(f.b))
		case 3:
			err = want(f, protowire.VarintType, "TrackEvent")
			e.CategoryIIDs = append(e.CategoryIIDs, f.v)
		case 30:
			err = want(f, protowire.VarintType, "TrackEvent")
			e.CounterValue = int64(f.v)
		case 47:
			err = want(f, protowire.Fixed64Type, "TrackEvent")
			e.FlowIDs = append(e.FlowIDs, f.v)
		case 48:
			err = want(f, protowire.Fixed64Type, "TrackEvent")
			e.TermFlowIDs = append(e.TermFlowIDs, f.v)
		case 4:
			var a pAnnot
			var sub []field
			if sub, err = fields(f.b); err == nil {
				for _, s := range sub {
					switch s.num {
					case 10:
						a.Name = string(s.b)
					case 1:
						a.NameIID = s.v
					case 6:
						a.Str = string(s.b)
					case 4:
						a.Int, a.isInt = int64(s.v), true
					case 7: // pointer_value: shown as 0x and lowercase hex digits
						a.Str = "0x" + strconv.FormatUint(s.v, 16)
					default:
						err = unknown("DebugAnnotation", s)
					}
				}
			}
			e.Annots = append(e.Annots, a)
		default:
			err = unknown("TrackEvent", f)
		}
		if err != nil {
			return nil, err
		}
	}
	return e, nil
}

func decodeInterned(b []byte) (cats, names, annots map[uint64]string, err error) {
	tables := map[protowire.Number]map[uint64]string{1: {}, 2: {}, 3: {}}
	fs, err := fields(b)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, f := range fs {
		t, ok := tables[f.num]
		if !ok {
			return nil, nil, nil, unknown("InternedData", f)
		}
		sub, err := fields(f.b)
		if err != nil {
			return nil, nil, nil, err
		}
		var iid uint64
		var name string
		for _, s := range sub {
			switch s.num {
			case 1:
				iid = s.v
			case 2:
				name = string(s.b)
			default:
				return nil, nil, nil, unknown("interned entry", s)
			}
		}
		t[iid] = name
	}
	return tables[1], tables[2], tables[3], nil
}
