package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

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
		Use:   "view TRACE",
		Short: "Open pprof's web UI (flame graph, top, graph) on a trace",
		Long: `view builds the same profile as "cuprof flame" and serves pprof's web UI for it
from inside cuprof, on 127.0.0.1 and a free port unless --http says otherwise.
It prints the URL, opens a browser unless --no-browser, and serves until
interrupted. It opens no file a trace names (there are no source or
disassembly pages: a trace carries no source), writes nothing (no profile
copies in ~/pprof, no settings), and serves only this host: clients on a
loopback address whose Host header is 127.0.0.1, [::1] or localhost with the
server's port.`,
		Example: `  cuprof view run.cuprof
  cuprof view run.cuprof --view memory --no-browser --http 127.0.0.1:8080`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := buildProfile(args[0], &o.profileOptions, g.stderr)
			if err != nil {
				return err
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
