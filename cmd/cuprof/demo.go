package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/lint"
	"github.com/cuprof/cuprof/internal/record"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/internal/seed"
	"github.com/cuprof/cuprof/trace"
)

type demoOptions struct {
	dir        string
	calls      int
	sim        bool
	runExample bool // hidden: be the recorded program
}

// demoChild returns the command line of the recorded program: cuprof itself
// running the example (tests replace it).
var demoChild = func(calls int) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find cuprof's own executable to run the example: %w", err)
	}
	return []string{exe, "demo", "--run-example", "-n", strconv.Itoa(calls)}, nil
}

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
widest bars.`,
		Example: `  cuprof demo
  cuprof demo --dir ./demo -n 500
  cuprof demo --sim`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.runExample {
				return seed.TempBuffer([]string{"-n", strconv.Itoa(o.calls)}, g.stdout)
			}
			return runDemo(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "directory for the trace and the profile (default: a new temporary directory)")
	f.IntVarP(&o.calls, "calls", "n", 200, "timed calls per variant")
	f.BoolVar(&o.sim, "sim", false, "use the simulated driver even when a CUDA driver is installed")
	f.BoolVar(&o.runExample, "run-example", false, "run the example in this process (what demo records)")
	_ = f.MarkHidden("run-example")
	return cmd
}

func runDemo(cmd *cobra.Command, g *globalOptions, o *demoOptions) error {
	if o.calls <= 0 {
		return fmt.Errorf("invalid -n %d: give a positive number of calls", o.calls)
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
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "cuprof-demo-")
		if err != nil {
			return fmt.Errorf("create a directory for the demo's files: %w (pass --dir)", err)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create --dir: %w", err)
	}
	tracePath := filepath.Join(dir, "tempbuffer.cuprof")
	profilePath := filepath.Join(dir, "tempbuffer.pb.gz")

	argv, err := demoChild(o.calls)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "\n== examples/tempbuffer (%d calls per variant) ==\n", o.calls)
	res, err := record.Run(cmd.Context(), argv,
		record.WithOutput(tracePath),
		record.WithSim(sim),
		record.WithStdio(g.stdin, g.stdout, g.stderr),
		record.WithVersion(version))
	if err != nil {
		return fmt.Errorf("record the example: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("the example failed with exit status %d (its output is above)", res.ExitCode)
	}
	summary(g.stdout, res, tracePath)
	tr, err := trace.ReadFile(tracePath)
	if err != nil {
		return fmt.Errorf("read the trace back: %w", err)
	}

	fmt.Fprintf(g.stdout, "\n== cuprof report %s ==\n", tracePath)
	if err := report.WriteText(g.stdout, report.Build(tr, report.Options{})); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}

	p, err := buildProfile(tracePath, &profileOptions{view: "api"}, g.stderr)
	if err != nil {
		return err
	}
	if err := writeProfile(profilePath, p); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "\n== flame graph ==\n")
	fmt.Fprintf(g.stdout, "wrote %s (%d stacks); open it with:\n", profilePath, len(p.Sample))
	fmt.Fprintf(g.stdout, "  cuprof view %s\n  go tool pprof -http=: %s\n", tracePath, profilePath)
	fmt.Fprintln(g.stdout, "after start-up (cuInit, the primary context), the widest bars are the threshold-0 variants: each")
	fmt.Fprintln(g.stdout, "synchronize (or destroy of the stream the memory was freed on) returns the pool's memory to the")
	fmt.Fprintln(g.stdout, "system, and the next allocation maps it again; to see only the variants:")
	fmt.Fprintf(g.stdout, "  cuprof view --focus 'thr=' %s\n", tracePath)

	fmt.Fprintf(g.stdout, "\n== cuprof lint %s ==\n", tracePath)
	if err := lint.WriteText(g.stdout, lint.Run(tr)); err != nil {
		return fmt.Errorf("write the lint findings: %w", err)
	}
	return nil
}
