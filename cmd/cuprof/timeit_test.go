package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTimeitMinicore runs cuprof timeit on the minicore example (the lean
// and the cuda.core-style wrapper of the same driver calls) and checks the
// output's properties: each statement's breakdown adds up to its time per
// call within 5 %, the frames explain heavy minus lean within 10 %, the
// driver calls per call are the statement's, nothing outside the timed
// loops is in the breakdown, and each statement's trace is kept.
func TestTimeitMinicore(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	t.Setenv("CUPROF_SIM_COST_SCALE", "0")
	dir := t.TempDir()
	examples, _ := filepath.Abs("../../examples/python")
	var stdout, stderr bytes.Buffer
	err = run([]string{"timeit", "--sim", "--python", py, "-n", "400", "-r", "5", "--format", "json", "-o", dir,
		"-s", "import sys; sys.path.insert(0, " + strings.ReplaceAll(strconvQuote(examples), "\\", "\\\\") + ")",
		"-s", "from minicore import core, lean",
		"-s", "DEV = core.Device(0); DEV.set_current(); lean.init(); lean.set_current(lean.device_get(0))",
		"lean.stream_destroy(lean.stream_create())", "DEV.create_stream().close()"}, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("timeit: %v\n%s", err, stderr.String())
	}
	var res timeitResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout.String())
	}
	if len(res.Stmts) != 2 || len(res.Diffs) != 1 {
		t.Fatalf("%d statements, %d differences", len(res.Stmts), len(res.Diffs))
	}
	for i, s := range res.Stmts {
		bd := s.Breakdown
		if bd.Ranges != 1 || bd.Calls != 400 || len(s.RecordedNs) != 5 || len(s.BareNs) != 5 {
			t.Errorf("statement %d: %d ranges, %d calls, %d+%d rounds; want 1, 400, 5+5", i+1, bd.Ranges, bd.Calls, len(s.RecordedNs), len(s.BareNs))
		}
		if s.RecordedNs[s.BestRound] != s.Recorded.MinNs {
			t.Errorf("statement %d: best round %d took %.0f, the least is %.0f", i+1, s.BestRound, s.RecordedNs[s.BestRound], s.Recorded.MinNs)
		}
		// The breakdown's total is the best round's capture range: it
		// holds that round's timed loop and lies within the harness's
		// bracket around opening and closing the range (one clock,
		// CLOCK_MONOTONIC; 0.5 % and 1 us for the trace's TSC rate and
		// rounding), however long the machine kept the process waiting.
		loop, outer := s.RecordedNs[s.BestRound], s.RecordedOuterNs[s.BestRound]
		slack := 0.005*outer + 1000/float64(bd.Calls)
		if len(s.RecordedOuterNs) != 5 || bd.TotalNs < loop-slack || bd.TotalNs > outer+slack {
			t.Errorf("statement %d: the breakdown adds up to %.0f ns per call; the round's timed loop took %.0f and its range's bracket %.0f", i+1, bd.TotalNs, loop, outer)
		}
		parts := bd.DriverNs + bd.FramesNs + bd.CostNs + bd.RestNs
		if math.Abs(parts-bd.TotalNs) > 1 {
			t.Errorf("statement %d: parts %.1f, total %.1f", i+1, parts, bd.TotalNs)
		}
		calls := map[string]float64{}
		for _, a := range bd.APIs {
			calls[a.API] = a.Calls
		}
		if len(calls) != 2 || calls["cuStreamCreate"] != 1 || calls["cuStreamDestroy"] != 1 {
			t.Errorf("statement %d: driver calls per call %v, want one cuStreamCreate and one cuStreamDestroy", i+1, calls)
		}
		if fi, err := os.Stat(s.Trace); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("statement %d: trace %s: %v", i+1, s.Trace, err)
		}
	}
	d := res.Diffs[0]
	// The wrappers' own difference, less what recording the heavy
	// wrapper's extra frames costs: the difference of the frames, the
	// driver calls and the rest, each part's least over the rounds. The
	// frames must explain it: the driver calls are the same and the rest
	// (the loop) is too.
	measured := d.FramesNs + d.DriverNs + d.RestNs
	if measured <= 0 || math.Abs(d.FramesNs/measured-1) > 0.10 {
		t.Errorf("heavy - lean: %.0f ns per call measured (driver calls %+.0f, the rest %+.0f), the frames explain %.0f (want within 10 %%)", measured, d.DriverNs, d.RestNs, d.FramesNs)
	}
	var names []string
	for _, p := range d.Parts {
		if p.Kind == "frame" && p.Ns > 0 {
			names = append(names, p.Name)
		}
	}
	for _, want := range []string{"check_or_create_options", "handle_return", "Stream._MembersNeededForFinalize.__init__"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("the difference's frames %v lack %s", names, want)
		}
	}
}

func TestTimeitBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"timeit"},
		{"timeit", "-r", "0", "pass"},
		{"timeit", "-n", "-1", "pass"},
		{"timeit", "--format", "xml", "pass"},
		{"timeit", "--python", "/nonexistent/python", "pass"},
		{"timeit", "--frames", "some", "pass"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(args, nil, &stdout, &stderr)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want a one-line error", args, err)
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
