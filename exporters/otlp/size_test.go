package otlp

import (
	"math"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// TestSizerExact: the descriptors of the linked OTLP protos have the
// fields the sizer was written for, so spanSize does not fall back to
// proto.Size.
func TestSizerExact(t *testing.T) {
	if !sizer.exact {
		t.Fatal("the OTLP descriptors differ from sizerFields: spanSize falls back to proto.Size; update size.go")
	}
}

// TestSpanSizeMatchesProto: every span the builder makes from the
// fixtures has proto.Size's size.
func TestSpanSizeMatchesProto(t *testing.T) {
	traces := map[string]*trace.Trace{
		"small.txt":     readFixture(t, "small.txt"),
		"AllocFree":     tracetest.AllocFreePairs(300),
		"PythonWrapper": tracetest.PythonWrapper(5),
		"PythonTrace":   tracetest.PythonTrace(),
		"Loop":          tracetest.LoopTrace(50),
	}
	for name, tr := range traces {
		rs, err := Collect(tr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := 0
		for _, r := range rs {
			for _, ss := range r.ScopeSpans {
				for _, s := range ss.Spans {
					n++
					if got, want := spanSize(s), proto.Size(s); got != want {
						t.Errorf("%s: span %s: spanSize %d, proto.Size %d", name, s.Name, got, want)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no spans", name)
		}
	}
}

// TestSpanSizeEveryField: spans with every field set, values whose
// encodings are long (tags of field 16, 10-byte varints of negative ints
// and enums), zero values of oneof fields (which are encoded), nil list
// elements, nested arrays and key-value lists.
func TestSpanSizeEveryField(t *testing.T) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	big := string(make([]byte, 300)) // a 2-byte length
	attrs := []*commonpb.KeyValue{
		str("s", "v"), str("", ""), str("big", big),
		{Key: "i", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -1}}},
		{Key: "i0", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{}}},
		{Key: "imax", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: math.MaxInt64}}},
		{Key: "b", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{}}},
		{Key: "d", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1.5}}},
		{Key: "raw", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{1, 2}}}},
		{Key: "raw0", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{}}},
		{Key: "arr", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
			&commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "x"}}, {}, nil,
			&commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{}}},
		}}}}},
		{Key: "arrnil", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{}}},
		{Key: "kvs", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{
			str("a", "b"), {Key: "novalue"}, nil,
		}}}}},
		{Key: "kvsnil", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{}}},
		{Key: "empty", Value: &commonpb.AnyValue{}},
		{KeyStrindex: 7, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{StringValueStrindex: -3}}},
		{KeyStrindex: -1, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValueStrindex{}}},
		{Key: "nilvalue"},
		nil,
	}
	full := &tracepb.Span{
		TraceId: make([]byte, 16), SpanId: make([]byte, 8), TraceState: "k=v", ParentSpanId: make([]byte, 8),
		Flags: 0x301, Name: "cuMemAlloc", Kind: tracepb.Span_SPAN_KIND_CLIENT,
		StartTimeUnixNano: 1, EndTimeUnixNano: math.MaxUint64, Attributes: attrs,
		DroppedAttributesCount: 300, DroppedEventsCount: 1, DroppedLinksCount: math.MaxUint32,
		Events: []*tracepb.Span_Event{
			{TimeUnixNano: 5, Name: "mark", Attributes: attrs[:3], DroppedAttributesCount: 2},
			{}, nil,
		},
		Links: []*tracepb.Span_Link{
			{TraceId: make([]byte, 16), SpanId: make([]byte, 8), TraceState: "a=b", Attributes: attrs[3:6],
				DroppedAttributesCount: 1, Flags: 0xffffffff},
			{}, nil,
		},
		Status: &tracepb.Status{Message: "CUDA_ERROR_OUT_OF_MEMORY", Code: tracepb.Status_STATUS_CODE_ERROR},
	}
	spans := map[string]*tracepb.Span{
		"empty":         {},
		"full":          full,
		"empty status":  {Status: &tracepb.Status{}},
		"negative kind": {Kind: -1},
		"negative code": {Status: &tracepb.Status{Code: -2}},
	}
	for name, s := range spans {
		if got, want := spanSize(s), proto.Size(s); got != want {
			t.Errorf("%s: spanSize %d, proto.Size %d", name, got, want)
		}
	}
}

// TestMatchesShape: the sizer's schema check refuses a message with a field
// it does not know, one it misses, and one of another kind or cardinality.
func TestMatchesShape(t *testing.T) {
	md := (&tracepb.Status{}).ProtoReflect().Descriptor()
	ok := map[protoreflect.Name]fieldShape{"message": {protoreflect.StringKind, false}, "code": {protoreflect.EnumKind, false}}
	if !matchesShape(md, ok) {
		t.Fatal("Status does not match its own shape")
	}
	for name, want := range map[string]map[protoreflect.Name]fieldShape{
		"missing":  {"message": {protoreflect.StringKind, false}},
		"extra":    {"message": {protoreflect.StringKind, false}, "code": {protoreflect.EnumKind, false}, "x": {protoreflect.BoolKind, false}},
		"kind":     {"message": {protoreflect.BytesKind, false}, "code": {protoreflect.EnumKind, false}},
		"repeated": {"message": {protoreflect.StringKind, true}, "code": {protoreflect.EnumKind, false}},
		"nil":      nil,
	} {
		if matchesShape(md, want) {
			t.Errorf("%s: matches", name)
		}
	}
}
