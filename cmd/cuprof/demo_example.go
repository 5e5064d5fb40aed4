package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// exampleProgram puts examples/tempbuffer at dir/tempbuffer, a real file
// with its symbols (so lint's where-lines name the thread tempbuffer and
// the callers cw_stream_destroy+0x2e), and returns how to run it: built
// from the source with go build when cuprof runs in a clone of its module
// with a Go toolchain, else a copy of cuprof's own executable, which
// carries the same code (internal/seed) behind demo --run-example.
func exampleProgram(g *globalOptions, dir string, calls int) ([]string, error) {
	bin, err := filepath.Abs(filepath.Join(dir, "tempbuffer"))
	if err != nil {
		return nil, err
	}
	n := strconv.Itoa(calls)
	if root := moduleRoot(); root != "" {
		if gobin, err := exec.LookPath("go"); err == nil {
			cmd := exec.Command(gobin, "build", "-o", bin, "./examples/tempbuffer")
			cmd.Dir = root
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err == nil {
				fmt.Fprintf(g.stdout, "  (built examples/tempbuffer from %s into %s)\n", root, bin)
				return []string{bin, "-n", n}, nil
			}
			fmt.Fprintf(g.stdout, "  (go build of examples/tempbuffer failed, running cuprof's own copy of it: %s)\n", firstLineOf(out.String()))
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find cuprof's own executable to run the example: %w", err)
	}
	if err := copyExecutable(exe, bin); err != nil {
		return nil, fmt.Errorf("copy cuprof to %s to run the example: %w", bin, err)
	}
	return []string{bin, "demo", "--run-example", "-n", n}, nil
}

// moduleRoot is the directory of cuprof's own go.mod at or above the
// current directory ("" when cuprof is not run inside a clone).
func moduleRoot() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/cuprof/cuprof\n")) {
			if _, err := os.Stat(filepath.Join(d, "examples", "tempbuffer", "main.go")); err == nil {
				return d
			}
			return ""
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// copyExecutable copies src to dst (mode 0700), replacing a previous copy.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tempbuffer.tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o700); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

func firstLineOf(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
