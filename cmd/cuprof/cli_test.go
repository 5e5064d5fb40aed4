package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/pprofui"
)

const cliFixture = "../../trace/testdata/small.txt"

// TestExitStatuses checks docs/cli.md's table: 2 for every kind of wrong
// command line, 1 for failures and lint findings at --fail-on, 0 otherwise.
func TestExitStatuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"report", cliFixture}, 0},
		{[]string{"frobnicate"}, exitUsage},
		{[]string{"report", cliFixture, "--no-such-flag"}, exitUsage},
		{[]string{"report"}, exitUsage},
		{[]string{"report", cliFixture, "--format", "xml"}, exitUsage},
		{[]string{"lint", cliFixture, "--fail-on", "fatal"}, exitUsage},
		{[]string{"lint", lintFixtures + "pool_trim.txt", "--fail-on", "warning"}, exitFailure},
		{[]string{"lint", lintFixtures + "leak.txt", "--fail-on", "error"}, 0},
		{[]string{"lint", cliFixture, "--format", "xml"}, exitUsage},
		{[]string{"lint", lintFixtures + "pool_trim.txt"}, exitFailure},
		{[]string{"lint", lintFixtures + "pool_trim.txt", "--format", "sarif"}, exitFailure},
		{[]string{"lint", lintFixtures + "pool_trim.txt", "--fail-on", "never"}, 0},
		{[]string{"lint", lintFixtures + "leak.txt"}, 0},
		{[]string{"record", "--", "cuprof-no-such-program"}, exitNotFound},
		{[]string{"record", "--", "/etc/passwd"}, exitNotExecutable},
		{[]string{"report", cliFixture, "--table", "nosuch"}, exitUsage},
		{[]string{"flame", cliFixture, "--view", "heap", "-o", filepath.Join(dir, "x.pb.gz")}, exitUsage},
		{[]string{"flame", cliFixture, "--focus", "(", "-o", filepath.Join(dir, "x.pb.gz")}, exitUsage},
		{[]string{"timeline", cliFixture, "--format", "svg"}, exitUsage},
		{[]string{"dump", cliFixture, "--binary"}, exitUsage},
		{[]string{"diff", cliFixture}, exitUsage},
		{[]string{"export", cliFixture}, exitUsage},
		{[]string{"record"}, exitUsage},
		{[]string{"record", "--buffer", "lots", "--", "true"}, exitUsage},
		{[]string{"record", "--otlp", "127.0.0.1:4317", "--", "echo", "RAN"}, exitUsage},
		{[]string{"report", filepath.Join(dir, "missing.cuprof")}, exitFailure},
		{[]string{"timeline", cliFixture, "-o", dir}, exitFailure},
	} {
		var out, errb bytes.Buffer
		err := run(tc.args, nil, &out, &errb)
		code := 0
		if err != nil {
			code, _ = exitStatus(err)
		}
		if code != tc.code {
			t.Errorf("cuprof %s: exit status %d (%v), want %d", strings.Join(tc.args, " "), code, err, tc.code)
		}
		if strings.Contains(out.String(), "RAN") {
			t.Errorf("cuprof %s ran the endpoint as a program", strings.Join(tc.args, " "))
		}
	}
}

// TestOutputRulesEveryCommand: every command's -o follows docs/cli.md's
// rules: /dev/null written through, a link refused without --force (and
// written through with it), an existing file kept as NAME.old with its
// mode.
func TestOutputRulesEveryCommand(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(dir, "existing")
	cmds := [][]string{
		{"dump", cliFixture, "-o"},
		{"dump", cliFixture, "--binary", "-o"},
		{"timeline", cliFixture, "-o"},
		{"flame", cliFixture, "-o"},
		{"diff", cliFixture, cliFixture, "-o"},
		{"report", cliFixture, "--table", "apis", "-o"},
		{"lint", lintFixtures + "leak.txt", "--format", "sarif", "-o"},
	}
	for _, c := range cmds {
		name := strings.Join(c, " ")
		var so, se bytes.Buffer
		if err := run(append(c, "/dev/null"), nil, &so, &se); err != nil {
			t.Fatalf("cuprof %s /dev/null: %v %s", name, err, se.String())
		}
		if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
			t.Fatalf("cuprof %s /dev/null replaced it: %v", name, st.Mode())
		}

		os.Remove(target)
		err := run(append(c, link), nil, &so, &se)
		if code, _ := exitStatus(err); err == nil || code != exitFailure || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("cuprof %s LINK: %v (status %d), want a refusal", name, err, code)
		}
		if _, err := os.Lstat(target); err == nil {
			t.Errorf("cuprof %s LINK created the link's target", name)
		}
		if err := run(append(append([]string{"--force"}, c...), link), nil, &so, &se); err != nil {
			t.Fatalf("cuprof --force %s LINK: %v", name, err)
		}
		if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("cuprof --force %s: the link was replaced", name)
		}
		if st, err := os.Stat(target); err != nil || st.Size() == 0 || st.Mode().Perm() != 0o600 {
			t.Errorf("cuprof --force %s: link target %v %v", name, st, err)
		}

		os.Remove(existing + ".old")
		os.WriteFile(existing, []byte("before"), 0o640)
		os.Chmod(existing, 0o640)
		se.Reset()
		if err := run(append(c, existing), nil, &so, &se); err != nil {
			t.Fatalf("cuprof %s EXISTING: %v", name, err)
		}
		old, _ := os.ReadFile(existing + ".old")
		st, _ := os.Stat(existing)
		if string(old) != "before" || st.Mode().Perm() != 0o640 || !strings.Contains(se.String(), "kept the previous "+existing+" as "+existing+".old") {
			t.Errorf("cuprof %s EXISTING: .old %q, mode %v, stderr %q", name, old, st.Mode(), se.String())
		}
	}
	// record refuses the link before the program runs.
	var so, se bytes.Buffer
	err := run([]string{"record", "--sim", "-o", link, "--", "echo", "RAN"}, nil, &so, &se)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || strings.Contains(so.String(), "RAN") {
		t.Errorf("record -o LINK: %v, stdout %q", err, so.String())
	}
}

// TestDefaultOutputNames: timeline and flame name their output after the
// trace, keeping an existing file as NAME.old.
func TestDefaultOutputNames(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "run.cuprof.txt")
	data, _ := os.ReadFile(cliFixture)
	os.WriteFile(tr, data, 0o600)
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	for _, c := range []struct {
		args []string
		file string
	}{
		{[]string{"timeline", tr}, "run.pftrace"},
		{[]string{"timeline", tr, "--format", "chrome-json"}, "run.json"},
		{[]string{"flame", tr}, "run.pb.gz"},
		{[]string{"flame", tr, "--view", "memory"}, "run.memory.pb.gz"},
	} {
		for round := 0; round < 2; round++ {
			var so, se bytes.Buffer
			if err := run(c.args, nil, &so, &se); err != nil {
				t.Fatalf("%v: %v", c.args, err)
			}
			if _, err := os.Stat(c.file); err != nil {
				t.Errorf("%v: %v", c.args, err)
			}
			_, err := os.Stat(c.file + ".old")
			if round == 1 && (err != nil || !strings.Contains(se.String(), "kept the previous "+c.file+" as "+c.file+".old")) {
				t.Errorf("%v again: no .old (%v), stderr %q", c.args, err, se.String())
			}
		}
	}
}

func TestViewOpensProfiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "change.pb.gz")
	if _, _, err := runFlameCLI("diff", flameFixture("nested.txt"), flameFixture("nested.txt"), "-o", p); err != nil {
		t.Fatal(err)
	}
	stdout, _ := viewServe(t, []string{p}, func(s *pprofui.Server) {
		if body := httpGet(t, s.URL); !strings.Contains(body, "cuMemAllocAsync") {
			t.Errorf("flame graph of the profile lacks its frames")
		}
	})
	if !strings.Contains(stdout, "serving the api view of "+p) {
		t.Errorf("stdout %q", stdout)
	}
	_, _, err := runFlameCLI("view", "--no-browser", "--view", "memory", p)
	if code, _ := exitStatus(err); err == nil || code != exitUsage || !strings.Contains(err.Error(), "is a profile already") {
		t.Errorf("view --view of a profile: %v", err)
	}
}

func TestTraceFromStandardInputEverywhere(t *testing.T) {
	data, _ := os.ReadFile(cliFixture)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"report", "-"},
		{"lint", "-"},
		{"dump", "-"},
		{"timeline", "-", "-o", filepath.Join(dir, "t.pftrace")},
		{"flame", "-", "-o", filepath.Join(dir, "f.pb.gz")},
	} {
		var so, se bytes.Buffer
		if err := run(args, bytes.NewReader(data), &so, &se); err != nil {
			t.Errorf("cuprof %s: %v", strings.Join(args, " "), err)
		}
	}
}

// TestStdoutOutputsCarryOnlyTheData: with -o - nothing but the output goes
// to standard output.
func TestStdoutOutputsCarryOnlyTheData(t *testing.T) {
	for _, args := range [][]string{
		{"flame", cliFixture, "-o", "-"},
		{"timeline", cliFixture, "-o", "-"},
	} {
		var so, se bytes.Buffer
		if err := run(args, nil, &so, &se); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if bytes.Contains(so.Bytes(), []byte("wrote ")) {
			t.Errorf("%v: a message in the data on stdout", args)
		}
	}
}

// TestViewSaysWhenGraphvizIsMissing: once, and not when dot is on PATH.
func TestViewSaysWhenGraphvizIsMissing(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	_, stderr := viewServe(t, []string{flameFixture("nested.txt")}, func(s *pprofui.Server) {
		// the notice is true: the graph page is off, the others work
		resp, err := http.Get(s.Page("/ui/graph"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotImplemented {
			t.Errorf("/ui/graph without graphviz: %s, want 501", resp.Status)
		}
		for _, page := range []string{"/ui/flamegraph", "/ui/top", "/ui/peek"} {
			httpGet(t, s.Page(page))
		}
	})
	if n := strings.Count(stderr, "graphviz is not installed"); n != 1 || strings.Contains(stderr, "source") || !strings.Contains(stderr, "/ui/graph") {
		t.Errorf("graphviz notice %d times: %q", n, stderr)
	}
	os.WriteFile(filepath.Join(bin, "dot"), []byte("#!/bin/sh\n"), 0o700)
	_, stderr = viewServe(t, []string{flameFixture("nested.txt")}, func(*pprofui.Server) {})
	if strings.Contains(stderr, "graphviz") {
		t.Errorf("graphviz notice with dot on PATH: %q", stderr)
	}
}
