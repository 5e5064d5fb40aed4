package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/flame"
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
