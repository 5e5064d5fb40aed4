package record

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cuprof/cuprof/internal/cbuild"
)

// Python modes of WithPython.
const (
	PythonFull   = "full"   // Python functions and the C-level callables Python code calls
	PythonStacks = "stacks" // the Python stack of each driver call only: no C-level frames, no helpers (cheaper)
	PythonOff    = "off"    // no bootstrap: driver calls only
)

// Python scopes of WithPythonScope.
const (
	ScopeCUDA = "cuda" // code that never leads to a recorded event is turned off after a threshold
	ScopeAll  = "all"  // every frame is recorded
)

// DefaultPythonThreshold is how many activations of a piece of code (or C
// calls of one call site) with nothing recorded inside turn it off under
// ScopeCUDA.
const DefaultPythonThreshold = 1000

//go:embed pyboot/sitecustomize.py
var pyboot embed.FS

// WithPython sets how Python programs' frames are recorded: PythonFull (the
// default), PythonStacks or PythonOff.
func WithPython(mode string) Option { return optionFunc(func(c *config) { c.python = mode }) }

// WithPythonScope sets which Python frames are recorded: ScopeCUDA (the
// default: those on the paths to driver calls, and their direct callees) or
// ScopeAll; threshold (0: DefaultPythonThreshold) is ScopeCUDA's.
func WithPythonScope(scope string, threshold int) Option {
	return optionFunc(func(c *config) { c.pyScope, c.pyThreshold = scope, threshold })
}

// DefaultPythonHelperMin is the median time per call under which a
// wrapper's helper (a callee of code leading to CUDA with no driver call
// under it) is no longer written once judged (docs/python.md).
const DefaultPythonHelperMin = 300 * time.Nanosecond

// WithPythonHelperMin sets the median time per call under which a wrapper's
// helper stops being written after its first threshold calls (0: the
// default; negative: every helper is always written).
func WithPythonHelperMin(d time.Duration) Option {
	return optionFunc(func(c *config) { c.pyHelperMin = d })
}

// checkPython validates the Python options.
func (c *config) checkPython() error {
	switch c.python {
	case "":
		c.python = PythonFull
	case PythonFull, PythonStacks, PythonOff:
	default:
		return fmt.Errorf("invalid --python %q: use full, stacks or off", c.python)
	}
	switch c.pyScope {
	case "":
		c.pyScope = ScopeCUDA
	case ScopeCUDA, ScopeAll:
	default:
		return fmt.Errorf("invalid --python-scope %q: use cuda or all", c.pyScope)
	}
	if c.pyThreshold == 0 {
		c.pyThreshold = DefaultPythonThreshold
	}
	if c.pyThreshold < 1 || c.pyThreshold >= 60000 {
		return fmt.Errorf("invalid --python-threshold %d: give 1 to 59999", c.pyThreshold)
	}
	if c.pyHelperMin == 0 {
		c.pyHelperMin = DefaultPythonHelperMin
	}
	if c.pyHelperMin > time.Second {
		return fmt.Errorf("invalid --python-helper-min %v: give at most 1s, or 0 to write every helper", c.pyHelperMin)
	}
	return nil
}

// bootstrapDir returns the directory holding the sitecustomize that starts
// the shim's Python hooks: a cached copy, trusted like the shim's build
// (internal/cbuild), which stays where it is after the recording. It goes
// on PYTHONPATH, which a child that outlives cuprof keeps: a directory
// removed at the end could be made again by another user, with a
// sitecustomize of theirs.
func bootstrapDir() (string, error) {
	files, err := fs.Sub(pyboot, "pyboot")
	if err == nil {
		var dir string
		if dir, err = cbuild.Files("pyboot", files); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("install the Python bootstrap: %w", err)
}

// pythonEnv returns the environment entries for the Python hooks: the
// bootstrap first on PYTHONPATH (the program's own entries after it) and
// the options. pythonPath is the program's PYTHONPATH ("" when unset).
func pythonEnv(cfg *config, pythonPath string) []string {
	if cfg.python == PythonOff || cfg.pyBoot == "" {
		env := []string{"CUPROF_PYTHON=" + PythonOff}
		if pythonPath != "" {
			env = append(env, "PYTHONPATH="+pythonPath)
		}
		return env
	}
	pp := cfg.pyBoot
	if pythonPath != "" {
		pp += string(os.PathListSeparator) + pythonPath
	}
	return []string{"PYTHONPATH=" + pp, "CUPROF_PYTHON=" + cfg.python, "CUPROF_PY_SCOPE=" + cfg.pyScope,
		"CUPROF_PY_THRESHOLD=" + strconv.Itoa(cfg.pyThreshold),
		"CUPROF_PY_HELPER_NS=" + strconv.FormatInt(max(cfg.pyHelperMin.Nanoseconds(), 0), 10)}
}

// pythonNotice says once, on w, why Python frames were not recorded in
// the processes where they were not (one line per reason).
func pythonNotice(w io.Writer, st []PythonStatus) {
	byReason := map[string][]PythonStatus{}
	for _, s := range st {
		if strings.Contains(s.Status, "frames off") {
			byReason[s.Status] = append(byReason[s.Status], s)
		}
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		ps := byReason[r]
		who := fmt.Sprintf("pid %d (%s)", ps[0].PID, filepath.Base(ps[0].Exe))
		if len(ps) > 1 {
			who = fmt.Sprintf("%d processes (pid %d, ...)", len(ps), ps[0].PID)
		}
		fmt.Fprintf(w, "cuprof: Python frames were not recorded in %s: %s; driver calls were\n", who, r)
	}
}
