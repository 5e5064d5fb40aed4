package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/internal/seed"
	"github.com/cuprof/cuprof/trace"
)

type demoOptions struct {
	dir        string
	calls      int
	sim        bool
	python     string // interpreter for the Python seed; "none" skips it
	runExample bool   // hidden: be the recorded program
}

// demoChild returns the command line of the recorded program, built or
// copied into dir (demo_example.go; tests replace it).
var demoChild = exampleProgram

func newDemoCmd(g *globalOptions) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Record a seed example and show the report, flame graph and lint findings",
		Long: `demo records examples/tempbuffer under cuprof: the way cuda.cccl's
TemporaryStorageBuffer allocated (set the device current, create a stream,
allocate, free, destroy the stream, every call) against a direct stream-ordered
allocation, with the memory pool's release threshold at its maximum and at 0,
without and with a synchronize. It runs on the GPU when a CUDA driver is
installed, else on cuprof's simulated driver (with H200 costs), and says which.

It then prints the report, writes a flame graph profile and says how to open
it, and ends with the lint findings. With threshold 0 every synchronize (and
every destroy of a stream that freed memory) hands the pool's memory back to
the system and the next allocation maps it again: those variants are the
widest bars.

When a python3 is found (--python), demo then records the Python seed,
examples/python/wrappers_ctypes.py: a stream and buffer wrapper in the style
of cuda.core 0.3 (an options object parsed per call, a weakref.finalize per
object, a handle_return check after each driver call) against a lean one
making the same driver calls through ctypes, and shows the report's Python
wrapper frames and the heaviest stacks of its flame graph: the difference
between the two is the heavy wrapper's own time, in its options, finalize
and check frames.

Its files (the example, the seed, the traces and the profiles) go to a new
private directory in $TMPDIR, which it prints, or to --dir: created with mode
0700, or an existing directory of yours that nobody else can write (the
example and the seed are run from it).`,
		Example: `  cuprof demo
  cuprof demo --dir ./demo -n 500
  cuprof demo --sim
  cuprof demo --python none`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.runExample {
				return seed.TempBuffer([]string{"-n", strconv.Itoa(o.calls)}, g.stdout)
			}
			return runDemo(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "directory for the example, the traces and the profiles: created (mode 0700), or an existing one of yours that nobody else can write (default: a new one in $TMPDIR, printed; remove it when done)")
	f.IntVarP(&o.calls, "calls", "n", 200, "timed calls per variant")
	f.BoolVar(&o.sim, "sim", false, "use the simulated driver even when a CUDA driver is installed")
	f.StringVar(&o.python, "python", "python3", `Python interpreter for the Python seed ("none" to skip it)`)
	f.BoolVar(&o.runExample, "run-example", false, "run the example in this process (what demo records)")
	_ = f.MarkHidden("run-example")
	return cmd
}

func runDemo(cmd *cobra.Command, g *globalOptions, o *demoOptions) error {
	if o.calls <= 0 {
		return usageErrorf("invalid -n %d: give a positive number of calls", o.calls)
	}
	sim := o.sim || !record.DriverInstalled()
	if sim {
		fmt.Fprintln(g.stdout, "cuprof demo: running examples/tempbuffer on cuprof's simulated driver (H200 costs)")
		if !o.sim {
			fmt.Fprintln(g.stdout, "  (no CUDA driver on this machine; on a GPU machine the demo runs on the GPU)")
		}
	} else {
		fmt.Fprintln(g.stdout, "cuprof demo: running examples/tempbuffer on the GPU (libcuda.so.1)")
	}
	dir, err := demoDir(o.dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "  (its files go to %s: the example, the traces and the profiles; remove it when done)\n", dir)
	tracePath := filepath.Join(dir, "tempbuffer.cuprof")
	profilePath := filepath.Join(dir, "tempbuffer.pb.gz")

	argv, err := demoChild(g, dir, o.calls)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "\n== examples/tempbuffer (%d calls per variant) ==\n", o.calls)
	tr, err := demoRecord(cmd, g, argv, tracePath, sim, "the example")
	if err != nil {
		return err
	}

	fmt.Fprintf(g.stdout, "\n== cuprof report %s ==\n", tracePath)
	if err := report.WriteText(g.stdout, report.Build(tr, report.Options{})); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}

	if _, err := demoFlame(g, tracePath, profilePath, &profileOptions{view: "api"}); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "  cuprof view %s\n  go tool pprof -http=: %s\n", tracePath, profilePath)
	fmt.Fprintln(g.stdout, "after start-up (cuInit, the primary context), the widest bars are the threshold-0 variants: each")
	fmt.Fprintln(g.stdout, "synchronize (or destroy of the stream the memory was freed on) returns the pool's memory to the")
	fmt.Fprintln(g.stdout, "system, and the next allocation maps it again; to see only the variants:")
	fmt.Fprintf(g.stdout, "  cuprof view --focus 'thr=' %s\n", tracePath)

	fmt.Fprintf(g.stdout, "\n== cuprof lint %s ==\n", tracePath)
	if err := lint.WriteText(g.stdout, lint.Run(tr)); err != nil {
		return fmt.Errorf("write the lint findings: %w", err)
	}
	return demoPython(cmd, g, o, dir, sim)
}

// demoDir makes the directory the demo writes its example, seed, traces and
// profiles into, and runs the example and the Python seed from: a new
// private one in $TMPDIR (cuprof-demo-*, mode 0700) without --dir, else
// --dir, created or checked by output.PrivateDir. A directory someone else
// could write is refused: the Python seed imports from its own folder first
// and the example is executed from it, so a file planted there (an
// argparse.py, a tempbuffer) would run as the user, root included.
func demoDir(dir string) (string, error) {
	if dir == "" {
		d, err := output.TempDir("cuprof-demo-")
		if err != nil {
			return "", fmt.Errorf("create a directory for the demo's files: %w (pass --dir DIR)", err)
		}
		return d, nil
	}
	d, err := output.PrivateDir(dir)
	if err != nil {
		return "", fmt.Errorf("--dir %s: %w; give a new directory, or one only you can write", dir, err)
	}
	return d, nil
}

// demoRecord records one of the demo's programs (what names it in errors)
// into tracePath, prints the recording's summary and reads the trace back.
func demoRecord(cmd *cobra.Command, g *globalOptions, argv []string, tracePath string, sim bool, what string) (*trace.Trace, error) {
	res, err := record.Run(cmd.Context(), argv,
		record.WithOutput(tracePath),
		record.WithSim(sim),
		record.WithStdio(g.stdin, g.stdout, g.stderr),
		record.WithVersion(version))
	if err != nil {
		return nil, fmt.Errorf("record %s: %w", what, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("%s failed with exit status %d (its output is above)", what, res.ExitCode)
	}
	summary(g.stdout, res, tracePath)
	tr, err := loadTrace(g, tracePath, warnAll)
	if err != nil {
		return nil, fmt.Errorf("read the trace back: %w", err)
	}
	return tr, nil
}

// demoPython records the Python seed next to the Go example and shows its
// wrapper frames and flame graph; without an interpreter it says so and
// returns nil.
func demoPython(cmd *cobra.Command, g *globalOptions, o *demoOptions, dir string, sim bool) error {
	if o.python == "none" {
		return nil
	}
	py, err := seed.Python(o.python)
	if errors.Is(err, seed.ErrNoPython) {
		fmt.Fprintf(g.stdout, "\n(no Python seed: %v; pass --python PATH)\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	script, err := seed.WritePython(filepath.Join(dir, "python"))
	if err != nil {
		return err
	}
	tracePath := filepath.Join(dir, "wrappers.cuprof")
	profilePath := filepath.Join(dir, "wrappers.pb.gz")
	fmt.Fprintf(g.stdout, "\n== examples/python/wrappers_ctypes.py with %s (%d calls per variant) ==\n", py, o.calls)
	tr, err := demoRecord(cmd, g, []string{py, script, "-n", strconv.Itoa(o.calls)}, tracePath, sim, "the Python seed")
	if err != nil {
		return err
	}
	frames := 0
	for i := range tr.Events {
		if tr.Events[i].Kind == trace.KindFrame {
			frames++
		}
	}
	how := ""
	for _, p := range tr.Processes {
		if p.Python != "" {
			how = p.Python
		}
	}
	switch {
	case frames > 0:
		fmt.Fprintf(g.stdout, "Python frames: %d recorded (%s)\n", frames, how)
	case how != "":
		fmt.Fprintf(g.stdout, "Python frames: none recorded (%s)\n", how)
	default:
		fmt.Fprintln(g.stdout, "Python frames: none recorded (this cuprof records the driver calls only; they sit under ctypes' libffi)")
	}

	fmt.Fprintf(g.stdout, "\n== cuprof report %s: the wrapper frames ==\n", tracePath)
	if err := report.WriteFramesText(g.stdout, report.Build(tr, report.Options{})); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	fmt.Fprintf(g.stdout, "the whole report: cuprof report %s\n", tracePath)

	po := &profileOptions{view: "api"}
	if frames > 0 {
		po.focus = "^(heavy|lean)_"
	}
	p, err := demoFlame(g, tracePath, profilePath, po)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "  cuprof view --focus '^(heavy|lean)_' %s\n  go tool pprof -http=: %s\n", tracePath, profilePath)
	fmt.Fprintln(g.stdout, "the heaviest stacks (time; root first):")
	writeTopStacks(g.stdout, p, 12)
	if frames > 0 {
		fmt.Fprintln(g.stdout, "heavy_* and lean_* make the same driver calls: what heavy_* costs more is the wrapper's own")
		fmt.Fprintln(g.stdout, "time, in its frames around them: check_or_create_options (the options object),")
		fmt.Fprintln(g.stdout, "_MembersNeededForFinalize.__init__ (weakref.finalize), handle_return and the bindings' tuples.")
	} else {
		fmt.Fprintln(g.stdout, "without Python frames the flame graph cannot tell heavy_* from lean_*: every driver call")
		fmt.Fprintln(g.stdout, "sits under ctypes' libffi, and the wrappers' own time (the difference above) is not in it.")
	}
	return nil
}

// demoFlame builds the profile of the trace at tracePath, writes it to
// profilePath and prints the flame graph's heading.
func demoFlame(g *globalOptions, tracePath, profilePath string, po *profileOptions) (*profile.Profile, error) {
	p, err := buildProfile(g, tracePath, po)
	if err != nil {
		return nil, err
	}
	if err := writeProfile(g, profilePath, p); err != nil {
		return nil, err
	}
	fmt.Fprintf(g.stdout, "\n== flame graph ==\n")
	fmt.Fprintf(g.stdout, "wrote %s (%d stacks); open it with:\n", profilePath, len(p.Sample))
	return p, nil
}

// writeTopStacks prints the n stacks of p with the most time (its "time"
// sample type, else the last one), summed over samples with the same stack,
// root first; long stacks keep their last frames.
func writeTopStacks(w io.Writer, p *profile.Profile, n int) {
	vi := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "time" {
			vi = i
		}
	}
	if vi < 0 {
		return
	}
	sums := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			l := s.Location[i]
			for j := len(l.Line) - 1; j >= 0; j-- {
				names = append(names, l.Line[j].Function.Name)
			}
			if len(l.Line) == 0 {
				names = append(names, fmt.Sprintf("0x%x", l.Address))
			}
		}
		const keep = 7
		if len(names) > keep {
			names = append([]string{"..."}, names[len(names)-keep:]...)
		}
		sums[strings.Join(names, ";")] += s.Value[vi]
		total += s.Value[vi]
	}
	type stack struct {
		name string
		v    int64
	}
	var st []stack
	for k, v := range sums {
		st = append(st, stack{k, v})
	}
	sort.Slice(st, func(i, j int) bool {
		if st[i].v != st[j].v {
			return st[i].v > st[j].v
		}
		return st[i].name < st[j].name
	})
	for i, s := range st {
		if i == n {
			fmt.Fprintf(w, "  ... %d more stacks\n", len(st)-n)
			break
		}
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(s.v) / float64(total)
		}
		fmt.Fprintf(w, "  %10s %5.1f%%  %s\n", quantity.Duration(float64(s.v)), pct, s.name)
	}
}
