package record

import (
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// recFields is what one ring record carries (cuprof_ring.h), for tests that
// write rings and spill files by hand.
type recFields struct {
	kind                     trace.Kind
	api                      trace.API
	start, end               uint64
	handle, caller           uint64
	stream, aux, size, flags uint64
	result, device           int32
	name                     uint32
	object                   uint8
	forceArgs, forceDetail   bool
}

// encodeRec encodes f as the shim does: the head, then the argument slot
// when a stream, aux, size or flags is set, then the detail slot when the
// result, device, name or object is not the default or the duration does
// not fit 32 bits.
func encodeRec(f recFields) []byte {
	d := f.end - f.start
	args := f.forceArgs || f.stream|f.aux|f.size|f.flags != 0
	detail := f.forceDetail || f.result != 0 || f.device != -1 || f.name != 0 || f.object != 0 || d>>32 != 0
	n := 1
	var ext byte
	if args {
		n++
		ext |= extArgs
	}
	if detail {
		n++
		ext |= extDetail
	}
	b := make([]byte, n*recSize)
	le.PutUint64(b[rOffStart:], f.start)
	le.PutUint64(b[rOffHandle:], f.handle)
	le.PutUint64(b[rOffCaller:], f.caller)
	le.PutUint32(b[rOffDur:], uint32(d))
	le.PutUint16(b[rOffAPI:], uint16(f.api))
	b[rOffKind] = byte(f.kind)
	b[rOffExt] = ext
	x := b[recSize:]
	if args {
		le.PutUint64(x[aOffStream:], f.stream)
		le.PutUint64(x[aOffAux:], f.aux)
		le.PutUint64(x[aOffSize:], f.size)
		le.PutUint64(x[aOffFlags:], f.flags)
		x = x[recSize:]
	}
	if detail {
		le.PutUint64(x[dOffEnd:], f.end)
		le.PutUint32(x[dOffResult:], uint32(f.result))
		le.PutUint32(x[dOffDevice:], uint32(f.device))
		le.PutUint32(x[dOffName:], f.name)
		x[dOffObject] = f.object
	}
	return b
}

// TestRecordRoundTrip: records of one, two and three slots decode to what
// was encoded, absent slots to their defaults, and eachRecord walks a run of
// them record by record.
func TestRecordRoundTrip(t *testing.T) {
	r := &ring{pid: 9, strs: map[uint32]trace.StringID{3: 5, 4: 6}, codes: map[uint32]trace.CodeID{8: 2}}
	cases := []struct {
		f     recFields
		slots int
		want  trace.Event
	}{
		{recFields{kind: trace.KindCall, api: trace.APICtxGetCurrent, start: 100, end: 130, handle: 0xc0, caller: 0x401000, device: -1}, 1,
			trace.Event{Kind: trace.KindCall, API: trace.APICtxGetCurrent, Start: 100, End: 130, Handle: 0xc0, Caller: 0x401000, Device: -1}},
		{recFields{kind: trace.KindCall, api: trace.APIMemAllocAsync, start: 5, end: 9, handle: 0xd000, stream: 7, size: 10, caller: 1, device: -1}, 2,
			trace.Event{Kind: trace.KindCall, API: trace.APIMemAllocAsync, Start: 5, End: 9, Handle: 0xd000, Stream: 7, Size: 10, Caller: 1, Device: -1}},
		{recFields{kind: trace.KindCall, api: trace.APICtxSynchronize, start: 1, end: 1 + 1<<33, result: 700, device: 2}, 2,
			trace.Event{Kind: trace.KindCall, API: trace.APICtxSynchronize, Start: 1, End: 1 + 1<<33, Result: 700, Device: 2}},
		{recFields{kind: trace.KindCall, api: trace.APIGetErrorName, start: 1, end: 2, flags: 1, result: 1, device: 0}, 3,
			trace.Event{Kind: trace.KindCall, API: trace.APIGetErrorName, Start: 1, End: 2, Flags: 1, Result: 1, Device: 0}},
		{recFields{kind: trace.KindObjectName, start: 50, end: 50, handle: 0xab, aux: 4, name: 3, object: uint8(trace.ObjectStream), device: -1, forceArgs: true, forceDetail: true}, 3,
			trace.Event{Kind: trace.KindObjectName, Start: 50, End: 50, Handle: 0xab, Name: 5, Domain: 6, Object: trace.ObjectStream, Device: -1}},
		{recFields{kind: trace.KindSpan, start: 10, end: 90, aux: 4, name: 3, caller: 0x5000, device: -1, forceArgs: true, forceDetail: true}, 3,
			trace.Event{Kind: trace.KindSpan, Start: 10, End: 90, Name: 5, Domain: 6, Device: -1}},
		// A Python frame of one slot: the code's string id and the flags in
		// caller; on behalf of thread 31.
		{recFields{kind: trace.KindFrame, start: 40, end: 70, handle: 31, caller: 8 | uint64(trace.FrameUnwound)<<32, device: -1}, 1,
			trace.Event{Kind: trace.KindFrame, Start: 40, End: 70, Code: 2, Flags: uint64(trace.FrameUnwound), TID: 31, Device: trace.NoDevice}},
		// One too long for dur: all three slots, the flags in the args.
		{recFields{kind: trace.KindFrame, start: 40, end: 40 + 1<<33, flags: uint64(trace.FrameYielded), name: 8, device: -1, forceArgs: true}, 3,
			trace.Event{Kind: trace.KindFrame, Start: 40, End: 40 + 1<<33, Code: 2, Flags: uint64(trace.FrameYielded), Device: trace.NoDevice}},
	}
	var run []byte
	for i, c := range cases {
		b := encodeRec(c.f)
		if len(b) != c.slots*recSize || recSlots(b) != c.slots {
			t.Errorf("case %d: %d bytes, recSlots %d; want %d slots", i, len(b), recSlots(b), c.slots)
		}
		c.want.PID = 9
		if c.want.TID == 0 {
			c.want.TID = 77
		}
		if got := r.decode(b, 77); got != c.want {
			t.Errorf("case %d: decoded\n%+v\nwant\n%+v", i, got, c.want)
		}
		run = append(run, b...)
	}
	var got []trace.Event
	if n := eachRecord(run, func(rec []byte) { got = append(got, r.decode(rec, 77)) }); n != len(cases) || len(got) != len(cases) {
		t.Fatalf("eachRecord: %d records, want %d", n, len(cases))
	}
	// A record cut short (its head says three slots, two follow) ends the run.
	if n := eachRecord(run[:len(run)-recSize], func([]byte) {}); n != len(cases)-1 {
		t.Errorf("a truncated last record: %d records, want %d", n, len(cases)-1)
	}
}
