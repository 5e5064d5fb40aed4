// Command cuprof records and analyses CUDA object-lifecycle traces.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cuprof/cuprof/internal/cbuild"
)

func main() {
	err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cbuild.RemovePrivate() // C parts built for this run when the cache was not private
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "cuprof:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "cuprof:", err)
	os.Exit(1)
}

// run executes the cuprof command line args; it is main without the process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCmd(&globalOptions{stdin: stdin, stdout: stdout, stderr: stderr})
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.Execute()
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
