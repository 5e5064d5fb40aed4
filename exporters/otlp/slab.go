package otlp

import (
	"encoding/binary"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// slabSize is how many values a slab allocates at once.
const slabSize = 4096

// slab hands out attribute values and IDs from chunks, so a span costs a few
// allocations instead of dozens. A chunk lives as long as any span using it.
type slab struct {
	kvs  []commonpb.KeyValue
	vals []commonpb.AnyValue
	strs []commonpb.AnyValue_StringValue
	ints []commonpb.AnyValue_IntValue
	ids  []byte
}

func (s *slab) kv(k string) *commonpb.KeyValue {
	if len(s.kvs) == 0 {
		s.kvs = make([]commonpb.KeyValue, slabSize)
		s.vals = make([]commonpb.AnyValue, slabSize)
	}
	kv, v := &s.kvs[0], &s.vals[0]
	s.kvs, s.vals = s.kvs[1:], s.vals[1:]
	kv.Key, kv.Value = k, v
	return kv
}

func (s *slab) str(k, v string) *commonpb.KeyValue {
	kv := s.kv(k)
	if len(s.strs) == 0 {
		s.strs = make([]commonpb.AnyValue_StringValue, slabSize)
	}
	sv := &s.strs[0]
	s.strs = s.strs[1:]
	sv.StringValue = v
	kv.Value.Value = sv
	return kv
}

func (s *slab) int(k string, v int64) *commonpb.KeyValue {
	kv := s.kv(k)
	if len(s.ints) == 0 {
		s.ints = make([]commonpb.AnyValue_IntValue, slabSize)
	}
	iv := &s.ints[0]
	s.ints = s.ints[1:]
	iv.IntValue = v
	kv.Value.Value = iv
	return kv
}

// id8 returns v as an 8-byte big-endian span ID.
func (s *slab) id8(v uint64) []byte {
	if len(s.ids) < 8 {
		s.ids = make([]byte, 8*slabSize)
	}
	b := s.ids[:8:8]
	s.ids = s.ids[8:]
	binary.BigEndian.PutUint64(b, v)
	return b
}

// The encoded size of the messages cuprof builds, computed field by field
// (protobuf's generic Size walks them by reflection and is most of the cost
// of cutting batches). A test checks it against proto.Size.

func sizeBytes(n int) int { return 1 + protowire.SizeBytes(n) } // one-byte tag + length + data

func anySize(v *commonpb.AnyValue) int {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return sizeBytes(len(x.StringValue))
	case *commonpb.AnyValue_IntValue:
		return 1 + protowire.SizeVarint(uint64(x.IntValue))
	case *commonpb.AnyValue_BoolValue:
		return 2
	case *commonpb.AnyValue_DoubleValue:
		return 9
	case *commonpb.AnyValue_ArrayValue:
		n := 0
		for _, e := range x.ArrayValue.GetValues() {
			n += sizeBytes(anySize(e))
		}
		return sizeBytes(n)
	}
	return protoSize(v)
}

func kvSize(kv *commonpb.KeyValue) int {
	n := 0
	if kv.Key != "" {
		n += sizeBytes(len(kv.Key))
	}
	if kv.Value != nil {
		n += sizeBytes(anySize(kv.Value))
	}
	return n
}

func attrsSize(kvs []*commonpb.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += sizeBytes(kvSize(kv))
	}
	return n
}

// spanSize is the encoded size of s (without its own tag and length).
func spanSize(s *tracepb.Span) int {
	n := 0
	if len(s.TraceId) > 0 {
		n += sizeBytes(len(s.TraceId))
	}
	if len(s.SpanId) > 0 {
		n += sizeBytes(len(s.SpanId))
	}
	if s.TraceState != "" {
		n += sizeBytes(len(s.TraceState))
	}
	if len(s.ParentSpanId) > 0 {
		n += sizeBytes(len(s.ParentSpanId))
	}
	if s.Name != "" {
		n += sizeBytes(len(s.Name))
	}
	if s.Kind != 0 {
		n += 1 + protowire.SizeVarint(uint64(s.Kind))
	}
	if s.StartTimeUnixNano != 0 {
		n += 9
	}
	if s.EndTimeUnixNano != 0 {
		n += 9
	}
	n += attrsSize(s.Attributes)
	for _, l := range s.Links {
		m := 0
		if len(l.TraceId) > 0 {
			m += sizeBytes(len(l.TraceId))
		}
		if len(l.SpanId) > 0 {
			m += sizeBytes(len(l.SpanId))
		}
		m += attrsSize(l.Attributes)
		if l.TraceState != "" || l.DroppedAttributesCount != 0 || l.Flags != 0 {
			m = protoSize(l)
		}
		n += sizeBytes(m)
	}
	if s.Status != nil {
		m := 0
		if s.Status.Message != "" {
			m += sizeBytes(len(s.Status.Message))
		}
		if s.Status.Code != 0 {
			m += 1 + protowire.SizeVarint(uint64(s.Status.Code))
		}
		n += 1 + protowire.SizeBytes(m)
	}
	if len(s.Events) > 0 || s.DroppedAttributesCount != 0 || s.DroppedEventsCount != 0 ||
		s.DroppedLinksCount != 0 || s.Flags != 0 {
		return protoSize(s)
	}
	return n
}
