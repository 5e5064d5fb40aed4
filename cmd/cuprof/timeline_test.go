package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const timelineFixture = "../../exporters/perfetto/testdata/small.txt"

func TestTimelinePerfettoMatchesGolden(t *testing.T) {
	path, _ := copyFixture(t, timelineFixture)
	out := filepath.Join(t.TempDir(), "run.pftrace")
	var so, se bytes.Buffer
	if err := run([]string{"timeline", path, "-o", out}, nil, &so, &se); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("../../exporters/perfetto/testdata/small.pftrace")
	if !bytes.Equal(got, want) {
		t.Error("timeline output differs from exporters/perfetto/testdata/small.pftrace")
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestTimelineChromeJSON(t *testing.T) {
	path, _ := copyFixture(t, timelineFixture)
	var so, se bytes.Buffer
	if err := run([]string{"timeline", path, "-o", "-", "--format", "chrome-json"}, nil, &so, &se); err != nil {
		t.Fatal(err)
	}
	var v struct {
		TraceEvents []json.RawMessage `json:"traceEvents"`
	}
	if err := json.Unmarshal(so.Bytes(), &v); err != nil || len(v.TraceEvents) == 0 {
		t.Fatalf("not a Chrome trace: %v", err)
	}
}

func TestTimelineUsage(t *testing.T) {
	path, _ := copyFixture(t, timelineFixture)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"timeline", path, "-o", t.TempDir()}, "is a directory"},
		{[]string{"timeline", path, "-o", "x", "--format", "svg"}, `unknown --format "svg"`},
		{[]string{"timeline", path, "-o", path}, "is the trace itself"},
	} {
		var so, se bytes.Buffer
		err := run(tc.args, nil, &so, &se)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
