package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/internal/record"
)

type recordOptions struct {
	output string
	sim    bool
	buffer string
	timing string
	// live OTLP export (cmd/cuprof/export.go)
	otlp, otlpProtocol string
}

func newRecordCmd(g *globalOptions) *cobra.Command {
	o := &recordOptions{}
	cmd := &cobra.Command{
		Use:   "record [-o FILE] [--sim] [--buffer SIZE] -- CMD [ARGS...]",
		Short: "Run a program and record its CUDA driver calls and NVTX ranges",
		Long: `record runs CMD with cuprof's interposer shim preloaded and writes a .cuprof
trace of every wrapped driver call (contexts, streams, events, allocations,
pools, synchronizations, error checks, launches, copies) and NVTX range of the
program and of every process it starts. The exit status is the program's.

Without a CUDA driver on the machine (or with --sim) the program runs against
cuprof's simulated driver.`,
		Example: `  cuprof record -- python3 train.py
  cuprof record -o run.cuprof --buffer 256M -- ./bench`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("missing command: use cuprof record [flags] -- CMD ARGS")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRecord(cmd, g, o, args)
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "trace file to write (default cuprof-CMD-TIMESTAMP.cuprof)")
	cmd.Flags().BoolVar(&o.sim, "sim", false, "run against the simulated CUDA driver")
	cmd.Flags().StringVar(&o.buffer, "buffer", "64M", "ring buffer per process (bytes, or with K, M, G)")
	cmd.Flags().StringVar(&o.timing, "timing", "both", "clock reads per call: both (start and end) or end (half the overhead, no durations)")
	otlpStreamFlags(cmd, &o.otlp, &o.otlpProtocol)
	return cmd
}

// parseSize reads "65536", "256K", "64M", "1G" (powers of 1024).
func parseSize(s string) (uint64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := uint64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult, t = 1<<10, t[:n-1]
		case 'M':
			mult, t = 1<<20, t[:n-1]
		case 'G':
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || v == 0 || v > math.MaxUint64/mult {
		return 0, fmt.Errorf("invalid --buffer %q: give a size such as 65536, 256K or 64M", s)
	}
	return v * mult, nil
}

func runRecord(cmd *cobra.Command, g *globalOptions, o *recordOptions, args []string) error {
	buffer, err := parseSize(o.buffer)
	if err != nil {
		return err
	}
	if o.timing != "both" && o.timing != "end" {
		return fmt.Errorf("invalid --timing %q: use both or end", o.timing)
	}
	out := o.output
	if out == "" {
		out = fmt.Sprintf("cuprof-%s-%s.cuprof", filepath.Base(args[0]), time.Now().Format("20060102-150405"))
	}
	opts := []record.Option{
		record.WithOutput(out),
		record.WithBuffer(buffer),
		record.WithSim(o.sim),
		record.WithEndOnlyTiming(o.timing == "end"),
		record.WithStdio(g.stdin, g.stdout, g.stderr),
		record.WithVersion(version),
	}
	if f, ok := g.stderr.(*os.File); ok && isTerminal(f) {
		opts = append(opts, record.WithStatus(f))
	}
	streamer, err := startStreamer(cmd.Context(), o.otlp, o.otlpProtocol, args)
	if err != nil {
		return err
	}
	if streamer != nil {
		opts = append(opts, record.WithObserver(streamer))
	}
	res, err := record.Run(cmd.Context(), args, opts...)
	finishStreamer(g.stderr, streamer, out)
	if err != nil {
		return err
	}
	summary(g.stderr, res, out)
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}

func summary(w io.Writer, res *record.Result, out string) {
	fmt.Fprintf(w, "cuprof: %d events from %d processes written to %s", res.Events, res.Processes, out)
	if d := res.Drops; d > 0 {
		fmt.Fprintf(w, "; %d events dropped (buffer full: raise --buffer)", d)
	}
	fmt.Fprintln(w)
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
