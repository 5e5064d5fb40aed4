package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

const lintFixtures = "../../internal/lint/testdata/"

func TestLintOutput(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		for _, name := range []string{"pool_trim", "clean", "leak"} {
			var out, errb bytes.Buffer
			if err := run([]string{"lint", lintFixtures + name + ".txt", "--format", format, "--fail-on", "never"}, nil, &out, &errb); err != nil {
				t.Fatalf("%s %s: %v", name, format, err)
			}
			ext := map[string]string{"text": "txt", "json": "json"}[format]
			want, err := os.ReadFile(lintFixtures + name + ".golden." + ext)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("lint %s --format %s differs from its golden file:\n%s", name, format, out.String())
			}
		}
	}
}

func TestLintFailOn(t *testing.T) {
	cases := []struct {
		fixture, failOn string
		exit            bool
	}{
		{"pool_trim", "error", true},
		{"pool_trim", "info", true},
		{"leak", "warning", true},
		{"leak", "error", false},
		{"redundant_set_current", "warning", false},
		{"redundant_set_current", "info", true},
		{"clean", "info", false},
		{"pool_trim", "", true}, // the default: error
		{"leak", "", false},
		{"pool_trim", "never", false},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		args := []string{"lint", lintFixtures + c.fixture + ".txt"}
		if c.failOn != "" {
			args = append(args, "--fail-on", c.failOn)
		}
		err := run(args, nil, &out, &errb)
		var ee *exitError
		switch {
		case c.exit && (!errors.As(err, &ee) || ee.code != 1 || ee.err != nil):
			t.Errorf("%s --fail-on %s: error %v, want exit status 1", c.fixture, c.failOn, err)
		case !c.exit && err != nil:
			t.Errorf("%s --fail-on %s: error %v, want none", c.fixture, c.failOn, err)
		}
		if out.Len() == 0 {
			t.Errorf("%s: no output", c.fixture)
		}
	}
}

func TestLintErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"lint", lintFixtures + "clean.txt", "--format", "xml"}, `unknown --format "xml"; use text, json, sarif or csv`},
		{[]string{"lint", lintFixtures + "clean.txt", "-o", lintFixtures + "clean.txt"}, "is the trace itself"},
		{[]string{"lint", lintFixtures + "clean.txt", "--fail-on", "fatal"}, `bad --fail-on: unknown severity "fatal"`},
		{[]string{"lint", "missing.cuprof"}, "cannot read trace"},
		{[]string{"lint"}, "accepts 1 arg"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		err := run(c.args, nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestLintHelpListsRules(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"lint", "--help"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"pool-trim", "stream-churn", "sync-idle", "leak"} {
		if !strings.Contains(out.String(), id) {
			t.Errorf("help lacks %s", id)
		}
	}
}

func TestLintStdin(t *testing.T) {
	data, err := os.ReadFile(lintFixtures + "pool_trim.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(lintFixtures + "pool_trim.golden.txt")
	var out, errb bytes.Buffer
	if err := run([]string{"lint", "-", "--fail-on", "never"}, bytes.NewReader(data), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("lint - differs:\n%s", out.String())
	}
}

// TestLintSARIFAndCSVFiles: the CLI writes SARIF with the trace as its
// artifact and CSV, to stdout or -o, and still exits 1 on an error.
func TestLintSARIFAndCSVFiles(t *testing.T) {
	dir := t.TempDir()
	sarif := dir + "/lint.sarif"
	var out, errb bytes.Buffer
	err := run([]string{"lint", lintFixtures + "pool_trim.txt", "--format", "sarif", "-o", sarif}, nil, &out, &errb)
	if code, _ := exitStatus(err); code != exitFailure {
		t.Errorf("sarif: exit %d (%v), want 1", code, err)
	}
	data, _ := os.ReadFile(sarif)
	if !strings.Contains(string(data), `"version": "2.1.0"`) || !strings.Contains(string(data), `"uri": "../../internal/lint/testdata/pool_trim.txt"`) || out.Len() != 0 {
		t.Errorf("sarif file %q, stdout %q", data, out.String())
	}
	out.Reset()
	if err := run([]string{"lint", lintFixtures + "leak.txt", "--format", "csv"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) < 2 || !strings.HasPrefix(lines[0], "rule,severity,count,cost_ns") {
		t.Errorf("csv %q", out.String())
	}
}
