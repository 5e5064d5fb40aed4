package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/cudawrap/sim"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/trace"
)

//go:embed timeit_harness.py
var timeitHarness []byte

type timeitOptions struct {
	setup  []string
	python string
	number int
	repeat int
	outDir string
	format string
	sim    bool
	frames string
}

func newTimeitCmd(g *globalOptions) *cobra.Command {
	o := &timeitOptions{}
	cmd := &cobra.Command{
		Use:   "timeit [-s SETUP]... [--python PY] STMT [STMT...]",
		Short: "Time Python statements like timeit and say where each call's time goes",
		Long: `timeit times each statement the way Python's timeit does (setup, then the
statement in a loop of NUMBER calls, NUMBER found by autorange unless -n),
in REPEAT rounds, the statements interleaved: in each round every statement
runs once without cuprof and once under cuprof record with a capture range
around the timed loop only. It prints each statement's time per call
(median and range over the rounds, bare and recorded) and the recorded
time per call broken down: driver calls per call by API, the Python-level
frames' self time per call, cuprof's own cost and the rest. With two or
more statements it prints each one's difference from the first and the
calls and frames that make it up, and warns when the frames and driver
calls do not explain the bare difference within its noise (half its range
over the rounds). Per statement it also says what recording added (the
fastest recorded round less the fastest bare one) and how much of that the
calibration does not hold: cuprof's cost, never the program's.`,
		Example: `  cuprof timeit -s "from cuda.core import Device; d = Device(); d.set_current()" "d.create_stream()"
  cuprof timeit --sim -s "import minicore.lean as lean; lean.init()" "lean.stream_destroy(lean.stream_create())"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("missing statement: use cuprof timeit [-s SETUP] STMT [STMT...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runTimeit(cmd, g, o, args) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.setup, "setup", "s", nil, "statement run once before the timed loop (repeatable, as timeit's -s)")
	f.StringVar(&o.python, "python", "python3", "the Python interpreter")
	f.IntVarP(&o.number, "number", "n", 0, "calls of the statement per timed loop (0: timeit's autorange, at least 0.2 s)")
	f.IntVarP(&o.repeat, "repeat", "r", 5, "rounds (each statement timed once per round, bare and recorded)")
	f.StringVarP(&o.outDir, "output", "o", "", "keep each statement's trace in this directory (stmt-1.cuprof, ...)")
	f.StringVar(&o.format, "format", "text", "text or json")
	f.BoolVar(&o.sim, "sim", false, "run against the simulated CUDA driver")
	f.StringVar(&o.frames, "frames", "full", "Python frames recorded: full, stacks (the stacks of driver calls only) or off, as cuprof record --python")
	return cmd
}

// timeitStmt is what cuprof timeit found for one statement.
type timeitStmt struct {
	Stmt   string `json:"stmt"`
	Number int    `json:"number"`
	// Per-round times per call, ns.
	BareNs     []float64 `json:"bare_ns"`
	RecordedNs []float64 `json:"recorded_ns"`
	// RecordedOuterNs is, per recorded round and per call, the harness's
	// time from just before its capture range opened to just after it
	// closed: the range's trace lies between RecordedNs and it.
	RecordedOuterNs []float64 `json:"recorded_outer_ns"`
	// BareCPUNs and RecordedCPUNs are, per round and per call, the timed
	// loop's CPU time on its thread: on a machine shared with other work,
	// steadier than the wall-clock times (time the process waited is not
	// in it).
	BareCPUNs     []float64 `json:"bare_cpu_ns"`
	RecordedCPUNs []float64 `json:"recorded_cpu_ns"`
	Bare          spread    `json:"bare"`
	Recorded      spread    `json:"recorded"`
	// RecordedMeanNs is the recorded rounds' mean time per call.
	RecordedMeanNs float64 `json:"recorded_mean_ns"`
	// AddedNs is what recording added per call, the fastest recorded
	// round less the fastest bare one; UncalibratedNs is the part of it
	// the calibration does not hold (AddedNs less the fastest round's
	// CostNs): cuprof's too, not the program's.
	AddedNs        float64 `json:"added_ns"`
	UncalibratedNs float64 `json:"uncalibrated_ns"`
	// BestRound is the round (from 0) whose recorded time is the least:
	// Breakdown is that round's trace.
	BestRound int     `json:"best_round"`
	Breakdown perCall `json:"breakdown"`
	Trace     string  `json:"trace,omitempty"`
	// Rounds is each recorded round's breakdown (Breakdown is the fastest's).
	Rounds []perCall `json:"round_breakdowns"`

	rounds []perCall // each round's breakdown
}

// spread is a median and the range around it.
type spread struct {
	MedianNs float64 `json:"median_ns"`
	MinNs    float64 `json:"min_ns"`
	MaxNs    float64 `json:"max_ns"`
}

// perCall is an analysis.Breakdown divided by the calls timed.
type perCall struct {
	Calls    int64        `json:"calls"`
	Ranges   int          `json:"ranges"`
	TotalNs  float64      `json:"total_ns"` // the capture ranges' time per call
	DriverNs float64      `json:"driver_ns"`
	APIs     []apiPerCall `json:"apis"`
	FramesNs float64      `json:"frames_ns"`
	Frames   []framePer   `json:"frames"`
	CostNs   float64      `json:"cuprof_ns"`
	RestNs   float64      `json:"unattributed_ns"`
}

type apiPerCall struct {
	API   string  `json:"api"`
	Calls float64 `json:"calls_per_call"`
	Ns    float64 `json:"ns_per_call"`
}

type framePer struct {
	Name   string  `json:"name"`
	Module string  `json:"module,omitempty"`
	Count  float64 `json:"per_call"`
	Ns     float64 `json:"self_ns_per_call"`
}

// timeitDiff is one statement against the first.
type timeitDiff struct {
	Stmt, Base int     `json:"-"`
	Name       string  `json:"stmt"`
	BaseName   string  `json:"base"`
	RecordedNs float64 `json:"recorded_ns"` // difference of the fastest recorded rounds
	BareNs     float64 `json:"bare_ns"`     // difference of the fastest bare rounds
	// BareRounds is, per round, the bare difference of that round's two
	// processes (run one after the other); BareSpread its median and
	// range: how far the bare difference moves from round to round.
	BareRounds []float64 `json:"bare_rounds_ns"`
	BareSpread spread    `json:"bare_spread"`
	// NoiseNs is the bare difference's noise: half its range over the
	// rounds, at least 2 % of the slower statement's fastest bare time.
	NoiseNs float64 `json:"noise_ns"`
	// ProgramNs is what the breakdown says the program's difference is
	// (FramesNs + DriverNs); Disagrees is set when it is further from
	// BareNs than NoiseNs: the breakdown cannot be trusted to that
	// precision (Warning says so).
	ProgramNs float64    `json:"program_ns"`
	Disagrees bool       `json:"disagrees"`
	Warning   string     `json:"warning,omitempty"`
	Parts     []diffPart `json:"parts"`
	FramesNs  float64    `json:"frames_ns"`
	DriverNs  float64    `json:"driver_ns"`
	CostNs    float64    `json:"cuprof_ns"`       // cuprof's own cost
	RestNs    float64    `json:"unattributed_ns"` // the rest
}

type diffPart struct {
	Kind string  `json:"kind"` // "api" or "frame"
	Name string  `json:"name"`
	Ns   float64 `json:"ns_per_call"`
}

type timeitResult struct {
	Python string       `json:"python"`
	Rounds int          `json:"rounds"`
	Stmts  []timeitStmt `json:"statements"`
	Diffs  []timeitDiff `json:"differences,omitempty"`
}

func runTimeit(cmd *cobra.Command, g *globalOptions, o *timeitOptions, stmts []string) error {
	if o.repeat < 1 {
		return usageErrorf("invalid --repeat %d: give 1 or more rounds", o.repeat)
	}
	if o.number < 0 {
		return usageErrorf("invalid --number %d: give 0 (autorange) or more", o.number)
	}
	switch o.frames {
	case "full", "stacks", "off":
	default:
		return usageErrorf("invalid --frames %q: give full, stacks or off", o.frames)
	}
	write, err := formatWriter(o.format, format[*timeitResult]{"text", writeTimeitText}, format[*timeitResult]{"json", writeTimeitJSON})
	if err != nil {
		return err
	}
	py, err := exec.LookPath(o.python)
	if err != nil {
		return usageErrorf("--python %q: %v: give the path of a Python interpreter", o.python, err)
	}
	work, err := os.MkdirTemp("", "cuprof-timeit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	harness := filepath.Join(work, "harness.py")
	cfgPath := filepath.Join(work, "config.json")
	cfg, _ := json.Marshal(map[string][]string{"setup": nonNilStrings(o.setup), "stmts": stmts})
	if err := os.WriteFile(harness, timeitHarness, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return err
	}
	if o.outDir != "" {
		if err := os.MkdirAll(o.outDir, 0o700); err != nil {
			return err
		}
	}
	res := &timeitResult{Python: py, Rounds: o.repeat}
	for _, s := range stmts {
		res.Stmts = append(res.Stmts, timeitStmt{Stmt: s, Number: o.number})
	}
	bareEnv := os.Environ()
	if o.sim {
		dir, err := simDriverDir(cmd)
		if err != nil {
			return err
		}
		bareEnv = append(bareEnv, "LD_LIBRARY_PATH="+dir+prefixed(":", os.Getenv("LD_LIBRARY_PATH")))
	}
	harnessRun := func(args ...string) (map[string]float64, error) {
		c := exec.CommandContext(cmd.Context(), py, append([]string{harness, cfgPath}, args...)...)
		c.Env = bareEnv
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			return nil, fmt.Errorf("statement %s: %v\n%s", args[0], err, strings.TrimSpace(errb.String()))
		}
		return lastJSON(out.Bytes())
	}
	for i := range res.Stmts {
		if res.Stmts[i].Number > 0 {
			continue
		}
		r, err := harnessRun(strconv.Itoa(i), "autorange")
		if err != nil {
			return err
		}
		res.Stmts[i].Number = int(r["number"])
	}
	traces := make([][]*trace.Trace, len(stmts))
	for round := 0; round < o.repeat; round++ {
		for i := range res.Stmts {
			s := &res.Stmts[i]
			n := strconv.Itoa(s.Number)
			r, err := harnessRun(strconv.Itoa(i), "time", n)
			if err != nil {
				return err
			}
			s.BareNs = append(s.BareNs, r["seconds"]*1e9/float64(s.Number))
			s.BareCPUNs = append(s.BareCPUNs, r["cpu_seconds"]*1e9/float64(s.Number))
			out := filepath.Join(work, fmt.Sprintf("stmt-%d-%d.cuprof", i+1, round+1))
			var buf bytes.Buffer
			rec, err := record.Run(cmd.Context(), []string{py, harness, cfgPath, strconv.Itoa(i), "time", n},
				record.WithOutput(out), record.WithSim(o.sim), record.WithCapture(record.Capture{Range: record.CaptureProfilerAPI}),
				record.WithStdio(nil, &buf, &buf), record.WithVersion(version), record.WithPython(o.frames))
			if err != nil {
				return fmt.Errorf("recording statement %d: %w", i+1, err)
			}
			if rec.ExitCode != 0 {
				return fmt.Errorf("statement %d exited with %d under cuprof:\n%s", i+1, rec.ExitCode, strings.TrimSpace(buf.String()))
			}
			r, err = lastJSON(buf.Bytes())
			if err != nil {
				return fmt.Errorf("statement %d under cuprof: %v", i+1, err)
			}
			s.RecordedNs = append(s.RecordedNs, r["seconds"]*1e9/float64(s.Number))
			s.RecordedOuterNs = append(s.RecordedOuterNs, r["outer_ns"]/float64(s.Number))
			s.RecordedCPUNs = append(s.RecordedCPUNs, r["cpu_seconds"]*1e9/float64(s.Number))
			t, err := trace.ReadFile(out)
			if err != nil {
				return err
			}
			traces[i] = append(traces[i], t)
		}
	}
	for i := range res.Stmts {
		s := &res.Stmts[i]
		s.Bare, s.Recorded = spreadOf(s.BareNs), spreadOf(s.RecordedNs)
		for _, v := range s.RecordedNs {
			s.RecordedMeanNs += v / float64(len(s.RecordedNs))
		}
		// The breakdown is the fastest round's, as timeit reports the best
		// of its repeats: what else the machine does only adds time.
		s.BestRound = bestIndex(s.RecordedNs)
		for r, t := range traces[i] {
			bd := analysis.BreakdownOf(t)
			if bd.Ranges != 1 {
				return fmt.Errorf("statement %d: %d capture ranges in round %d's trace, want 1: did the program see the shim?", i+1, bd.Ranges, r+1)
			}
			s.rounds = append(s.rounds, divide(bd, int64(s.Number)))
		}
		s.Breakdown = s.rounds[s.BestRound]
		s.Rounds = s.rounds
		s.AddedNs = s.Recorded.MinNs - s.Bare.MinNs
		s.UncalibratedNs = s.AddedNs - s.Breakdown.CostNs
		if o.outDir != "" {
			merged := trace.Merge(traces[i]...)
			s.Trace = filepath.Join(o.outDir, fmt.Sprintf("stmt-%d.cuprof", i+1))
			if err := writeRecording(g, s.Trace, func(w io.Writer) error { return trace.WriteBinary(w, merged) }); err != nil {
				return err
			}
		}
	}
	for i := 1; i < len(res.Stmts); i++ {
		res.Diffs = append(res.Diffs, diffOf(res, i, 0))
	}
	return write(g.stdout, res)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// simDriverDir is the simulated driver's directory (built on first use).
func simDriverDir(cmd *cobra.Command) (string, error) {
	return sim.Driver(cmd.Context())
}

// lastJSON reads the harness's result: the last line of its output.
func lastJSON(out []byte) (map[string]float64, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var m map[string]float64
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		return nil, fmt.Errorf("no result from the harness: %q", strings.TrimSpace(string(out)))
	}
	return m, nil
}

// bestIndex is the index of v's least value.
func bestIndex(v []float64) int {
	best := 0
	for i, x := range v {
		if x < v[best] {
			best = i
		}
	}
	return best
}

// spreadOf is v's median (the lower one of an even count) and range.
func spreadOf(v []float64) spread {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return spread{}
	}
	return spread{MedianNs: s[(len(s)-1)/2], MinNs: s[0], MaxNs: s[len(s)-1]}
}

func divide(b analysis.Breakdown, calls int64) perCall {
	n := float64(calls)
	p := perCall{Calls: calls, Ranges: b.Ranges, TotalNs: float64(b.RangeNs) / n, DriverNs: float64(b.DriverNs) / n,
		FramesNs: float64(b.FramesNs) / n, CostNs: float64(b.CostNs) / n, RestNs: float64(b.RestNs) / n,
		APIs: []apiPerCall{}, Frames: []framePer{}}
	for _, a := range b.APIs {
		p.APIs = append(p.APIs, apiPerCall{API: a.API.String(), Calls: float64(a.Calls) / n, Ns: float64(a.Ns) / n})
	}
	for _, f := range b.Frames {
		p.Frames = append(p.Frames, framePer{Name: f.Name, Module: f.Module, Count: float64(f.Activations) / n, Ns: float64(f.SelfNs) / n})
	}
	return p
}

// floorOf is each part's least time per call over the rounds: load only
// adds time, and to whichever part was running when it came, so the
// fastest round as a whole can still carry a preemption in one part while
// another round has that part clean.
func floorOf(rounds []perCall) perCall {
	f := perCall{DriverNs: math.Inf(1), FramesNs: math.Inf(1), CostNs: math.Inf(1), RestNs: math.Inf(1)}
	apis, frames := map[string]float64{}, map[string]float64{}
	least := func(m map[string]float64, k string, v float64) {
		if old, ok := m[k]; !ok || v < old {
			m[k] = v
		}
	}
	for _, r := range rounds {
		f.DriverNs, f.FramesNs = math.Min(f.DriverNs, r.DriverNs), math.Min(f.FramesNs, r.FramesNs)
		f.CostNs, f.RestNs = math.Min(f.CostNs, r.CostNs), math.Min(f.RestNs, r.RestNs)
		for _, x := range r.APIs {
			least(apis, x.API, x.Ns)
		}
		for _, x := range r.Frames {
			least(frames, x.Name, x.Ns)
		}
	}
	for k, v := range apis {
		f.APIs = append(f.APIs, apiPerCall{API: k, Ns: v})
	}
	for k, v := range frames {
		f.Frames = append(f.Frames, framePer{Name: k, Ns: v})
	}
	return f
}

// diffOf is statement i against statement base: the fastest rounds'
// timeit difference, and part by part the difference of each part's least
// time over the rounds (floorOf).
func diffOf(res *timeitResult, i, base int) timeitDiff {
	si, sb := &res.Stmts[i], &res.Stmts[base]
	fa, fb := floorOf(sb.rounds), floorOf(si.rounds)
	a, b := &fa, &fb
	d := timeitDiff{Stmt: i, Base: base, Name: si.Stmt, BaseName: sb.Stmt,
		RecordedNs: si.Recorded.MinNs - sb.Recorded.MinNs, BareNs: si.Bare.MinNs - sb.Bare.MinNs}
	parts := map[[2]string]float64{}
	for _, x := range b.APIs {
		parts[[2]string{"api", x.API}] += x.Ns
	}
	for _, x := range a.APIs {
		parts[[2]string{"api", x.API}] -= x.Ns
	}
	for _, x := range b.Frames {
		parts[[2]string{"frame", x.Name}] += x.Ns
	}
	for _, x := range a.Frames {
		parts[[2]string{"frame", x.Name}] -= x.Ns
	}
	for k, v := range parts {
		d.Parts = append(d.Parts, diffPart{Kind: k[0], Name: k[1], Ns: v})
	}
	sort.Slice(d.Parts, func(x, y int) bool {
		if ax, ay := math.Abs(d.Parts[x].Ns), math.Abs(d.Parts[y].Ns); ax != ay {
			return ax > ay
		}
		return d.Parts[x].Name < d.Parts[y].Name
	})
	d.FramesNs = b.FramesNs - a.FramesNs
	d.DriverNs = b.DriverNs - a.DriverNs
	d.CostNs = b.CostNs - a.CostNs
	d.RestNs = b.RestNs - a.RestNs
	for r := range si.BareNs {
		if r < len(sb.BareNs) {
			d.BareRounds = append(d.BareRounds, si.BareNs[r]-sb.BareNs[r])
		}
	}
	d.BareSpread = spreadOf(d.BareRounds)
	d.NoiseNs = math.Max((d.BareSpread.MaxNs-d.BareSpread.MinNs)/2, 0.02*math.Max(si.Bare.MinNs, sb.Bare.MinNs))
	d.ProgramNs = d.FramesNs + d.DriverNs
	if off := d.ProgramNs - d.BareNs; math.Abs(off) > d.NoiseNs {
		d.Disagrees = true
		d.Warning = fmt.Sprintf("the breakdown says the program's difference is %s (frames and driver calls), the bare rounds %s: %s apart, more than their noise (%s); more rounds (-r) or a quieter machine",
			signed(d.ProgramNs), signed(d.BareNs), ns(math.Abs(off)), ns(d.NoiseNs))
	}
	return d
}

func ns(v float64) string { return quantity.Duration(v) }

func writeTimeitJSON(w io.Writer, r *timeitResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func writeTimeitText(w io.Writer, r *timeitResult) error {
	var b strings.Builder
	pct := func(part, whole float64) string {
		if whole == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*part/whole)
	}
	for i, s := range r.Stmts {
		bd := s.Breakdown
		fmt.Fprintf(&b, "statement %d: %s\n", i+1, s.Stmt)
		fmt.Fprintf(&b, "  %d calls x %d rounds: %s per call recorded (median; %s..%s), %s bare (%s..%s)\n",
			s.Number, r.Rounds, ns(s.Recorded.MedianNs), ns(s.Recorded.MinNs), ns(s.Recorded.MaxNs),
			ns(s.Bare.MedianNs), ns(s.Bare.MinNs), ns(s.Bare.MaxNs))
		fmt.Fprintf(&b, "  per call in the fastest recorded round's trace of its timed loop: %s (%s of that round's timeit)\n",
			ns(bd.TotalNs), pct(bd.TotalNs, s.RecordedNs[s.BestRound]))
		fmt.Fprintf(&b, "    %-44s %8s  %10s\n", "", "per call", "ns/call")
		fmt.Fprintf(&b, "    %-44s %8s  %10s\n", "driver calls", "", ns(bd.DriverNs))
		rare := 0
		for _, a := range bd.APIs {
			if a.Calls < 0.005 && a.Ns < 0.5 {
				rare++ // the statement's first run's initialisation, say
				continue
			}
			fmt.Fprintf(&b, "      %-42s %8.2f  %10s\n", a.API, a.Calls, ns(a.Ns))
		}
		if rare > 0 {
			fmt.Fprintf(&b, "      (%d APIs called less than once in 200 calls, under 0.5 ns per call: --format json lists them)\n", rare)
		}
		fmt.Fprintf(&b, "    %-44s %8s  %10s\n", "Python frames (self time)", "", ns(bd.FramesNs))
		for j, f := range bd.Frames {
			if j == 12 {
				fmt.Fprintf(&b, "      ... %d more\n", len(bd.Frames)-12)
				break
			}
			fmt.Fprintf(&b, "      %-42s %8.2f  %10s\n", f.Name, f.Count, ns(f.Ns))
		}
		fmt.Fprintf(&b, "    %-44s %8s  %10s\n", "cuprof's own cost (calibrated)", "", ns(bd.CostNs))
		fmt.Fprintf(&b, "    %-44s %8s  %10s\n", "unattributed (the loop, code not seen)", "", ns(bd.RestNs))
		fmt.Fprintf(&b, "  recording added %s per call (fastest recorded round less fastest bare), %s of it not calibrated: cuprof's, not the program's\n",
			signed(s.AddedNs), signed(s.UncalibratedNs))
		if s.Trace != "" {
			fmt.Fprintf(&b, "  trace: %s\n", s.Trace)
		}
		b.WriteString("\n")
	}
	for _, d := range r.Diffs {
		fmt.Fprintf(&b, "statement %d - statement 1: %s per call recorded, %s bare (the fastest rounds; bare per round: median %s, %s..%s)\n",
			d.Stmt+1, signed(d.RecordedNs), signed(d.BareNs), signed(d.BareSpread.MedianNs), signed(d.BareSpread.MinNs), signed(d.BareSpread.MaxNs))
		fmt.Fprintf(&b, "  each part's least over the rounds: frames %s, driver calls %s, cuprof's own cost %s, unattributed %s; the largest parts:\n",
			signed(d.FramesNs), signed(d.DriverNs), signed(d.CostNs), signed(d.RestNs))
		for j, p := range d.Parts {
			if j == 10 || math.Abs(p.Ns) < 0.5 {
				break
			}
			fmt.Fprintf(&b, "    %-6s %-40s %10s\n", p.Kind, p.Name, signed(p.Ns))
		}
		if d.Warning != "" {
			fmt.Fprintf(&b, "  warning: %s\n", d.Warning)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, strings.TrimSuffix(b.String(), "\n"))
	return err
}

func signed(v float64) string {
	if v < 0 {
		return "-" + ns(-v)
	}
	return "+" + ns(v)
}
