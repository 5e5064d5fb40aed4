package pyvenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Interpreter is one pyenv CPython.
type Interpreter struct {
	Version string // as pyenv names it: 3.12.1
	Minor   int    // 12
	Path    string // its python3
}

// Interpreters returns the pyenv CPythons that versionsFile lists (one
// version a line, # comments) which are installed, and the versions that
// are not.
func Interpreters(versionsFile string) (found []Interpreter, missing []string, err error) {
	b, err := os.ReadFile(versionsFile)
	if err != nil {
		return nil, nil, err
	}
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		if home, err := os.UserHomeDir(); err == nil {
			root = filepath.Join(home, ".pyenv")
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		v := strings.TrimSpace(line)
		if v == "" || strings.HasPrefix(v, "#") {
			continue
		}
		p := filepath.Join(root, "versions", v, "bin", "python3")
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, v)
			continue
		}
		parts := strings.Split(v, ".")
		minor := 0
		if len(parts) > 1 {
			minor, _ = strconv.Atoi(parts[1])
		}
		found = append(found, Interpreter{Version: v, Minor: minor, Path: p})
	}
	return found, missing, nil
}

// InCI tells a CI run (CI=true), where a missing prerequisite fails a test
// instead of skipping it.
func InCI() bool { return os.Getenv("CI") == "true" }

// Require returns the interpreter of in's environment, making it if
// needed. When the package index cannot be reached the test skips, saying
// why, and in CI fails; any other failure fails it.
func Require(t testing.TB, in Interpreter) string {
	t.Helper()
	py, err := Ensure(context.Background(), in.Path, in.Version)
	if err != nil {
		if InCI() || !errors.Is(err, ErrNoIndex) {
			t.Fatalf("the real Python libraries on CPython %s: %v", in.Version, err)
		}
		t.Skipf("the real Python libraries on CPython %s: %v (in CI this fails; bash .ci/pylibs.sh makes the environments)", in.Version, err)
	}
	return py
}
