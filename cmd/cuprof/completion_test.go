package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletedValuesAreAccepted: every value shell completion offers is
// one its command accepts (not a usage error), and completion offers them.
func TestCompletedValuesAreAccepted(t *testing.T) {
	dir := t.TempDir()
	for cmd, flags := range flagValues {
		for flag, values := range flags {
			for _, v := range values {
				var args []string
				switch cmd {
				case "record":
					args = []string{"record", "--" + flag, v, "--", "cuprof-no-such-program"}
				case "report", "diff", "lint", "timeline":
					args = []string{cmd, cliFixture, "--" + flag, v}
					if cmd == "diff" {
						args = []string{cmd, cliFixture, cliFixture, "--" + flag, v}
					}
					if cmd == "timeline" {
						args = append(args, "-o", filepath.Join(dir, "t-"+v))
					}
				case "":
					if flag == "view" {
						args = []string{"flame", cliFixture, "--view", v, "-o", filepath.Join(dir, "f-"+v)}
					} else if _, err := otlpOptions("", v); err != nil {
						t.Errorf("--%s %s: %v", flag, v, err)
					}
				case "demo":
					continue // runs the demo; --python takes any interpreter
				}
				if args == nil {
					continue
				}
				var so, se bytes.Buffer
				err := run(args, nil, &so, &se)
				if err == nil {
					continue
				}
				if code, _ := exitStatus(err); code == exitUsage {
					t.Errorf("cuprof %s: refused a completed value: %v", strings.Join(args, " "), err)
				}
			}
			// What the shell is offered.
			name := cmd
			if name == "" {
				name = "flame"
				if flag == "otlp-protocol" {
					name = "export"
				}
			}
			var so, se bytes.Buffer
			cargs := []string{"__complete", name, "x", "--" + flag, ""}
			if name == "record" || name == "demo" { // no trace argument; record's flags end at its first
				cargs = []string{"__complete", name, "--" + flag, ""}
			}
			if err := run(cargs, nil, &so, &se); err != nil {
				t.Fatalf("__complete %s --%s: %v", name, flag, err)
			}
			for _, v := range values {
				if !strings.Contains(so.String(), v+"\n") {
					t.Errorf("completion of %s --%s lacks %s: %q", name, flag, v, so.String())
				}
			}
		}
	}
}

// TestManPages: cuprof man writes a roff page per command with its flags.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var so, se bytes.Buffer
	if err := run([]string{"man", dir}, nil, &so, &se); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"cuprof.1", "cuprof-record.1", "cuprof-lint.1", "cuprof-version.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if !strings.HasPrefix(s, ".TH ") || !strings.Contains(s, ".SH NAME\n") || !strings.Contains(s, ".SH SYNOPSIS") {
			t.Errorf("%s: not a man page:\n%s", page, s)
		}
		if page == "cuprof-lint.1" && (!strings.Contains(s, `\fB\-\-fail\-on STRING\fR`) || !strings.Contains(s, `\fB\-q, \-\-quiet\fR`)) {
			t.Errorf("%s lacks its flags:\n%s", page, s)
		}
	}
	if err := run([]string{"man", filepath.Join(dir, "missing")}, nil, &so, &se); err == nil {
		t.Error("man into a missing directory succeeded")
	}
}

// TestVersionCommand: cuprof version says what --version says, first.
func TestVersionCommand(t *testing.T) {
	var a, b, se bytes.Buffer
	if err := run([]string{"version"}, nil, &a, &se); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"--version"}, nil, &b, &se); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(a.String(), "\n"); first+"\n" != b.String() || !strings.Contains(first, version) {
		t.Errorf("version %q, --version %q", a.String(), b.String())
	}
}

// TestQuietSilencesCuprofsLines: -q leaves the data and errors, nothing else.
func TestQuietSilencesCuprofsLines(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.pftrace")
	os.WriteFile(out, []byte("old"), 0o600)
	var so, se bytes.Buffer
	// small.txt dropped events: a warning without -q.
	if err := run([]string{"timeline", cliFixture, "-o", out}, nil, &so, &se); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(se.String(), "warning") || !strings.Contains(se.String(), "cuprof: wrote "+out) || so.Len() != 0 {
		t.Fatalf("without -q: stdout %q stderr %q", so.String(), se.String())
	}
	so.Reset()
	se.Reset()
	if err := run([]string{"-q", "timeline", cliFixture, "-o", out}, nil, &so, &se); err != nil {
		t.Fatal(err)
	}
	if so.Len()+se.Len() != 0 {
		t.Errorf("with -q: stdout %q stderr %q", so.String(), se.String())
	}
	so.Reset()
	if err := run([]string{"report", cliFixture, "-q", "--format", "json"}, nil, &so, &se); err != nil || so.Len() == 0 || se.Len() != 0 {
		t.Errorf("report -q: %v, %d bytes, stderr %q", err, so.Len(), se.String())
	}
	if err := run([]string{"-q", "report", filepath.Join(dir, "missing")}, nil, &so, &se); err == nil {
		t.Error("-q swallowed an error")
	}
}
