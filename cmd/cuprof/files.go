package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/trace"
)

// Every command reads its traces through loadTrace and writes its files
// through writeOutput, so "-", the error wording, the damage and drop
// warnings and the way files are replaced are the same everywhere.

// warnings says which of loadTrace's warnings a command prints: those its
// output does not show itself.
type warnings int

const (
	warnDamage warnings = 1 << iota // the file was cut or damaged
	warnDrops                       // the capture dropped events
	warnAll    = warnDamage | warnDrops
)

// loadTrace reads the trace named on the command line ("-" is standard
// input), binary or text, and prints the warnings of warn on stderr: the
// file is damaged, the capture dropped events.
func loadTrace(g *globalOptions, path string, warn warnings) (*trace.Trace, error) {
	var t *trace.Trace
	var err error
	if path == "-" {
		t, err = trace.Read(g.stdin)
	} else {
		t, err = trace.ReadFile(path)
	}
	if err != nil {
		return nil, traceError(path, err)
	}
	warnTrace(g, path, t, warn)
	return t, nil
}

// openTrace opens the trace named on the command line for reading as a
// stream (trace.File: its tables loaded, its events read as they are
// iterated, in memory independent of the trace's length), with loadTrace's
// errors and warnings. An error met while iterating goes through traceError
// too.
func openTrace(g *globalOptions, path string, warn warnings) (*trace.File, error) {
	var f *trace.File
	var err error
	if r, ok := g.opened[path]; ok {
		f, err = trace.OpenReader(r)
	} else if path == "-" {
		f, err = trace.OpenReader(g.stdin)
	} else {
		f, err = trace.Open(path)
	}
	if err != nil {
		return nil, traceError(path, err)
	}
	warnTrace(g, path, f.Tables(), warn)
	return f, nil
}

// inputName is how messages name a trace given on the command line.
func inputName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// traceError words an error reading the trace at path.
func traceError(path string, err error) error {
	name := inputName(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot read trace %s: no such file or directory (check the path)", name)
	case errors.Is(err, trace.ErrNotTrace):
		return fmt.Errorf("cannot read trace %s: %w (want a .cuprof file or text starting with %q)", name, err, trace.TextHeader)
	case errors.Is(err, trace.ErrCorrupt):
		return fmt.Errorf("cannot read trace %s: %w (the file is damaged; record it again)", name, err)
	}
	return fmt.Errorf("cannot read trace %s: %w", name, err)
}

// warnTrace prints the warnings of warn that apply to t, read from path.
func warnTrace(g *globalOptions, path string, t *trace.Trace, warn warnings) {
	name := inputName(path)
	if t.Loss != nil && warn&warnDamage != 0 {
		fmt.Fprintf(g.info, "cuprof: warning: %s is damaged: %d bytes after offset %d were not read (%s); what follows covers what was read\n",
			name, t.Loss.Bytes, t.Loss.Offset, t.Loss.Reason)
	}
	if warn&warnDrops == 0 {
		return
	}
	// by reason, in the order of their first drop: a full buffer has a
	// fix (a larger --buffer), the others say what happened
	var reasons []string
	byReason := map[string]uint64{}
	for _, d := range t.Drops {
		if d.Events == 0 {
			continue
		}
		r := d.Reason
		if r == "" {
			r = "buffer full"
		}
		if _, ok := byReason[r]; !ok {
			reasons = append(reasons, r)
		}
		byReason[r] += d.Events
	}
	for _, r := range reasons {
		n := byReason[r]
		if r == "buffer full" {
			fmt.Fprintf(g.info, "cuprof: warning: %s: the capture dropped %d %s (buffer full); counts and times are low (record again with a larger --buffer)\n",
				name, n, plural(int(n), "event", "events"))
			continue
		}
		fmt.Fprintf(g.info, "cuprof: warning: %s: %d %s not recorded (%s); counts are low by them\n",
			name, n, plural(int(n), "event was", "events were"), r)
	}
}

// writeOutput writes path with write: "-" is standard output, anything else
// goes through internal/output (atomic, mode 0600 for new files, links and
// other users' special files refused without --force, an existing file
// kept as NAME.old, which stderr is told); opts are more of its options.
//
// Every file written says "cuprof: wrote FILE" on stderr (not with -q),
// so that what a command left behind is never a surprise.
//
// What a command writes from a trace can be made again: it is not synced
// before its rename (output.NoSync says why); writeRecording syncs.
func writeOutput(g *globalOptions, path string, write func(io.Writer) error, opts ...output.Option) error {
	return writeFile(g, path, write, append([]output.Option{output.NoSync()}, opts...)...)
}

// writeRecording is writeOutput for a trace recorded (timeit's), which is
// synced before its rename: it cannot be made again.
func writeRecording(g *globalOptions, path string, write func(io.Writer) error) error {
	return writeFile(g, path, write)
}

func writeFile(g *globalOptions, path string, write func(io.Writer) error, opts ...output.Option) error {
	if path == "-" {
		return write(g.stdout)
	}
	if err := output.WriteFile(path, write, append(outputOptions(g), opts...)...); err != nil {
		return err
	}
	g.tell(g.info, "cuprof: wrote %s\n", path)
	return nil
}

// outputOptions are internal/output's options from the command line.
func outputOptions(g *globalOptions) []output.Option {
	return []output.Option{output.Force(g.force), output.OnKeep(func(path, old string) {
		fmt.Fprintf(g.info, "cuprof: kept the previous %s as %s\n", path, old)
	})}
}

// checkOutput refuses an output that cannot be written, before the work
// that would fill it is done, and one that is one of the inputs.
func checkOutput(g *globalOptions, path string, inputs ...string) error {
	if path == "-" {
		return nil
	}
	for _, in := range inputs {
		if in != "-" && same(path, in) {
			return usageErrorf("output %s is the trace itself; choose another -o", path)
		}
	}
	return output.Check(path, outputOptions(g)...)
}

// defaultOutput is the output name a command uses without -o: the trace's
// name with its extension replaced, in the current directory ("cuprof"
// for standard input). Like any output, an existing file of that name is
// kept as NAME.old when it is written.
func defaultOutput(g *globalOptions, input, ext string) (string, error) {
	base := "cuprof"
	if input != "-" {
		base = filepath.Base(input)
		for _, e := range []string{".txt", ".cuprof", ".gz", ".pb"} {
			base = strings.TrimSuffix(base, e)
		}
		if base == "" || base == "." {
			base = "cuprof"
		}
	}
	name := base + ext
	if same(name, input) {
		name = base + ".out" + ext
	}
	return name, checkOutput(g, name, input)
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
