package main

import (
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/flame"
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
func buildProfile(path string, o *profileOptions, stderr io.Writer) (*profile.Profile, error) {
	view, err := flame.ParseView(o.view)
	if err != nil {
		return nil, fmt.Errorf("--view: %w", err)
	}
	opts := []flame.Option{flame.WithView(view)}
	if o.byThread {
		opts = append(opts, flame.WithThreadRoots())
	}
	if o.focus != "" {
		re, err := regexp.Compile(o.focus)
		if err != nil {
			return nil, fmt.Errorf("--focus %q is not a regular expression: %w", o.focus, err)
		}
		opts = append(opts, flame.WithFocus(re))
	}
	tr, err := trace.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	if tr.Loss != nil {
		fmt.Fprintf(stderr, "cuprof: warning: %s: read up to byte %d only (%s); the profile covers what was read\n", path, tr.Loss.Offset, tr.Loss.Reason)
	}
	p, warnings, err := flame.Build(tr, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "cuprof: warning: %s: %s\n", path, w)
	}
	return p, nil
}

// writeProfile writes p gzipped to a new file at path (mode 0600).
func writeProfile(path string, p *profile.Profile) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create profile: %w", err)
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("write profile %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write profile %s: %w", path, err)
	}
	return nil
}

type flameOptions struct {
	profileOptions
	out string
}

func newFlameCmd(g *globalOptions) *cobra.Command {
	o := &flameOptions{}
	cmd := &cobra.Command{
		Use:   "flame TRACE -o OUT.pb.gz",
		Short: "Write a trace as a pprof profile for flame graphs",
		Long: `flame turns TRACE into a pprof profile. Stacks are the NVTX ranges and cudawrap
spans open on each thread, the caller of each driver call (symbolized from the
trace's mappings) and the call itself. The api view has calls and self time
(the calibrated capture cost per call subtracted), so a wrapper's host overhead
is a wide bar; memory has allocations by allocation site (in use at the end of
the trace too); lifetime has object lifetimes by creation site.

Read it with go tool pprof (-http=: for the flame graph) or any pprof viewer,
or use "cuprof view" to open pprof's web UI directly.`,
		Example: `  cuprof flame run.cuprof -o run.pb.gz && go tool pprof -top run.pb.gz
  cuprof flame run.cuprof -o mem.pb.gz --view memory
  go tool pprof -tagfocus=bytes=1mb: -top mem.pb.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.out == "" {
				return fmt.Errorf("no output file; pass -o OUT.pb.gz")
			}
			p, err := buildProfile(args[0], &o.profileOptions, g.stderr)
			if err != nil {
				return err
			}
			if err := writeProfile(o.out, p); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "wrote %s (%s view, %d stacks); open it with: go tool pprof -http=: %s\n",
				o.out, o.view, len(p.Sample), o.out)
			return nil
		},
	}
	o.addFlags(cmd)
	cmd.Flags().StringVarP(&o.out, "output", "o", "", "profile file to write (gzipped pprof protobuf)")
	return cmd
}
