package otlp

import (
	"encoding/binary"
	"hash/fnv"
	"iter"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// Span IDs are derived from the trace's identity and the position of what the
// span stands for, so exporting the same trace twice sends the same IDs and a
// collector or backend can deduplicate.
const (
	idProcess  = 1 // span of a whole process: index is the PID
	idCall     = 2 // span of a call: index into Trace.Events
	idRange    = 3 // span of a range or Python frame: index of the event that opened it
	idLifetime = 4 // span of an object lifetime: index of the call that created it
	idStream   = 5 // spans of the live streamer: sequence number of the event
)

// Identity returns a string that identifies a recording: its host, clock
// anchors, command, size and a hash of its events. Two exports of one file
// share it; two different recordings practically never do.
func Identity(t *trace.Trace) string {
	return IdentityOf(t, analysis.Events(t))
}

// IdentityOf is Identity of the trace whose tables are t and whose events,
// in trace order, are events (its Events are not read): export of a trace
// read as a stream takes one pass over the events for it before building.
func IdentityOf(t *trace.Trace, events iter.Seq[*trace.Event]) string {
	var b strings.Builder
	b.WriteString(t.Meta.Host)
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(t.Meta.WallStart, 10))
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(t.Meta.MonoStart, 10))
	b.WriteByte('|')
	b.WriteString(strings.Join(t.Meta.Command, " "))
	b.WriteByte('|')
	var h uint64
	n := 0
	var first, last int64
	for e := range events {
		if n == 0 {
			first = e.Start
		}
		last = e.End
		n++
		h = mix(h ^ uint64(e.Start) ^ uint64(e.End)<<1 ^ e.Handle<<2 ^ uint64(e.API)<<48 ^
			uint64(e.PID)<<32 ^ uint64(e.TID) ^ uint64(e.Kind)<<56)
	}
	b.WriteString(strconv.Itoa(n))
	if n > 0 {
		b.WriteByte('|')
		b.WriteString(strconv.FormatInt(first, 10))
		b.WriteByte('|')
		b.WriteString(strconv.FormatInt(last, 10))
	}
	b.WriteByte('|')
	b.WriteString(strconv.FormatUint(h, 16))
	return b.String()
}

// idSource turns an identity into trace and span IDs.
type idSource struct{ seed uint64 }

func newIDSource(identity string) idSource {
	h := fnv.New64a()
	h.Write([]byte(identity))
	return idSource{seed: h.Sum64()}
}

// mix is splitmix64's finalizer: a bijection that spreads every input bit.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// traceID returns the ID of the OTLP trace holding one process's spans.
func (s idSource) traceID(pid uint32) []byte {
	out := make([]byte, 16)
	a := mix(s.seed ^ mix(uint64(pid)|1<<40))
	b := mix(a ^ 0x5bd1e995)
	if a == 0 && b == 0 {
		a = 1
	}
	binary.BigEndian.PutUint64(out[:8], a)
	binary.BigEndian.PutUint64(out[8:], b)
	return out
}

// spanID returns the ID of the span of the given kind and index.
func (s idSource) spanID(kind uint64, index uint64) []byte {
	out := make([]byte, 8)
	binary.BigEndian.PutUint64(out, s.spanValue(kind, index))
	return out
}

// appendSpanID appends the ID of the span of the given kind and index.
func (s idSource) appendSpanID(b []byte, kind uint64, index uint64) []byte {
	return binary.BigEndian.AppendUint64(b, s.spanValue(kind, index))
}

// spanValue is spanID as a number.
func (s idSource) spanValue(kind uint64, index uint64) uint64 {
	v := mix(s.seed ^ mix(kind<<56^index))
	if v == 0 {
		v = 1
	}
	return v
}
