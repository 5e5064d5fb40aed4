package seed

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	pyexamples "github.com/cuprof/cuprof/examples/python"
)

// ErrNoPython says that no Python interpreter was found for the Python seed.
var ErrNoPython = errors.New("no python3 found on PATH")

// Python returns the interpreter to run the Python seed with: name looked up
// on PATH (or used as it is when it holds a slash).
func Python(name string) (string, error) {
	if name == "" {
		name = "python3"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%w (%s)", ErrNoPython, name)
		}
		return "", fmt.Errorf("find %s: %w", name, err)
	}
	return p, nil
}

// PythonVariants are the seed script's variants, each a module-level function
// whose frame holds its driver calls: a heavy one (minicore.core, in the style
// of cuda.core 0.3) and the lean one that makes the same driver calls.
var PythonVariants = []struct{ Heavy, Lean string }{
	{"heavy_stream", "lean_stream"},
	{"heavy_alloc", "lean_alloc"},
}

// PythonWrapperFrames are the qualified names of the heavy wrapper's own
// work, by what it is: the options object parsed per call, the finalizer
// registered per object (by the members object's __init__, which calls
// weakref.finalize; Buffer._init does nothing else), the error check after
// each driver call. The bindings (module minicore.driver) build the result
// tuples the check reads: their time outside the ctypes call is the check's
// too.
var PythonWrapperFrames = map[string][]string{
	"options":  {"check_or_create_options"},
	"finalize": {"Stream._MembersNeededForFinalize.__init__", "Buffer._MembersNeededForFinalize.__init__", "Buffer._init", "finalize.__init__"},
	"check":    {"handle_return"},
}

// WritePython writes the Python seed (examples/python's wrappers_ctypes.py,
// _percall.py and the minicore package) under dir, creating it (0700) and
// its files (0600), and returns the path of the script to run. It refuses
// to write over anything that is not a regular file.
func WritePython(dir string) (string, error) {
	err := fs.WalkDir(pyexamples.Seed, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		if st, err := os.Lstat(dst); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file", dst)
		}
		b, err := pyexamples.Seed.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		return "", fmt.Errorf("write the Python seed: %w", err)
	}
	return filepath.Join(dir, pyexamples.SeedScript), nil
}
