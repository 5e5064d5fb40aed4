package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
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
	root := moduleRoot()
	if root != "" {
		if err := trustedModule(root); err != nil {
			fmt.Fprintf(g.stdout, "  (not building examples/tempbuffer from %s: %v; running cuprof's own copy of it)\n", root, err)
			root = ""
		}
	}
	if root != "" {
		if gobin, err := exec.LookPath("go"); err == nil {
			cmd := exec.Command(gobin, "build", "-o", bin, "./examples/tempbuffer")
			cmd.Dir = root
			// A go.work above the clone (in /tmp, say) would put its
			// modules in the build: only the clone's own go.mod counts.
			cmd.Env = append(os.Environ(), "GOWORK=off")
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

// trustedModule checks that nobody but the user (or root) could have put
// code into the clone at root that go build would compile and demo then run:
// every directory and file in it (.git aside) is the user's or root's and
// not writable by others. A clone of another user's (root running the demo
// in it, say) is not built from; demo runs its own copy of the example.
func trustedModule(root string) error {
	uid := uint32(os.Geteuid())
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" && path != root {
			return filepath.SkipDir
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
			return fmt.Errorf("%s has no owner", path)
		case sys.Uid != uid && sys.Uid != 0:
			return fmt.Errorf("%s belongs to uid %d, neither you nor root", path, sys.Uid)
		case st.Mode()&fs.ModeSymlink == 0 && st.Mode().Perm()&0o002 != 0:
			return fmt.Errorf("%s is writable by everyone (mode %#o)", path, st.Mode().Perm())
		}
		return nil
	})
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
