package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoCompiler is returned by Build when no C compiler is found.
var ErrNoCompiler = errors.New("no C compiler found (install gcc or set CC)")

// Compiler returns the C compiler Build uses: $CC, else gcc, else cc.
func Compiler() (string, error) {
	if cc := os.Getenv("CC"); cc != "" {
		fields := strings.Fields(cc)
		if p, err := exec.LookPath(fields[0]); err == nil {
			return p, nil
		}
	}
	for _, name := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoCompiler
}

// Build compiles the simulated driver into dir as libcuda.so.1, with a
// libcuda.so link beside it (for -lcuda), and returns the library's path.
// dir must exist; the sources are written to a private directory inside it
// and removed afterwards.
func Build(ctx context.Context, dir string) (string, error) {
	cc, err := Compiler()
	if err != nil {
		return "", err
	}
	src, err := os.MkdirTemp(dir, "sim-src-")
	if err != nil {
		return "", fmt.Errorf("build simulated driver: %w", err)
	}
	defer os.RemoveAll(src)
	if err := WriteSources(src); err != nil {
		return "", fmt.Errorf("build simulated driver: %w", err)
	}
	out := filepath.Join(dir, Soname)
	args := append(append([]string{}, CFlags...), "-ffile-prefix-map="+src+"=.", "-o", out)
	for _, f := range CompiledFiles {
		args = append(args, filepath.Join(src, f))
	}
	cmd := exec.CommandContext(ctx, cc, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build simulated driver with %s: %w: %s", cc, err, strings.TrimSpace(stderr.String()))
	}
	if err := os.Chmod(out, 0o700); err != nil {
		return "", fmt.Errorf("build simulated driver: %w", err)
	}
	link := filepath.Join(dir, "libcuda.so")
	_ = os.Remove(link)
	if err := os.Symlink(Soname, link); err != nil {
		return "", fmt.Errorf("build simulated driver: %w", err)
	}
	return out, nil
}

// WriteSources writes the embedded sources into dir (files 0600).
func WriteSources(dir string) error {
	for _, name := range SourceFiles {
		b, err := fs.ReadFile(Sources, name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
