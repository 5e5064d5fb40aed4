package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

func TestDiffCmd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "change.pb.gz")
	base, newp := flameFixture("diff_base.txt"), flameFixture("diff_new.txt")
	stdout, stderr, err := runFlameCLI("diff", base, newp, "-o", out)
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, stderr)
	}
	p := readProfileFile(t, out)
	var neg bool
	for _, s := range p.Sample {
		if l := s.Label["pprof::base"]; len(l) == 1 && l[0] == "true" && s.Value[1] < 0 {
			neg = true
		}
	}
	if !neg {
		t.Error("differential profile has no negated pprof::base=true samples")
	}
	var text bytes.Buffer
	flame.WriteText(&text, p)
	checkFlameGolden(t, "diff.golden", fmt.Sprintf("$ cuprof diff diff_base.txt diff_new.txt -o $DIR/change.pb.gz\n--- stdout\n%s--- stderr\n%s--- profile\n%s",
		stdout, scrub(stderr, dir), text.String()))
	first := strings.SplitN(stdout, "\n", 4)[2] // after the header and its rule
	if !strings.Contains(first, "cuMemAllocAsync") {
		t.Errorf("first row = %q, want cuMemAllocAsync (largest change)", first)
	}
	// without -o: the table only
	stdout2, _, err := runFlameCLI("diff", base, newp)
	if err != nil || stdout2 != stdout {
		t.Errorf("diff without -o: %v, table %q", err, stdout2)
	}
}

// TestDiffFrames: diff of two recorded-style traces with Python frames, in
// each format; the frames come from the files (their code tables).
func TestDiffFrames(t *testing.T) {
	dir := t.TempDir()
	base, newp := filepath.Join(dir, "heavy.cuprof"), filepath.Join(dir, "trimmed.cuprof")
	if err := trace.WriteFile(base, tracetest.PythonWrapper(5)); err != nil {
		t.Fatal(err)
	}
	if err := trace.WriteFile(newp, tracetest.PythonWrapperTrimmed(5)); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, format := range []string{"text", "json", "csv"} {
		stdout, stderr, err := runFlameCLI("diff", base, newp, "--format", format)
		if err != nil {
			t.Fatalf("diff --format %s: %v\n%s", format, err, stderr)
		}
		fmt.Fprintf(&all, "$ cuprof diff heavy.cuprof trimmed.cuprof --format %s\n%s", format, stdout)
	}
	checkFlameGolden(t, "diff.frames.golden", all.String())
	if !strings.Contains(all.String(), "Stream.__init__                    5          5          460 ns         120 ns  -340 ns  0.26x") {
		t.Errorf("the text table lacks the fixed wrapper's drop:\n%s", all.String())
	}
	if _, _, err := runFlameCLI("diff", base, newp, "--format", "xml"); err == nil || !strings.Contains(err.Error(), "--format") {
		t.Errorf("--format xml: %v, want an error naming --format", err)
	}
}
