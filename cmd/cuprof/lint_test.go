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
			if err := run([]string{"lint", lintFixtures + name + ".txt", "--format", format}, nil, &out, &errb); err != nil {
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
		{"pool_trim", "", false},
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
		{[]string{"lint", lintFixtures + "clean.txt", "--format", "csv"}, `unknown --format "csv"; use text or json`},
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
	if err := run([]string{"lint", "-"}, bytes.NewReader(data), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("lint - differs:\n%s", out.String())
	}
}
