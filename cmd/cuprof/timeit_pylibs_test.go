package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/pyvenv"
)

// TestTimeitPyLibs runs cuprof timeit on every CPython, in its environment
// of the real libraries (internal/pyvenv), on the simulated driver:
// cuda.core's dev.create_stream() against the same stream made and
// destroyed through the lean ctypes wrapper (examples/python/minicore's
// lean). Each statement's driver calls per call are its own (cuda.core:
// cuCtxGetStreamPriorityRange, cuStreamCreateWithPriority and, as the
// Stream is dropped, cuStreamDestroy), its breakdown adds up to its time
// and its frames have time of their own; the difference's parts are
// logged, the frames' part against the bare difference less the driver
// calls' (docs/python.md, "Real libraries", has the figures measured; how
// close they must be is not this test's to say).
func TestTimeitPyLibs(t *testing.T) {
	ins, missing, err := pyvenv.Interpreters("../../internal/record/testdata/python/versions")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range missing {
		t.Logf("CPython %s not installed: skipped", v)
	}
	if len(ins) == 0 {
		t.Skip("no pyenv CPython installed")
	}
	t.Setenv("CUPROF_SIM_COST_SCALE", "0")
	examples, _ := filepath.Abs("../../examples/python")
	for _, in := range ins {
		t.Run(in.Version, func(t *testing.T) {
			py := pyvenv.Require(t, in)
			var stdout, stderr bytes.Buffer
			err := run([]string{"timeit", "--sim", "--python", py, "-n", "400", "-r", "3", "--format", "json",
				"-s", "import sys; sys.path.insert(0, " + strings.ReplaceAll(strconvQuote(examples), "\\", "\\\\") + ")",
				"-s", "from minicore import lean; from cuda.core import Device",
				"-s", "dev = Device(0); dev.set_current(); lean.init(); lean.set_current(lean.device_get(0))",
				"lean.stream_destroy(lean.stream_create())", "dev.create_stream()"}, nil, &stdout, &stderr)
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
			wants := []map[string]float64{
				{"cuStreamCreate": 1, "cuStreamDestroy": 1},
				{"cuCtxGetStreamPriorityRange": 1, "cuStreamCreateWithPriority": 1, "cuStreamDestroy": 1},
			}
			for i, s := range res.Stmts {
				bd := s.Breakdown
				got := map[string]float64{}
				for _, a := range bd.APIs {
					got[a.API] = a.Calls
				}
				if len(got) != len(wants[i]) {
					t.Errorf("statement %d: driver calls per call %v, want %v", i+1, got, wants[i])
				}
				for api, n := range wants[i] {
					if got[api] != n {
						t.Errorf("statement %d: %s %v per call, want %v", i+1, api, got[api], n)
					}
				}
				if parts := bd.DriverNs + bd.FramesNs + bd.CostNs + bd.RestNs; math.Abs(parts-bd.TotalNs) > 1 {
					t.Errorf("statement %d: parts %.1f, total %.1f", i+1, parts, bd.TotalNs)
				}
			}
			for i, s := range res.Stmts {
				if s.Breakdown.FramesNs <= 0 {
					t.Errorf("statement %d: its frames' self time is %.0f ns a call, want more than 0", i+1, s.Breakdown.FramesNs)
				}
			}
			d := res.Diffs[0]
			t.Logf("CPython %s: bare %.0f vs %.0f ns a call; difference bare %.0f, recorded %.0f: frames %.0f, driver calls %.0f, the rest %.0f, cuprof %.0f; frames / (bare difference - driver calls) %.2f",
				in.Version, res.Stmts[0].Bare.MinNs, res.Stmts[1].Bare.MinNs, d.BareNs, d.RecordedNs, d.FramesNs, d.DriverNs, d.RestNs, d.CostNs,
				d.FramesNs/(d.BareNs-d.DriverNs))
		})
	}
}
