package main

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// TestTimelineSaysSize: past the size limits (lowered here) timeline says,
// before most of the write, the size its output will have, within 10% of
// what it writes, in both formats; below them it says nothing.
func TestTimelineSaysSize(t *testing.T) {
	defer func(p, j int64) { largeTimeline, largeJSONTimeline = p, j }(largeTimeline, largeJSONTimeline)
	path := loopFile(t, 20_000)
	for _, tc := range []struct {
		format, want string
	}{
		{"perfetto", "cuprof: the timeline will be about "},
		{"chrome-json", "cuprof: warning: the JSON timeline will be about "},
	} {
		out := filepath.Join(t.TempDir(), "t."+tc.format)
		largeTimeline, largeJSONTimeline = 1<<40, 1<<40
		var so, se bytes.Buffer
		if err := run([]string{"timeline", path, "-o", out, "--format", tc.format}, nil, &so, &se); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(se.String(), "will be about") {
			t.Errorf("%s: size said below the limit: %q", tc.format, se.String())
		}
		largeTimeline, largeJSONTimeline = 1, 1
		se.Reset()
		if err := run([]string{"timeline", path, "-o", out, "--format", tc.format, "--force"}, nil, &so, &se); err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(se.String(), tc.want)
		var mb int64
		if _, err := fmt.Sscanf(rest, "%d MB", &mb); !ok || err != nil {
			t.Fatalf("%s: no size said: %q", tc.format, se.String())
		}
		st, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		written := float64(st.Size()) / 1e6
		t.Logf("%s: said %d MB, wrote %.1f MB", tc.format, mb, written)
		if float64(mb) < written*0.9-0.5 || float64(mb) > written*1.1+0.5 {
			t.Errorf("%s: said about %d MB, wrote %.1f MB", tc.format, mb, written)
		}
	}
}
