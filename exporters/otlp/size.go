package otlp

import (
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The encoded size of a span, for cutting batches, computed field by field:
// proto.Size reaches AnyValue's oneof through reflection, which made it most
// of the cost of building spans. Nothing about the schema is assumed: each
// tag is sized from its field's number in the generated descriptors
// (protowire.SizeTag), and the sizer is used only while the descriptors
// have exactly the fields, kinds and cardinalities it was written for
// (sizerFields); any other schema makes every size proto.Size's. Unknown
// fields are not counted: messages get them only from unmarshalling or
// SetUnknown, never in the builder, and reading them (ProtoReflect) cost as
// much as the rest of the sizing. Tests check it against proto.Size on
// every span the builder makes and on spans with every field set.

// spanSize is the encoded size of s (without its own tag and length), a
// span built in this package (no unknown fields).
func spanSize(s *tracepb.Span) int {
	if !sizer.exact {
		return proto.Size(s)
	}
	return sizer.spanLen(s)
}

// sizerFields are the fields the sizer encodes, by message, with their
// kinds and whether they repeat.
var sizerFields = map[protoreflect.FullName]map[protoreflect.Name]fieldShape{
	"opentelemetry.proto.trace.v1.Span": {
		"trace_id": {protoreflect.BytesKind, false}, "span_id": {protoreflect.BytesKind, false},
		"trace_state": {protoreflect.StringKind, false}, "parent_span_id": {protoreflect.BytesKind, false},
		"flags": {protoreflect.Fixed32Kind, false}, "name": {protoreflect.StringKind, false},
		"kind": {protoreflect.EnumKind, false}, "start_time_unix_nano": {protoreflect.Fixed64Kind, false},
		"end_time_unix_nano": {protoreflect.Fixed64Kind, false}, "attributes": {protoreflect.MessageKind, true},
		"dropped_attributes_count": {protoreflect.Uint32Kind, false}, "events": {protoreflect.MessageKind, true},
		"dropped_events_count": {protoreflect.Uint32Kind, false}, "links": {protoreflect.MessageKind, true},
		"dropped_links_count": {protoreflect.Uint32Kind, false}, "status": {protoreflect.MessageKind, false},
	},
	"opentelemetry.proto.trace.v1.Span.Event": {
		"time_unix_nano": {protoreflect.Fixed64Kind, false}, "name": {protoreflect.StringKind, false},
		"attributes": {protoreflect.MessageKind, true}, "dropped_attributes_count": {protoreflect.Uint32Kind, false},
	},
	"opentelemetry.proto.trace.v1.Span.Link": {
		"trace_id": {protoreflect.BytesKind, false}, "span_id": {protoreflect.BytesKind, false},
		"trace_state": {protoreflect.StringKind, false}, "attributes": {protoreflect.MessageKind, true},
		"dropped_attributes_count": {protoreflect.Uint32Kind, false}, "flags": {protoreflect.Fixed32Kind, false},
	},
	"opentelemetry.proto.trace.v1.Status": {
		"message": {protoreflect.StringKind, false}, "code": {protoreflect.EnumKind, false},
	},
	"opentelemetry.proto.common.v1.KeyValue": {
		"key": {protoreflect.StringKind, false}, "value": {protoreflect.MessageKind, false},
		"key_strindex": {protoreflect.Int32Kind, false},
	},
	"opentelemetry.proto.common.v1.AnyValue": {
		"string_value": {protoreflect.StringKind, false}, "bool_value": {protoreflect.BoolKind, false},
		"int_value": {protoreflect.Int64Kind, false}, "double_value": {protoreflect.DoubleKind, false},
		"array_value": {protoreflect.MessageKind, false}, "kvlist_value": {protoreflect.MessageKind, false},
		"bytes_value": {protoreflect.BytesKind, false}, "string_value_strindex": {protoreflect.Int32Kind, false},
	},
	"opentelemetry.proto.common.v1.ArrayValue": {
		"values": {protoreflect.MessageKind, true},
	},
	"opentelemetry.proto.common.v1.KeyValueList": {
		"values": {protoreflect.MessageKind, true},
	},
}

type fieldShape struct {
	kind     protoreflect.Kind
	repeated bool
}

// spanSizer holds the tag sizes of the fields it encodes.
type spanSizer struct {
	exact bool // the descriptors match sizerFields
	sp    struct {
		traceID, spanID, traceState, parent, flags, name, kind, start, end, attrs, droppedAttrs,
		events, droppedEvents, links, droppedLinks, status int
	}
	event struct{ time, name, attrs, droppedAttrs int }
	link  struct{ traceID, spanID, traceState, attrs, droppedAttrs, flags int }
	stat  struct{ message, code int }
	kv    struct{ key, value, keyStrindex int }
	any   struct{ str, boolean, integer, double, array, kvlist, bytes, strindex int }
	array struct{ values int }
	list  struct{ values int }
}

var sizer = newSpanSizer()

// newSpanSizer reads the tag sizes from the descriptors; exact is false
// unless every message has exactly the fields of sizerFields.
func newSpanSizer() *spanSizer {
	z := &spanSizer{exact: true}
	tags := func(m proto.Message, names ...string) []int {
		md := m.ProtoReflect().Descriptor()
		if !matchesShape(md, sizerFields[md.FullName()]) {
			z.exact = false
		}
		out := make([]int, len(names))
		for i, n := range names {
			if f := md.Fields().ByName(protoreflect.Name(n)); f != nil {
				out[i] = protowire.SizeTag(f.Number())
			} else {
				z.exact = false
			}
		}
		return out
	}
	t := tags(&tracepb.Span{}, "trace_id", "span_id", "trace_state", "parent_span_id", "flags", "name", "kind",
		"start_time_unix_nano", "end_time_unix_nano", "attributes", "dropped_attributes_count", "events",
		"dropped_events_count", "links", "dropped_links_count", "status")
	s := &z.sp
	s.traceID, s.spanID, s.traceState, s.parent, s.flags, s.name, s.kind, s.start, s.end, s.attrs, s.droppedAttrs,
		s.events, s.droppedEvents, s.links, s.droppedLinks, s.status = t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7],
		t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15]
	t = tags(&tracepb.Span_Event{}, "time_unix_nano", "name", "attributes", "dropped_attributes_count")
	z.event.time, z.event.name, z.event.attrs, z.event.droppedAttrs = t[0], t[1], t[2], t[3]
	t = tags(&tracepb.Span_Link{}, "trace_id", "span_id", "trace_state", "attributes", "dropped_attributes_count", "flags")
	z.link.traceID, z.link.spanID, z.link.traceState, z.link.attrs, z.link.droppedAttrs, z.link.flags =
		t[0], t[1], t[2], t[3], t[4], t[5]
	t = tags(&tracepb.Status{}, "message", "code")
	z.stat.message, z.stat.code = t[0], t[1]
	t = tags(&commonpb.KeyValue{}, "key", "value", "key_strindex")
	z.kv.key, z.kv.value, z.kv.keyStrindex = t[0], t[1], t[2]
	t = tags(&commonpb.AnyValue{}, "string_value", "bool_value", "int_value", "double_value", "array_value",
		"kvlist_value", "bytes_value", "string_value_strindex")
	z.any.str, z.any.boolean, z.any.integer, z.any.double, z.any.array, z.any.kvlist, z.any.bytes, z.any.strindex =
		t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]
	z.array.values = tags(&commonpb.ArrayValue{}, "values")[0]
	z.list.values = tags(&commonpb.KeyValueList{}, "values")[0]
	return z
}

// matchesShape reports whether md has exactly the fields of want.
func matchesShape(md protoreflect.MessageDescriptor, want map[protoreflect.Name]fieldShape) bool {
	fs := md.Fields()
	if want == nil || fs.Len() != len(want) {
		return false
	}
	for i := 0; i < fs.Len(); i++ {
		f := fs.Get(i)
		w, ok := want[f.Name()]
		if !ok || f.Kind() != w.kind || f.IsList() != w.repeated || f.IsMap() {
			return false
		}
	}
	return true
}

// Sizes of the encodings, as protobuf's: a field of implicit presence is
// left out at its zero value, a set oneof field or message field never.

func sizeLen(tag, n int) int { return tag + protowire.SizeBytes(n) }

func sizeStr(tag int, s string) int {
	if s == "" {
		return 0
	}
	return sizeLen(tag, len(s))
}

func sizeRaw(tag int, b []byte) int {
	if len(b) == 0 {
		return 0
	}
	return sizeLen(tag, len(b))
}

func sizeVar(tag int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tag + protowire.SizeVarint(v)
}

func sizeFixed32(tag int, v uint32) int {
	if v == 0 {
		return 0
	}
	return tag + 4
}

func sizeFixed64(tag int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tag + 8
}

func (z *spanSizer) spanLen(s *tracepb.Span) int {
	t := &z.sp
	n := sizeRaw(t.traceID, s.TraceId) + sizeRaw(t.spanID, s.SpanId) + sizeStr(t.traceState, s.TraceState) +
		sizeRaw(t.parent, s.ParentSpanId) + sizeFixed32(t.flags, s.Flags) + sizeStr(t.name, s.Name) +
		sizeVar(t.kind, uint64(int64(s.Kind))) + sizeFixed64(t.start, s.StartTimeUnixNano) +
		sizeFixed64(t.end, s.EndTimeUnixNano) + z.attrsLen(t.attrs, s.Attributes) +
		sizeVar(t.droppedAttrs, uint64(s.DroppedAttributesCount)) + sizeVar(t.droppedEvents, uint64(s.DroppedEventsCount)) +
		sizeVar(t.droppedLinks, uint64(s.DroppedLinksCount))
	for _, e := range s.Events {
		n += sizeLen(t.events, z.eventLen(e))
	}
	for _, l := range s.Links {
		n += sizeLen(t.links, z.linkLen(l))
	}
	if s.Status != nil {
		n += sizeLen(t.status, z.statusLen(s.Status))
	}
	return n
}

func (z *spanSizer) eventLen(e *tracepb.Span_Event) int {
	if e == nil {
		return 0
	}
	t := &z.event
	return sizeFixed64(t.time, e.TimeUnixNano) + sizeStr(t.name, e.Name) + z.attrsLen(t.attrs, e.Attributes) +
		sizeVar(t.droppedAttrs, uint64(e.DroppedAttributesCount))
}

func (z *spanSizer) linkLen(l *tracepb.Span_Link) int {
	if l == nil {
		return 0
	}
	t := &z.link
	return sizeRaw(t.traceID, l.TraceId) + sizeRaw(t.spanID, l.SpanId) + sizeStr(t.traceState, l.TraceState) +
		z.attrsLen(t.attrs, l.Attributes) + sizeVar(t.droppedAttrs, uint64(l.DroppedAttributesCount)) +
		sizeFixed32(t.flags, l.Flags)
}

func (z *spanSizer) statusLen(s *tracepb.Status) int {
	return sizeStr(z.stat.message, s.Message) + sizeVar(z.stat.code, uint64(int64(s.Code)))
}

// attrsLen is the size of a repeated KeyValue field of tag size tag.
func (z *spanSizer) attrsLen(tag int, kvs []*commonpb.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += sizeLen(tag, z.keyValueLen(kv))
	}
	return n
}

func (z *spanSizer) keyValueLen(kv *commonpb.KeyValue) int {
	if kv == nil {
		return 0
	}
	n := sizeStr(z.kv.key, kv.Key) + sizeVar(z.kv.keyStrindex, uint64(int64(kv.KeyStrindex)))
	if kv.Value != nil {
		n += sizeLen(z.kv.value, z.anyLen(kv.Value))
	}
	return n
}

// anyLen is the size of v; a nil v (a nil list element) is an empty one.
func (z *spanSizer) anyLen(v *commonpb.AnyValue) int {
	t := &z.any
	n := 0
	switch x := v.GetValue().(type) {
	case nil:
	case *commonpb.AnyValue_StringValue:
		n += sizeLen(t.str, len(x.StringValue))
	case *commonpb.AnyValue_IntValue:
		n += t.integer + protowire.SizeVarint(uint64(x.IntValue))
	case *commonpb.AnyValue_BoolValue:
		n += t.boolean + 1
	case *commonpb.AnyValue_DoubleValue:
		n += t.double + 8
	case *commonpb.AnyValue_BytesValue:
		n += sizeLen(t.bytes, len(x.BytesValue))
	case *commonpb.AnyValue_StringValueStrindex:
		n += t.strindex + protowire.SizeVarint(uint64(int64(x.StringValueStrindex)))
	case *commonpb.AnyValue_ArrayValue:
		m := 0
		if a := x.ArrayValue; a != nil {
			for _, e := range a.Values {
				m += sizeLen(z.array.values, z.anyLen(e))
			}
		}
		n += sizeLen(t.array, m)
	case *commonpb.AnyValue_KvlistValue:
		m := 0
		if l := x.KvlistValue; l != nil {
			for _, e := range l.Values {
				m += sizeLen(z.list.values, z.keyValueLen(e))
			}
		}
		n += sizeLen(t.kvlist, m)
	default:
		return proto.Size(v)
	}
	return n
}
