package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/cuprof/cuprof/internal/output"
)

// Exit statuses of a program record could not start, as env, timeout,
// nohup and the shells give them.
const (
	exitNotExecutable = 126 // found, but not an executable file
	exitNotFound      = 127 // no such program
)

// findProgram finds the program record is to run, before anything is said
// or made: one that does not exist exits 127, one that cannot be executed
// 126 (env's and timeout's statuses), with one line saying why.
func findProgram(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	switch {
	case errors.Is(err, exec.ErrNotFound) && !strings.Contains(name, "/"):
		return "", &exitError{code: exitNotFound, err: fmt.Errorf("cannot run %s: no such program on PATH", name)}
	case errors.Is(err, fs.ErrNotExist):
		return "", &exitError{code: exitNotFound, err: fmt.Errorf("cannot run %s: no such file", name)}
	}
	if st, serr := os.Stat(name); serr == nil && st.IsDir() {
		return "", &exitError{code: exitNotExecutable, err: fmt.Errorf("cannot run %s: it is a directory", name)}
	}
	return "", &exitError{code: exitNotExecutable, err: fmt.Errorf("cannot run %s: not executable (%v)", name, errors.Unwrap(err))}
}

// checkRecordOutput refuses an output record could not write, before the
// program runs, and keeps an existing file of that name as NAME.old now (so
// the start line can say so), unless --force.
func checkRecordOutput(g *globalOptions, out string) error {
	if err := output.Check(out, output.Force(g.force)); err != nil {
		return err
	}
	if g.force {
		return nil
	}
	moved, err := output.NextFree(out)
	if err != nil {
		return err
	}
	if moved != "" {
		fmt.Fprintf(g.info, "cuprof: kept the previous %s as %s\n", out, moved)
	}
	return nil
}
