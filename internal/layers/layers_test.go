package layers

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/cuprof/cuprof"

// A layer is a rank and a group: an import must go to a lower rank, or stay
// in its group.
type layer struct {
	rank  int
	group string
}

// layers classifies the module's packages by path prefix (relative to the
// module; "x/..." is x and everything under it), the longest match first.
var layers = map[string]layer{
	"internal/output":                  {0, "base"},
	"internal/quantile":                {0, "base"},
	"internal/quantity":                {0, "base"},
	"internal/table":                   {0, "base"},
	"internal/handoff":                 {0, "base"},
	"internal/golden":                  {0, "base"},
	"internal/cbuild/...":              {0, "base"},
	"internal/prebuilt":                {0, "base"},
	"internal/grpcgzip":                {0, "base"},
	"internal/pyvenv":                  {0, "base"},
	"internal/pprofui":                 {0, "base"},
	"internal/layers":                  {0, "base"},
	"trace/internal/apigen":            {0, "base"},
	"internal/record/internal/ringgen": {0, "base"},
	"examples/python":                  {0, "base"},
	"cudawrap/internal/driver":         {0, "base"},

	"trace/...":          {1, "trace"},
	"internal/tracetest": {1, "trace"},
	"internal/hostid":    {1, "trace"},

	"analysis/...":        {2, "analysis"},
	"cudawrap/...":        {2, "capture"},
	"internal/record/...": {2, "capture"},

	"flame/...":         {3, "consumers"},
	"exporters/...":     {3, "consumers"},
	"internal/lint/...": {3, "consumers"},
	"internal/report":   {3, "consumers"},

	"internal/diff": {4, "compositions"},
	"internal/job":  {4, "compositions"},
	"internal/seed": {4, "compositions"},

	"cmd/...":      {5, "programs"},
	"examples/...": {5, "programs"},
	"bench/...":    {5, "programs"},

	"internal/prebuilt/gen": {5, "programs"},
}

// classify returns the layer of the package at rel (a path relative to the
// module) and the pattern that matched it.
func classify(rel string) (layer, string, bool) {
	best, bestLen := "", -1
	for pat := range layers {
		base, tree := strings.CutSuffix(pat, "/...")
		ok := rel == base || tree && strings.HasPrefix(rel, base+"/")
		if ok && len(base) > bestLen {
			best, bestLen = pat, len(base)
		}
	}
	if bestLen < 0 {
		return layer{}, "", false
	}
	return layers[best], best, true
}

// edges returns each package of the module (relative path) with the
// module's packages it imports (tests' imports not counted: they may reach
// up to check what uses them).
func edges(t *testing.T) map[string][]string {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the go command is needed to list the imports: %v", err)
		}
		t.Skipf("no go command on PATH (%v): cannot list the imports", err)
	}
	cmd := exec.Command(goTool, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	g := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		from, ok := rel(f[0])
		if !ok {
			continue
		}
		g[from] = nil
		for _, imp := range f[1:] {
			if to, ok := rel(imp); ok {
				g[from] = append(g[from], to)
			}
		}
	}
	return g
}

func rel(path string) (string, bool) {
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r, true
	}
	return "", false
}

// TestNoUpwardImports fails on an import from a package to one of a layer
// above it, or of another group of its own layer, and on a package no
// layer classifies.
func TestNoUpwardImports(t *testing.T) {
	g := edges(t)
	if len(g) < 20 {
		t.Fatalf("go list found %d packages of the module: not the whole module", len(g))
	}
	for from, tos := range g {
		lf, _, ok := classify(from)
		if !ok {
			t.Errorf("package %s is in no layer: add it to layers in internal/layers/layers_test.go", from)
			continue
		}
		for _, to := range tos {
			lt, _, ok := classify(to)
			if !ok {
				continue // reported as a package of its own
			}
			if lt.rank < lf.rank || lt.group == lf.group {
				continue
			}
			t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s): an upward edge; move what it needs down, or invert the dependency",
				from, lf.rank, lf.group, to, lt.rank, lt.group)
		}
	}
}

// TestClassifyCatchesUpward checks the rule on made-up edges, so that a
// test that cannot fail is not mistaken for a clean graph.
func TestClassifyCatchesUpward(t *testing.T) {
	for _, c := range []struct {
		from, to string
		upward   bool
	}{
		{"trace", "analysis", true},
		{"analysis", "flame", true},
		{"internal/record", "analysis", true},
		{"analysis", "internal/record", true},
		{"exporters/otlp", "cmd/cuprof", true},
		{"flame", "internal/diff", true},
		{"internal/diff", "flame", false},
		{"exporters/perfetto/internal/legacy", "analysis", false},
		{"cudawrap/sim", "cudawrap/shim", false},
		{"trace", "internal/output", false},
	} {
		lf, _, _ := classify(c.from)
		lt, _, _ := classify(c.to)
		if upward := !(lt.rank < lf.rank || lt.group == lf.group); upward != c.upward {
			t.Errorf("%s -> %s: upward %v, want %v", c.from, c.to, upward, c.upward)
		}
	}
}
