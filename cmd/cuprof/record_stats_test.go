package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/report"
	"github.com/cuprof/cuprof/trace"
)

// TestRecordStats: record --stats ends with the top APIs, the ranges (no
// Python here), the drops and the lint findings of the trace it wrote; -q
// silences it with the rest.
func TestRecordStats(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	t.Setenv("CUPROF_DEMO_TEST_CHILD", "5")
	out := filepath.Join(t.TempDir(), "t.cuprof")
	var so, se bytes.Buffer
	child := []string{os.Args[0], "-test.run=^TestDemoChild$", "-test.count=1"}
	if err := run(append([]string{"record", "--sim", "--stats", "-o", out, "--"}, child...), nil, &so, &se); err != nil {
		t.Fatalf("record: %v\n%s", err, se.String())
	}
	s := se.String()
	i := strings.Index(s, "cuprof: stats of "+out+": ")
	if i < 0 {
		t.Fatalf("no stats:\n%s", s)
	}
	stats := s[i:]
	for _, want := range []string{"top driver APIs by time:", "top ranges by time:", "drops: 0 events (none lost)", "lint: ", "pool-trim", "cuprof lint " + out} {
		if !strings.Contains(stats, want) {
			t.Errorf("stats lack %q:\n%s", want, stats)
		}
	}
	// The APIs listed are the trace's top ones by time, in order (which
	// they are depends on the machine's speed: the report of the trace
	// written says).
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range report.Build(tr, report.Options{}).APIs {
		if len(want) < statsTop {
			want = append(want, a.API)
		}
	}
	var got []string
	if _, list, ok := strings.Cut(stats, "top driver APIs by time:\n"); ok {
		for _, l := range strings.Split(list, "\n") {
			f := strings.Fields(l)
			if len(f) < 3 || f[2] != "calls" { // API, count, "calls", ...
				break
			}
			got = append(got, f[0])
		}
	}
	if len(want) == 0 || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("top driver APIs %v, want the report's %v:\n%s", got, want, stats)
	}
	se.Reset()
	if err := run(append([]string{"-q", "record", "--sim", "--stats", "-o", out + "2", "--"}, child...), nil, &so, &se); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(se.String(), "cuprof:") {
		t.Errorf("-q --stats printed %q", se.String())
	}
}
