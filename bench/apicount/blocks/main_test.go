package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// TestBlocks: two capture ranges, "pass 0" with the frame making one
// recorded call (the API's call passed through, counted after the block) and
// "rec 0" with the API's call recorded too; each block's self time with the
// calibrated cost out and raw, its driver calls, the API's duration and the
// passed-through count, worked out by hand.
func TestBlocks(t *testing.T) {
	tr := &trace.Trace{Strings: []string{"", "Device.create_stream", "pass 0", "rec 0", "cuCtxGetStreamPriorityRange", "warm"}}
	tr.Code = []trace.Code{{}, {Kind: trace.CodeNative, Name: 1}}
	tr.Meta.Overhead = trace.Overhead{InsideNs: 10, AddedNs: 20, InPlaceNs: 5, InPlaceCalls: 64}
	tr.Meta.CaptureRange = "profiler-api"
	call := func(s, e int64, api trace.API) trace.Event {
		return trace.Event{Kind: trace.KindCall, PID: 1, TID: 1, Device: 0, Start: s, End: e, API: api}
	}
	frame := func(s, e int64) trace.Event {
		return trace.Event{Kind: trace.KindFrame, PID: 1, TID: 1, Device: -1, Start: s, End: e, Code: 1}
	}
	capture := func(s, e int64, name trace.StringID) trace.Event {
		return trace.Event{Kind: trace.KindCapture, PID: 1, TID: 1, Device: -1, Start: s, End: e, Name: name}
	}
	tr.Events = []trace.Event{
		capture(100, 900, 5), // warm: no frame
		capture(1000, 2000, 2),
		frame(1100, 1600),
		call(1200, 1300, trace.APIStreamCreateWithPriority),
		{Kind: trace.KindCount, PID: 1, TID: 1, Device: -1, Start: 2050, End: 2050, Name: 4, Size: 1},
		capture(3000, 4000, 3),
		frame(3100, 3600),
		call(3150, 3190, trace.APICtxGetStreamPriorityRange),
		call(3200, 3300, trace.APIStreamCreateWithPriority),
	}
	trace.SortEvents(tr.Events)
	var out bytes.Buffer
	if err := blocks(tr, "create_stream", "cuCtxGetStreamPriorityRange", &out); err != nil {
		t.Fatal(err)
	}
	var got []block
	dec := json.NewDecoder(&out)
	for dec.More() {
		var b block
		if err := dec.Decode(&b); err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	want := []block{
		{Name: "warm", Mode: "warm", Cycle: -1, StartNs: 100, Ns: 800, InsideNs: 10, AddedNs: 20, InPlaceNs: 5},
		// 500 less one call's added 20 and its 100 less 10; raw 500 - 100;
		// the loop's calibration alone adds 15 a call: 500 - 15 - 90
		{Name: "pass 0", Mode: "pass", Cycle: 0, StartNs: 1000, Ns: 1000, Frames: 1, SelfMedian: 390, SelfMean: 390,
			RawMedian: 400, RawMean: 400, LoopMedian: 395, DriverCalls: 1, Passed: 1, InsideNs: 10, AddedNs: 20, InPlaceNs: 5},
		// 500 less 2 x 20, 40 - 10 and 100 - 10; raw 500 - 40 - 100; loop
		// 500 - 2 x 15 - 30 - 90
		{Name: "rec 0", Mode: "rec", Cycle: 0, StartNs: 3000, Ns: 1000, Frames: 1, SelfMedian: 340, SelfMean: 340,
			RawMedian: 360, RawMean: 360, LoopMedian: 350, DriverCalls: 2, APICalls: 1, APIMedian: 30, RawAPIMed: 40,
			LoopAPIMed: 30, InsideNs: 10, AddedNs: 20, InPlaceNs: 5},
	}
	if len(got) != len(want) {
		t.Fatalf("%d blocks, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
