package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"syscall"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/pprofui"
)

type viewOptions struct {
	profileOptions
	noBrowser bool
	http      string
}

// viewStarted, when set (by tests), is called with the running server
// instead of waiting for an interrupt.
var viewStarted func(*pprofui.Server)

func newViewCmd(g *globalOptions) *cobra.Command {
	o := &viewOptions{}
	cmd := &cobra.Command{
		Use:   "view TRACE|PROFILE.pb.gz",
		Short: "Open pprof's web UI (flame graph, top, graph) on a trace",
		Long: `view builds the same profile as "cuprof flame" and serves pprof's web UI for it
from inside cuprof, on 127.0.0.1 and a free port unless --http says otherwise.
It prints the URL, opens a browser unless --no-browser, and serves until
interrupted. It opens no file a trace names (there are no source or
disassembly pages: a trace carries no source), writes nothing (no profile
copies in ~/pprof, no settings), and serves only this host: clients on a
loopback address whose Host header is 127.0.0.1, [::1] or localhost with the
server's port.

It also opens the pprof profiles cuprof writes (flame, diff -o): the file is
taken as it is, --focus filters its samples.`,
		Example: `  cuprof view run.cuprof
  cuprof view run.cuprof --view memory --no-browser --http 127.0.0.1:8080
  cuprof view change.pb.gz`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := viewProfile(g, cmd, args[0], &o.profileOptions)
			if err != nil {
				return err
			}
			if _, err := exec.LookPath("dot"); err != nil {
				fmt.Fprintln(g.stderr, "cuprof: graphviz is not installed (no dot on PATH): the Graph view is off; flame graph, top, peek and source work (install graphviz for the graph)")
			}
			opts := []pprofui.Option{pprofui.WithAddr(o.http), pprofui.WithName(pprofui.ProfileName(args[0]))}
			if !o.noBrowser {
				opts = append(opts, pprofui.WithBrowser())
			}
			s, err := pprofui.Start(p, opts...)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "serving the %s view of %s at %s (interrupt to stop)\n", o.view, args[0], s.URL)
			if viewStarted != nil {
				viewStarted(s)
				return s.Wait()
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				s.Close()
			}()
			return s.Wait()
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&o.noBrowser, "no-browser", false, "do not open a browser")
	cmd.Flags().StringVar(&o.http, "http", "127.0.0.1:0", "address to serve on (port 0: a free one)")
	return cmd
}

// viewProfile is the profile view serves: built from a trace, or a pprof
// profile file (what flame and diff -o write) read as it is.
func viewProfile(g *globalOptions, cmd *cobra.Command, path string, o *profileOptions) (*profile.Profile, error) {
	if path == "-" || !isProfile(path) {
		return buildProfile(g, path, o)
	}
	for _, f := range []string{"view", "by-thread"} {
		if cmd.Flags().Changed(f) {
			return nil, usageErrorf("--%s applies to traces; %s is a profile already", f, path)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read profile %s: %w", path, err)
	}
	p, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("cannot read profile %s: %w", path, err)
	}
	if o.focus != "" {
		re, err := regexp.Compile(o.focus)
		if err != nil {
			return nil, usageErrorf("--focus %q is not a regular expression: %w", o.focus, err)
		}
		if fm, _, _, _ := p.FilterSamplesByName(re, nil, nil, nil); !fm {
			return nil, fmt.Errorf("--focus %q matches no frame of %s", o.focus, path)
		}
	}
	return p, nil
}

// isProfile reports whether path holds a gzipped pprof profile rather than
// a trace (.cuprof traces, binary or text, are never gzipped).
func isProfile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [2]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return false
	}
	return head[0] == 0x1f && head[1] == 0x8b
}
