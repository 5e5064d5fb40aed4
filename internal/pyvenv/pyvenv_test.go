package pyvenv

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestEnvironments makes (or finds) the environment of every CPython the
// tests run on and checks that it holds exactly the pinned packages, and
// that they import; it logs what each holds (go test -v: .ci/pylibs.sh
// prints them in the CI log).
func TestEnvironments(t *testing.T) {
	ins, missing, err := Interpreters("../record/testdata/python/versions")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range missing {
		t.Logf("CPython %s not installed: no environment", v)
	}
	if len(ins) == 0 {
		t.Skip("no pyenv CPython installed")
	}
	for _, in := range ins {
		t.Run(in.Version, func(t *testing.T) {
			py := Require(t, in)
			dir, err := Dir(in.Path, in.Version)
			if err != nil {
				t.Fatal(err)
			}
			freeze, err := Freeze(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("CPython %s environment %s:\n%s", in.Version, dir, freeze)
			for _, want := range []string{"cuda-core==", "cuda-bindings==", "cuda-pathfinder==", "numba-cuda==", "nvtx==", "numpy==", "pytest==", "ipython=="} {
				if !strings.Contains(freeze, "\n"+want) && !strings.HasPrefix(freeze, want) {
					t.Errorf("the environment lacks %s", strings.TrimSuffix(want, "=="))
				}
			}
			cmd := exec.Command(py, "-c", "import cuda.core, cuda.bindings.driver, nvtx, numpy, IPython; print('imported')")
			cmd.Env = append(os.Environ(), "PYTHONNOUSERSITE=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "imported" {
				t.Errorf("import: %v\n%s", err, out.String())
			}
		})
	}
}

func TestDirChangesWithPins(t *testing.T) {
	t.Setenv("CUPROF_PYLIBS_VENVS", t.TempDir())
	py, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := Dir(py, "3.12.1")
	if err != nil {
		t.Fatal(err)
	}
	saved := Requirements
	defer func() { Requirements = saved }()
	Requirements = append(append([]byte{}, saved...), "extra==1.0\n"...)
	b, _ := Dir(py, "3.12.1")
	c, _ := Dir(py, "3.13.0")
	if a == b || a == c || !strings.Contains(a, "venv-3.12.1-") {
		t.Errorf("environment directories %s, %s, %s: want distinct, named by version", a, b, c)
	}
}

func TestNoIndex(t *testing.T) {
	for out, want := range map[string]bool{
		"ERROR: Could not find a version that satisfies the requirement x==1": true,
		"WARNING: Retrying ... NewConnectionError(...)":                       true,
		"ERROR: x has requirement y, but you have z":                          false,
	} {
		if got := noIndex([]byte(out)); got != want {
			t.Errorf("noIndex(%q) = %v, want %v", out, got, want)
		}
	}
}
