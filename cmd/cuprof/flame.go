package main

import (
	"fmt"
	"regexp"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/trace"
)

// profileOptions are the flags that choose what profile a trace becomes,
// shared by flame and view.
type profileOptions struct {
	view     string
	byThread bool
	focus    string
}

func (o *profileOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.view, "view", "api", "what to measure: api (calls, self time), memory (allocations by site) or lifetime (object lifetimes by creation site)")
	f.BoolVar(&o.byThread, "by-thread", false, "root every stack at its process and thread")
	f.StringVar(&o.focus, "focus", "", "keep only stacks with a frame matching this regular expression")
}

// buildProfile reads the trace at path and turns it into a profile, printing
// the builder's warnings to stderr.
func buildProfile(g *globalOptions, path string, o *profileOptions) (*profile.Profile, error) {
	p, _, _, err := replayProfile(g, path, o)
	return p, err
}

// buildProfileFrames is buildProfile that also returns the trace's Python
// wrapper frames (the report's frames table), from the same replay.
func buildProfileFrames(g *globalOptions, path string, o *profileOptions) (*profile.Profile, []report.FrameRow, error) {
	p, tables, a, err := replayProfile(g, path, o)
	if err != nil {
		return nil, nil, err
	}
	return p, report.FrameRows(tables, a), nil
}

// replayProfile replays the trace at path once into a profile, returning
// the trace's tables and the analysis beside it.
func replayProfile(g *globalOptions, path string, o *profileOptions) (*profile.Profile, *trace.Trace, *analysis.Analysis, error) {
	view, err := flame.ParseView(o.view)
	if err != nil {
		return nil, nil, nil, usageErrorf("--view: %w", err)
	}
	opts := []flame.Option{flame.WithView(view)}
	if o.byThread {
		opts = append(opts, flame.WithThreadRoots())
	}
	if o.focus != "" {
		re, err := regexp.Compile(o.focus)
		if err != nil {
			return nil, nil, nil, usageErrorf("--focus %q is not a regular expression: %w", o.focus, err)
		}
		opts = append(opts, flame.WithFocus(re))
	}
	// The trace is read as a stream: the builder sums samples in the
	// analysis's callbacks and keeps no per-event state.
	f, err := openTrace(g, path, warnAll)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	b, err := flame.NewBuilder(f.Tables(), opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	events := f.NewEventReader()
	pr := newReadProgress(g, "profile", f.NumEvents(), false, false)
	a := analysis.Run(f.Tables(), pr.wrap(events.All()), b.Options()...)
	pr.done()
	if err := events.Err(); err != nil {
		return nil, nil, nil, traceError(path, err)
	}
	p, warnings := b.Profile(a)
	for _, w := range warnings {
		fmt.Fprintf(g.info, "cuprof: warning: %s: %s\n", path, w)
	}
	if o.focus != "" && len(p.Sample) == 0 {
		return nil, nil, nil, fmt.Errorf("--focus %q matches no frame of %s (frames are API names, NVTX ranges, cudawrap spans and callers: see cuprof report)", o.focus, path)
	}
	return p, f.Tables(), a, nil
}

// writeProfile writes p gzipped to path (output.WriteFile: mode 0600).
func writeProfile(g *globalOptions, path string, p *profile.Profile) error {
	return writeOutput(g, path, p.Write)
}

// profileExt is the default file extension of a view's profile.
func profileExt(view string) string {
	if view == "" || view == "api" {
		return ".pb.gz"
	}
	return "." + view + ".pb.gz"
}

type flameOptions struct {
	profileOptions
	out string
}

func newFlameCmd(g *globalOptions) *cobra.Command {
	o := &flameOptions{}
	cmd := &cobra.Command{
		Use:   "flame TRACE [-o OUT.pb.gz]",
		Short: "Write a trace as a pprof profile for flame graphs",
		Long: `flame turns TRACE into a pprof profile. Stacks are the Python frames, NVTX
ranges and cudawrap spans open on each thread, as they nest, the caller of each
driver call (symbolized from the trace's mappings) and the call itself. The api
view has calls and self time (the calibrated capture cost subtracted), so a
wrapper's own time is a wide bar of its own; memory has allocations by
allocation site (in use at the end of the trace too); lifetime has object
lifetimes by creation site, Python frames included.

Without -o the profile is written to the trace's name with .pb.gz
(.memory.pb.gz, .lifetime.pb.gz for those views) in the current directory, an
existing file of that name being kept as NAME.old. TRACE "-" reads standard
input.

Read it with go tool pprof (-http=: for the flame graph) or any pprof viewer,
or use "cuprof view" to open pprof's web UI directly.

Several traces, or a folder of them (a job's ranks), give the job's flame
graph: each trace's profile, merged (pprof's profile merge), every sample
labelled with its rank, local_rank and host, so that -tagfocus rank=N or
-tagshow rank slices it by rank. -o is required then.`,
		Example: `  cuprof flame run.cuprof -o run.pb.gz && go tool pprof -top run.pb.gz
  cuprof flame run.cuprof -o mem.pb.gz --view memory
  go tool pprof -tagfocus=bytes=1mb: -top mem.pb.gz
  cuprof flame job/4242/ -o job.pb.gz && go tool pprof -tagfocus=rank=17 -top job.pb.gz`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if isJob(args) {
				return runJobFlame(g, o, args)
			}
			if o.out != "" {
				if err := checkOutput(g, o.out, args[0]); err != nil {
					return err
				}
			}
			p, err := buildProfile(g, args[0], &o.profileOptions)
			if err != nil {
				return err
			}
			if o.out == "" {
				if o.out, err = defaultOutput(g, args[0], profileExt(o.view)); err != nil {
					return err
				}
			}
			if err := writeProfile(g, o.out, p); err != nil {
				return err
			}
			if o.out != "-" { // the profile itself is on stdout then
				g.tell(g.info, "cuprof: %s view, %d stacks; open it with: go tool pprof -http=: %s\n",
					o.view, len(p.Sample), o.out)
			}
			return nil
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "profile file to write (gzipped pprof protobuf; default TRACE.pb.gz, - for standard output)")
	return cmd
}
