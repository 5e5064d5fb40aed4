// Command cuprof records and analyses CUDA object-lifecycle traces.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cuprof/cuprof/internal/cbuild"
	"github.com/cuprof/cuprof/internal/output"
)

// Exit statuses (docs/cli.md). record exits with the traced program's own.
const (
	exitFailure = 1 // the command failed, or lint found what --fail-on names
	exitUsage   = 2 // the command line is wrong: unknown flag, bad value, wrong arguments
)

func main() {
	stopProfile := startCPUProfile(os.Stderr)
	err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stopProfile()
	cbuild.RemovePrivate() // C parts built for this run when the cache was not private
	if err == nil {
		return
	}
	code, msg := exitStatus(err)
	if msg != "" {
		fmt.Fprintln(os.Stderr, "cuprof:", msg)
	}
	os.Exit(code)
}

// exitStatus is the process status for err returned by run, and the message
// to print first ("" for none).
func exitStatus(err error) (int, string) {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			return ee.code, ee.err.Error()
		}
		return ee.code, ""
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage, ue.Error()
	}
	return exitFailure, err.Error()
}

// run executes the cuprof command line args; it is main without the process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCmd(&globalOptions{stdin: stdin, stdout: stdout, stderr: stderr})
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	completionShells(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	err := root.Execute()
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		return &usageError{err}
	}
	return err
}

// exitError carries an exit status out of run (a traced program's status,
// or lint's --fail-on), with an optional message to print first.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a wrong command line: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf makes a usageError.
func usageErrorf(format string, a ...any) error {
	return &usageError{fmt.Errorf(format, a...)}
}

// usageArgs makes an argument check's complaint a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{fmt.Errorf("%w (usage: cuprof %s)", err, cmd.Use)}
		}
		return nil
	}
}

// format is one value of a --format flag: its name and how it writes a T.
type format[T any] struct {
	name  string
	write func(io.Writer, T) error
}

// printableFormat writes what write writes with the bytes a terminal acts
// on escaped (output.Printable): the human-readable formats, text and CSV,
// show names from the trace, which may be anyone's.
func printableFormat[T any](write func(io.Writer, T) error) func(io.Writer, T) error {
	return func(w io.Writer, v T) error {
		p := output.Printable(w)
		if err := write(p, v); err != nil {
			return err
		}
		return p.Flush()
	}
}

// formatWriter returns the writer of the --format value name among formats,
// or a usage error listing them.
func formatWriter[T any](name string, formats ...format[T]) (func(io.Writer, T) error, error) {
	names := make([]string, len(formats))
	for i, f := range formats {
		if f.name == name {
			if name == "text" || name == "csv" {
				return printableFormat(f.write), nil
			}
			return f.write, nil
		}
		names[i] = f.name
	}
	list := strings.Join(names, ", ")
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	return nil, usageErrorf("unknown --format %q; use %s", name, list)
}
