// Command blocks reads a trace recorded in capture ranges, one per block of
// calls (bench/apicount/paired.py names each "MODE CYCLE"), and prints one
// JSON line per block from cuprof's own analysis (package analysis): the
// activations of the frame (-frame, matched at the end of its qualified
// name) that started in the block, the median and mean of their self time
// and their driver calls per activation, the median duration of -api's
// recorded calls in the block, and how many of -api's calls the trace
// counts as passed through for the block (the count events the shim writes
// when the program changes the pass-through set, each counted for the last
// block that ended before it). Self times are given twice: as cuprof
// reports them (the calibrated cost of every recorded call taken out,
// "self_ns") and as recorded ("raw_self_ns", analysis.Raw).
//
//	go run ./bench/apicount/blocks [-frame F] [-api A] TRACE.cuprof > blocks.jsonl
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// A replay's accounting of the profiler's own cost.
type accounting int

const (
	reported accounting = iota // as cuprof reports: the calibrated cost with the in-place correction
	loopOnly                   // the calibrator's loop alone: the in-place correction (Overhead.InPlaceNs) left out
	raw                        // as recorded: nothing taken out (analysis.Raw)
)

// block is one capture range's line.
type block struct {
	Name        string  `json:"name"` // the capture range's name: "MODE CYCLE"
	Mode        string  `json:"mode"`
	Cycle       int     `json:"cycle"`
	StartNs     int64   `json:"start_ns"`
	Ns          int64   `json:"ns"`
	Frames      int     `json:"frames"`
	SelfMedian  float64 `json:"self_ns_median"`
	SelfMean    float64 `json:"self_ns_mean"`
	RawMedian   float64 `json:"raw_self_ns_median"`
	RawMean     float64 `json:"raw_self_ns_mean"`
	DriverCalls float64 `json:"driver_calls_per_frame"`
	APICalls    int     `json:"api_calls"`
	APIMedian   float64 `json:"api_ns_median"`
	RawAPIMed   float64 `json:"raw_api_ns_median"`
	LoopMedian  float64 `json:"loop_self_ns_median"`
	LoopAPIMed  float64 `json:"loop_api_ns_median"`
	InPlaceNs   float64 `json:"in_place_ns"`
	Passed      uint64  `json:"api_passed_through"`
	InsideNs    int64   `json:"inside_ns"`
	AddedNs     int64   `json:"added_ns"`
}

type frameTimes struct {
	start, self int64
	calls       int
}

type callTimes struct{ start, dur int64 }

// times replays tr once with the accounting acc and returns the frame's
// activations and the API's calls.
func times(tr *trace.Trace, frame string, api trace.API, acc accounting) (*analysis.Analysis, []frameTimes, []callTimes) {
	var frames []frameTimes
	var calls []callTimes
	opts := []analysis.Option{
		analysis.OnFrameEnd(func(f *analysis.Frame) {
			c := f.Code
			if int(c) < len(tr.Code) && strings.HasSuffix(tr.String(tr.Code[c].Name), frame) {
				frames = append(frames, frameTimes{f.Start, f.SelfNs, f.Calls})
			}
		}),
		analysis.OnEvent(func(e *analysis.Event) {
			if e.Kind == trace.KindCall && e.API == api {
				calls = append(calls, callTimes{e.Start, e.Duration})
			}
		}),
	}
	switch acc {
	case raw:
		opts = append(opts, analysis.Raw())
	case loopOnly:
		loop := *tr
		loop.Meta.Overhead.AddedNs -= loop.Meta.Overhead.InPlaceNs
		loop.Meta.Overhead.InPlaceNs, loop.Meta.Overhead.InPlaceCalls = 0, 0
		tr = &loop
	}
	a := analysis.Of(tr, opts...)
	return a, frames, calls
}

func median(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return float64(s[n/2-1]+s[n/2]) / 2
}

func mean(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	var t int64
	for _, x := range v {
		t += x
	}
	return float64(t) / float64(len(v))
}

// in returns the indexes i of starts (sorted) with lo <= starts[i] <= hi.
func in(n int, start func(int) int64, lo, hi int64) (int, int) {
	i := sort.Search(n, func(i int) bool { return start(i) >= lo })
	j := sort.Search(n, func(i int) bool { return start(i) > hi })
	return i, j
}

// blocks writes tr's blocks to w, one JSON line each.
func blocks(tr *trace.Trace, frame, apiName string, w io.Writer) error {
	api, ok := trace.LookupAPI(apiName)
	if !ok {
		return fmt.Errorf("no API %q in the table", apiName)
	}
	a, frames, calls := times(tr, frame, api, reported)
	_, rawFrames, rawCalls := times(tr, frame, api, raw)
	_, loopFrames, loopCalls := times(tr, frame, api, loopOnly)
	if len(frames) != len(rawFrames) || len(calls) != len(rawCalls) || len(frames) != len(loopFrames) || len(calls) != len(loopCalls) {
		return fmt.Errorf("the replays saw different frames and calls: %d and %d reported, %d and %d raw, %d and %d loop",
			len(frames), len(calls), len(rawFrames), len(rawCalls), len(loopFrames), len(loopCalls))
	}
	for _, s := range [][]frameTimes{frames, rawFrames, loopFrames} {
		sort.SliceStable(s, func(i, j int) bool { return s[i].start < s[j].start })
	}
	for _, s := range [][]callTimes{calls, rawCalls, loopCalls} {
		sort.SliceStable(s, func(i, j int) bool { return s[i].start < s[j].start })
	}
	caps := append([]analysis.Capture(nil), a.Captures...)
	sort.Slice(caps, func(i, j int) bool { return caps[i].Start < caps[j].Start })
	var counts []trace.Event
	for _, e := range tr.Events {
		if e.Kind == trace.KindCount && tr.String(e.Name) == apiName {
			counts = append(counts, e)
		}
	}
	cost := analysis.CostOf(&tr.Meta, false)
	enc := json.NewEncoder(w)
	for k, c := range caps {
		b := block{Name: c.Opener, StartNs: c.Start, Ns: c.Duration(), InsideNs: cost.InsideNs, AddedNs: cost.AddedNs,
			InPlaceNs: tr.Meta.Overhead.InPlaceNs}
		b.Mode, b.Cycle = c.Opener, -1
		if m, cyc, ok := strings.Cut(c.Opener, " "); ok {
			b.Mode = m
			fmt.Sscan(cyc, &b.Cycle)
		}
		i, j := in(len(frames), func(i int) int64 { return frames[i].start }, c.Start, c.End)
		var self, rawSelf, loopSelf []int64
		dc := 0
		for x := i; x < j; x++ {
			self = append(self, frames[x].self)
			rawSelf = append(rawSelf, rawFrames[x].self)
			loopSelf = append(loopSelf, loopFrames[x].self)
			dc += frames[x].calls
		}
		b.Frames = j - i
		b.SelfMedian, b.SelfMean = median(self), mean(self)
		b.RawMedian, b.RawMean = median(rawSelf), mean(rawSelf)
		b.LoopMedian = median(loopSelf)
		if b.Frames > 0 {
			b.DriverCalls = float64(dc) / float64(b.Frames)
		}
		i, j = in(len(calls), func(i int) int64 { return calls[i].start }, c.Start, c.End)
		var d, rd, ld []int64
		for x := i; x < j; x++ {
			d = append(d, calls[x].dur)
			rd = append(rd, rawCalls[x].dur)
			ld = append(ld, loopCalls[x].dur)
		}
		b.APICalls = j - i
		b.APIMedian, b.RawAPIMed, b.LoopAPIMed = median(d), median(rd), median(ld)
		next := int64(1<<63 - 1)
		if k+1 < len(caps) {
			next = caps[k+1].Start
		}
		for _, e := range counts {
			if e.Start >= c.End && e.Start < next {
				b.Passed += e.Size
			}
		}
		if err := enc.Encode(&b); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	frame := flag.String("frame", "Device.create_stream", "the frame, matched at the end of its qualified name")
	api := flag.String("api", "cuCtxGetStreamPriorityRange", "the API recorded in one mode and passed through in the other")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: blocks [-frame F] [-api A] TRACE.cuprof")
		os.Exit(2)
	}
	tr, err := trace.ReadFile(flag.Arg(0))
	if err == nil {
		err = blocks(tr, *frame, *api, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "blocks:", err)
		os.Exit(1)
	}
}
