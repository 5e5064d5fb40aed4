package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
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
It prints the URL, opens a browser on it unless --no-browser or there is no
display (no DISPLAY or WAYLAND_DISPLAY: over SSH it says how to tunnel), and
serves until interrupted. The URL carries a random token (as Jupyter's does):
requests without it are refused, so another user of this machine cannot read
the profile; the browser is handed a private file that redirects to the URL,
so the token is not on its command line. It opens no file a trace names
(there are no source or disassembly pages: a trace carries no source), writes
nothing (no profile copies in ~/pprof, no settings), and on a loopback address
serves only this host: clients on a loopback address whose Host header is
127.0.0.1, [::1] or localhost, with any port, so that an SSH tunnel
(ssh -L 9000:127.0.0.1:PORT) works. --http 0.0.0.0:PORT serves other machines
too, with a warning: the token alone protects the profile then. The Graph
page needs graphviz (dot on PATH); without it view says so and the flame
graph, top and peek pages work.

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
				fmt.Fprintln(g.info, "cuprof: graphviz is not installed (no dot on PATH): the Graph page (/ui/graph) is off; the flame graph, top and peek pages work (install graphviz, e.g. apt-get install graphviz, for the graph)")
			}
			opts := []pprofui.Option{pprofui.WithAddr(o.http), pprofui.WithName(pprofui.ProfileName(args[0]))}
			s, err := pprofui.Start(p, opts...)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "serving the %s view of %s at %s (interrupt to stop; the URL carries the token the server needs)\n", o.view, args[0], s.URL)
			viewNotes(g, s, !o.noBrowser)
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

// viewNotes warns when the server listens beyond this host, opens the
// browser on the URL with the token (when asked and there is a display),
// and otherwise says how to reach the page, through an SSH tunnel too.
func viewNotes(g *globalOptions, s *pprofui.Server, browser bool) {
	addr := strings.TrimPrefix(s.Base, "http://")
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(g.info, "cuprof: warning: serving on %s, which other machines can reach: the URL's token is all that protects the profile, and it travels as plain HTTP (an SSH tunnel to 127.0.0.1 keeps it on this host)\n", addr)
	}
	if !browser {
		return
	}
	err := s.OpenBrowser()
	switch {
	case err == nil:
		return
	case errors.Is(err, pprofui.ErrNoDisplay):
		fmt.Fprintf(g.info, "cuprof: %v: no browser started; open the URL above, or from your own machine: ssh -L 8080:127.0.0.1:%s THIS-HOST, then the URL with 127.0.0.1:8080 in place of %s\n", err, port, addr)
	default:
		fmt.Fprintf(g.info, "cuprof: could not start a browser (%v); open the URL above\n", err)
	}
}

// viewProfile is the profile view serves: built from a trace, or a pprof
// profile file (what flame and diff -o write) read as it is. The input is
// opened once and told apart by its first two bytes (gzip's magic: a
// profile; .cuprof traces, binary or text, are never gzipped) without
// consuming them, so a FIFO or standard input works too.
func viewProfile(g *globalOptions, cmd *cobra.Command, path string, o *profileOptions) (*profile.Profile, error) {
	var in io.Reader = g.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, traceError(path, err)
		}
		defer f.Close()
		in = f
	}
	br := bufio.NewReaderSize(in, 64<<10)
	if head, _ := br.Peek(2); len(head) < 2 || head[0] != 0x1f || head[1] != 0x8b {
		gg := *g
		gg.opened = map[string]io.Reader{path: br}
		return buildProfile(&gg, path, o)
	}
	for _, f := range []string{"view", "by-thread"} {
		if cmd.Flags().Changed(f) {
			return nil, usageErrorf("--%s applies to traces; %s is a profile already", f, inputName(path))
		}
	}
	p, err := readProfile(br)
	if err != nil {
		return nil, fmt.Errorf("cannot read profile %s: %w", inputName(path), err)
	}
	if o.focus != "" {
		re, err := regexp.Compile(o.focus)
		if err != nil {
			return nil, usageErrorf("--focus %q is not a regular expression: %w", o.focus, err)
		}
		if fm, _, _, _ := p.FilterSamplesByName(re, nil, nil, nil); !fm {
			return nil, fmt.Errorf("--focus %q matches no frame of %s", o.focus, inputName(path))
		}
	}
	return p, nil
}

// maxProfileBytes bounds a profile view reads, compressed and decompressed:
// pprof's ParseData would decompress a gzip bomb whole. The profiles cuprof
// writes hold one sample per distinct stack and are far smaller. A variable
// for tests.
var maxProfileBytes int64 = 32 << 20

// readProfile reads a gzipped pprof profile from r, decompressing it here
// within maxProfileBytes before pprof parses it.
func readProfile(r io.Reader) (*profile.Profile, error) {
	zr, err := gzip.NewReader(io.LimitReader(r, maxProfileBytes))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxProfileBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxProfileBytes {
		return nil, fmt.Errorf("it decompresses to more than %d MiB, more than any profile cuprof writes (a gzip bomb?); open it with go tool pprof if it is yours", maxProfileBytes>>20)
	}
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		return nil, errors.New("it is gzip inside gzip, which no pprof writer makes")
	}
	return profile.ParseData(data)
}
