package otlp

import (
	"encoding/binary"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
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
