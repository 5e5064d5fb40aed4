package otlp

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

// TestFieldNumbers: every field number the encoder writes is the generated
// descriptors' number of that field.
func TestFieldNumbers(t *testing.T) {
	for _, c := range []struct {
		msg   proto.Message
		field string
		num   protowire.Number
	}{
		{&tracepb.ResourceSpans{}, "resource", fieldResourceSpansResource},
		{&tracepb.ResourceSpans{}, "scope_spans", fieldResourceSpansScopeSpans},
		{&tracepb.ResourceSpans{}, "schema_url", fieldResourceSpansSchemaURL},
		{&tracepb.ScopeSpans{}, "scope", fieldScopeSpansScope},
		{&tracepb.ScopeSpans{}, "spans", fieldScopeSpansSpans},
		{&tracepb.ScopeSpans{}, "schema_url", fieldScopeSpansSchemaURL},
		{&tracepb.Span{}, "trace_id", fieldSpanTraceID},
		{&tracepb.Span{}, "span_id", fieldSpanSpanID},
		{&tracepb.Span{}, "parent_span_id", fieldSpanParentID},
		{&tracepb.Span{}, "name", fieldSpanName},
		{&tracepb.Span{}, "kind", fieldSpanKind},
		{&tracepb.Span{}, "start_time_unix_nano", fieldSpanStart},
		{&tracepb.Span{}, "end_time_unix_nano", fieldSpanEnd},
		{&tracepb.Span{}, "attributes", fieldSpanAttributes},
		{&tracepb.Span{}, "events", fieldSpanEvents},
		{&tracepb.Span{}, "links", fieldSpanLinks},
		{&tracepb.Span{}, "status", fieldSpanStatus},
		{&tracepb.Span_Event{}, "time_unix_nano", fieldEventTime},
		{&tracepb.Span_Event{}, "name", fieldEventName},
		{&tracepb.Span_Event{}, "attributes", fieldEventAttributes},
		{&tracepb.Span_Link{}, "trace_id", fieldLinkTraceID},
		{&tracepb.Span_Link{}, "span_id", fieldLinkSpanID},
		{&tracepb.Span_Link{}, "attributes", fieldLinkAttributes},
		{&tracepb.Status{}, "message", fieldStatusMessage},
		{&tracepb.Status{}, "code", fieldStatusCode},
		{&commonpb.KeyValue{}, "key", fieldKeyValueKey},
		{&commonpb.KeyValue{}, "value", fieldKeyValueValue},
		{&commonpb.AnyValue{}, "string_value", fieldAnyString},
		{&commonpb.AnyValue{}, "bool_value", fieldAnyBool},
		{&commonpb.AnyValue{}, "int_value", fieldAnyInt},
	} {
		md := c.msg.ProtoReflect().Descriptor()
		f := md.Fields().ByName(protoreflect.Name(c.field))
		if f == nil || f.Number() != c.num {
			t.Errorf("%s.%s: the encoder writes field %d, the descriptor says %v", md.FullName(), c.field, c.num, f)
		}
	}
	if spanKindClient != int(tracepb.Span_SPAN_KIND_CLIENT) || spanKindInternal != int(tracepb.Span_SPAN_KIND_INTERNAL) ||
		statusCodeError != int(tracepb.Status_STATUS_CODE_ERROR) {
		t.Error("span kind or status code values differ from the generated enums")
	}
}

// TestEncodedAsMarshalled: each batch's ResourceSpans, as sent, are the
// bytes proto.Marshal writes for them decoded (fields in number order, zero
// values left out), on fixture, Python and random traces.
func TestEncodedAsMarshalled(t *testing.T) {
	traces := map[string]*trace.Trace{"small": readFixture(t, "small.txt"), "python": tracetest.PythonTrace()}
	for seed := uint64(1); seed <= 6; seed++ {
		traces["random"+string(rune('0'+seed))] = tracetest.Random(seed, 2000)
	}
	for name, tr := range traces {
		batches := 0
		if _, err := Build(tr, func(b Batch) error {
			batches++
			for _, r := range b.rs {
				raw := r.ProtoReflect().GetUnknown()
				m := &tracepb.ResourceSpans{}
				if err := proto.Unmarshal(raw, m); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				again, err := proto.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again, raw) {
					t.Fatalf("%s: a ResourceSpans of %d bytes is %d bytes as proto.Marshal writes it", name, len(raw), len(again))
				}
			}
			return nil
		}, WithBatchBytes(8<<10)); err != nil {
			t.Fatal(err)
		}
		if batches < 2 {
			t.Errorf("%s: %d batches; want several", name, batches)
		}
	}
}

// TestInvalidUTF8IsReplaced: a name that is not UTF-8 (the trace's strings
// are the program's bytes) goes out with U+FFFD for each bad byte, so the
// request stays valid protobuf.
func TestInvalidUTF8IsReplaced(t *testing.T) {
	tr := readFixture(t, "small.txt")
	bad := "step\xff\xfe"
	for i := range tr.Events {
		if tr.Events[i].Kind == trace.KindRangePush {
			tr.Events[i].Name = trace.StringID(len(tr.Strings))
			tr.Strings = append(tr.Strings, bad)
			break
		}
	}
	rs, err := Collect(tr)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rs {
		for _, s := range r.ScopeSpans[0].Spans {
			if !utf8.ValidString(s.Name) {
				t.Fatalf("span name %q is not UTF-8", s.Name)
			}
			found = found || s.Name == strings.ToValidUTF8(bad, "\uFFFD\uFFFD")
		}
	}
	if !found {
		t.Errorf("no span named %q", strings.ToValidUTF8(bad, "\uFFFD\uFFFD"))
	}
}

// TestAppendHex: the hex digits of attribute values are strconv's.
func TestAppendHex(t *testing.T) {
	vs := []uint64{0, 1, 9, 10, 15, 16, 255, 256, 0x7f00_1234, 1<<63 - 1, 1 << 63, ^uint64(0)}
	for v := uint64(1); v != 0 && len(vs) < 200; v = v*7 + 3 {
		vs = append(vs, v)
	}
	for _, v := range vs {
		want := strconv.FormatUint(v, 16)
		if got := string(appendHex([]byte("x"), v, len(want))); got != "x"+want {
			t.Errorf("appendHex(%#x) = %q, want %q", v, got, "x"+want)
		}
		a := appendHexAttr(nil, tagSpanAttributes, keyHandle, v)
		kv := &commonpb.KeyValue{}
		_, _, n := protowire.ConsumeTag(a)
		if body, m := protowire.ConsumeBytes(a[n:]); m != len(a)-n || proto.Unmarshal(body, kv) != nil || kv.GetValue().GetStringValue() != "0x"+want {
			t.Errorf("appendHexAttr(%#x) decodes as %v", v, kv)
		}
	}
}

// TestHexAttrs: the kept attributes are appendSpanHexAttr's, for values
// that come back, that share an entry and that replace each other, of
// every key kept and the longest.
func TestHexAttrs(t *testing.T) {
	var vs []uint64
	for v := uint64(1); v != 0 && len(vs) < 300; v = v*7 + 3 {
		vs = append(vs, v, 0x7000000+v%16*0x1000, 0x10+v%8, 0, ^uint64(0))
	}
	for _, k := range []*attrKey{keyHandle, keyStream, keyAux, keyPool, keyCaller} {
		h := &hexAttrs{key: k}
		for i, v := range vs {
			want := appendSpanHexAttr([]byte("x"), k, v)
			if got := h.append([]byte("x"), v); !bytes.Equal(got, want) {
				t.Fatalf("%s: value %d (%#x): %q, want %q", k.kv, i, v, got, want)
			}
		}
	}
}

// TestTimesOfZero: the spans of successful calls, ranges and lifetimes,
// whose name, times and first attributes are copied in one piece with the
// times written in place (appendTimed), leave out a start or end time of 0
// (a trace without a wall clock anchor, an event at its clock's 0), as
// proto.Marshal does, and a call's attributes are those of the same call
// at other times.
func TestTimesOfZero(t *testing.T) {
	tr, err := trace.ReadText(strings.NewReader(`cuprof-text 1
process pid=1 cmd=zero
thread pid=1 tid=1
push 1/1 t=0 name=step
call 1/1 t=0 end=0 api=cuCtxSetCurrent handle=0xc0 dev=0
call 1/1 t=0 end=100 api=cuCtxSetCurrent handle=0xc0 dev=0
call 1/1 t=0 end=0 api=cuStreamCreate handle=0x10 dev=0
pop 1/1 t=150
push 1/1 t=160 name=step
call 1/1 t=200 end=300 api=cuCtxSetCurrent handle=0xc0 dev=0
call 1/1 t=400 end=500 api=cuCtxSetCurrent handle=0xc0 dev=0
call 1/1 t=600 end=700 api=cuStreamDestroy handle=0x10 dev=0
pop 1/1 t=800
`))
	if err != nil {
		t.Fatal(err)
	}
	var spans []*tracepb.Span
	if _, err := Build(tr, func(b Batch) error {
		for _, r := range b.rs {
			raw := r.ProtoReflect().GetUnknown()
			m := &tracepb.ResourceSpans{}
			if err := proto.Unmarshal(raw, m); err != nil {
				return err
			}
			again, err := proto.Marshal(m)
			if err != nil {
				return err
			}
			if !bytes.Equal(again, raw) {
				t.Errorf("a ResourceSpans of %d bytes is %d bytes as proto.Marshal writes it", len(raw), len(again))
			}
			for _, ss := range m.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var calls []*tracepb.Span
	times := map[string][][2]uint64{}
	for _, s := range spans {
		if s.Name == "cuCtxSetCurrent" {
			calls = append(calls, s)
		}
		times[s.Name] = append(times[s.Name], [2]uint64{s.StartTimeUnixNano, s.EndTimeUnixNano})
	}
	if got, want := fmt.Sprint(times["step"], times["stream"]), "[[0 150] [160 800]] [[0 700]]"; got != want {
		t.Errorf("range and lifetime times %s; want %s", got, want)
	}
	sort.Slice(calls, func(i, j int) bool {
		a, b := calls[i], calls[j]
		return a.StartTimeUnixNano < b.StartTimeUnixNano || a.StartTimeUnixNano == b.StartTimeUnixNano && a.EndTimeUnixNano < b.EndTimeUnixNano
	})
	want := [][2]uint64{{0, 0}, {0, 100}, {200, 300}, {400, 500}}
	if len(calls) != len(want) {
		t.Fatalf("%d call spans; want %d", len(calls), len(want))
	}
	for i, s := range calls {
		if got := [2]uint64{s.StartTimeUnixNano, s.EndTimeUnixNano}; got != want[i] {
			t.Errorf("call %d: times %v; want %v", i, got, want[i])
		}
		if a, b := fmt.Sprint(s.Attributes), fmt.Sprint(calls[len(calls)-1].Attributes); a != b {
			t.Errorf("call %d: attributes %s; want those of the last call, %s", i, a, b)
		}
	}
}
