// Package pyvenv makes the virtual environments in which cuprof's tests run
// the real Python CUDA libraries (cuda.core, cuda.bindings, numba-cuda,
// nvtx, IPython) on the simulated driver: one per CPython, with exactly the
// packages of requirements.txt, installed from the package index by pip and
// kept between runs in a cache directory named by the interpreter's version
// and a hash of the pins and of the interpreter, so a new pin or a
// rebuilt interpreter makes a new one and never reuses a stale one.
//
// Where: $CUPROF_PYLIBS_VENVS, else $XDG_CACHE_HOME/cuprof-ci, else
// ~/.cache/cuprof-ci; each environment is DIR/venv-VERSION-HASH. The tests
// call Ensure, which builds what is missing (serialized across processes
// by a lock file), so `go test ./...` needs nothing set up beforehand
// beyond reaching the index once; .ci/pylibs.sh builds them first in CI and
// prints what each holds.
package pyvenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Requirements is requirements.txt: every package pinned.
//
//go:embed requirements.txt
var Requirements []byte

// ErrNoIndex is returned when pip could not reach the package index (or
// it does not have a pinned version for this interpreter).
var ErrNoIndex = errors.New("the Python package index cannot be reached or lacks a pinned wheel")

// completeFile marks an environment whose installation finished; it holds
// pip freeze's output.
const completeFile = ".cuprof-complete"

// Root is the directory the environments are kept in.
func Root() (string, error) {
	if d := os.Getenv("CUPROF_PYLIBS_VENVS"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("python environments: no cache directory: %w (set CUPROF_PYLIBS_VENVS)", err)
	}
	return filepath.Join(d, "cuprof-ci"), nil
}

// Dir is the environment of the CPython version whose interpreter is
// python.
func Dir(python, version string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(Requirements)
	if real, err := filepath.EvalSymlinks(python); err == nil {
		python = real
	}
	if fi, err := os.Stat(python); err == nil {
		fmt.Fprintf(h, "\x00%s\x00%d\x00%d", python, fi.Size(), fi.ModTime().UnixNano())
	}
	return filepath.Join(root, "venv-"+version+"-"+hex.EncodeToString(h.Sum(nil))[:12]), nil
}

// Python is the interpreter of an environment directory.
func Python(dir string) string { return filepath.Join(dir, "bin", "python") }

// Freeze is what an environment holds, as pip freeze said when it was made.
func Freeze(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, completeFile))
	return string(b), err
}

// Ensure returns the interpreter of the environment for python (CPython
// version), making the environment first when it is missing or was left
// half made. An index pip cannot reach is ErrNoIndex.
func Ensure(ctx context.Context, python, version string) (string, error) {
	dir, err := Dir(python, version)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, completeFile)); err == nil {
		return Python(dir), nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", fmt.Errorf("python environment for %s: %w", version, err)
	}
	lock, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("python environment for %s: %w", version, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("python environment for %s: lock: %w", version, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(filepath.Join(dir, completeFile)); err == nil {
		return Python(dir), nil // another process made it while this one waited
	}
	if err := build(ctx, python, dir); err != nil {
		return "", fmt.Errorf("python environment for CPython %s in %s: %w", version, dir, err)
	}
	return Python(dir), nil
}

// build makes the environment in dir: a venv, the pinned packages without
// their dependencies' resolution (all are pinned), pip check, then the
// marker with pip freeze's output. Lock held.
func build(ctx context.Context, python, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	req := dir + ".requirements.txt"
	if err := os.WriteFile(req, Requirements, 0o600); err != nil {
		return err
	}
	defer os.Remove(req)
	steps := [][]string{
		{python, "-m", "venv", dir},
		{Python(dir), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--retries", "2",
			"--timeout", "30", "--only-binary", ":all:", "--no-deps", "--no-compile", "-r", req},
		{Python(dir), "-m", "pip", "check", "--disable-pip-version-check"},
	}
	for _, argv := range steps {
		out, err := runStep(ctx, argv)
		if err != nil {
			if noIndex(out) {
				return fmt.Errorf("%w: %s", ErrNoIndex, lastLine(out))
			}
			return fmt.Errorf("%s: %w: %s", strings.Join(argv[1:], " "), err, lastLine(out))
		}
	}
	freeze, err := runStep(ctx, []string{Python(dir), "-m", "pip", "freeze", "--disable-pip-version-check"})
	if err != nil {
		return fmt.Errorf("pip freeze: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, completeFile), freeze, 0o600)
}

func runStep(ctx context.Context, argv []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PIP_NO_INPUT=1", "PYTHONNOUSERSITE=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// noIndex tells pip's output for an index it could not reach, or one
// without a pinned version.
func noIndex(out []byte) bool {
	for _, s := range []string{"Could not find a version", "No matching distribution", "NewConnectionError",
		"Network is unreachable", "Temporary failure in name resolution", "Max retries exceeded",
		"ConnectTimeoutError", "ProxyError"} {
		if bytes.Contains(out, []byte(s)) {
			return true
		}
	}
	return false
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
