package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cuprof/cuprof/internal/pprofui"
	"github.com/cuprof/cuprof/trace"
)

// TestRecordSaysRecordingOnlyOnceStarted: "cuprof: recording X into Y" was
// printed before record's set-up, which could still refuse to start (here:
// no working directory can be made); it is printed right before the program
// starts, and a set-up that fails says only its error.
func TestRecordSaysRecordingOnlyOnceStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shim")
	}
	dir := t.TempDir()
	t.Setenv("CUPROF_TMPDIR", filepath.Join(dir, "missing", "rings"))
	var stdout, stderr bytes.Buffer
	err := run([]string{"record", "--sim", "-o", filepath.Join(dir, "out.cuprof"), "--", "true"}, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "create working directory") {
		t.Fatalf("record with no room for its working directory: %v", err)
	}
	if strings.Contains(stderr.String(), "cuprof: recording") {
		t.Errorf("record said it was recording, then refused to start:\n%s", stderr.String())
	}

	t.Setenv("CUPROF_TMPDIR", dir)
	stderr.Reset()
	if err := run([]string{"record", "--sim", "-o", filepath.Join(dir, "out.cuprof"), "--", "true"}, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stderr.String(), "cuprof: recording true into "+filepath.Join(dir, "out.cuprof")) {
		t.Errorf("stderr does not start with the recording line:\n%s", stderr.String())
	}
}

// hostileNames is trace/testdata/small.txt with names that would drive a
// terminal: a thread that clears the screen, a range that sets the window
// title and turns the text red, a stream with a C1 CSI.
func hostileNames(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "trace", "testdata", "small.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer(`name=step`, `name="st\x1b]0;pwned\x07ep\x1b[31m"`,
		"name=python3\n", "name=\"py\\x1b[2J\\r\"\n",
		`name=compute`, `name="comp\u009b31mute"`).Replace(string(b))
	p := filepath.Join(t.TempDir(), "hostile.txt")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNamesAreEscapedForTheTerminal: report printed the trace's names raw,
// so someone else's trace could drive the reader's terminal; report, lint and
// diff, as text and CSV, write them through output.Printable, one function.
func TestNamesAreEscapedForTheTerminal(t *testing.T) {
	tr := hostileNames(t)
	for _, args := range [][]string{
		{"report", tr}, {"report", "--format", "csv", tr},
		{"lint", "--fail-on", "never", tr}, {"lint", "--fail-on", "never", "--format", "csv", tr},
		{"diff", tr, tr}, {"diff", "--format", "csv", tr, tr},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(args, nil, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr.String())
		}
		out := stdout.String()
		if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f }); i >= 0 {
			t.Errorf("%v: a control character reaches the terminal at %d: %q", args, i, out[max(0, i-20):min(len(out), i+20)])
		}
		if args[0] == "report" && !strings.Contains(out, `py\x1b[2J\x0d`) {
			t.Errorf("%v: the thread's name is not shown escaped:\n%s", args, out)
		}
	}
}

// TestViewWithoutDisplayAndOnAllInterfaces: over SSH (no DISPLAY) view
// starts no browser and says how to tunnel to the page; --http 0.0.0.0:0,
// asked for, serves other machines with a warning that the token is all
// that protects the profile.
func TestViewWithoutDisplayAndOnAllInterfaces(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	served := 0
	viewStarted = func(s *pprofui.Server) {
		defer s.Close()
		httpGet(t, s.URL)
		served++
	}
	defer func() { viewStarted = nil }()
	_, stderr, err := runFlameCLI("view", flameFixture("nested.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "no display (DISPLAY and WAYLAND_DISPLAY are unset): no browser started") ||
		!strings.Contains(stderr, "ssh -L 8080:127.0.0.1:") || strings.Contains(stderr, "warning: serving on") {
		t.Errorf("stderr without a display:\n%s", stderr)
	}
	_, stderr, err = runFlameCLI("view", "--no-browser", "--http", "0.0.0.0:0", flameFixture("nested.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "cuprof: warning: serving on ") || !strings.Contains(stderr, "the URL's token is all that protects the profile") {
		t.Errorf("no warning for --http 0.0.0.0:\n%s", stderr)
	}
	if served != 2 {
		t.Errorf("%d servers answered, want 2", served)
	}
}

// TestExitStatusContract: docs/cli.md's exit statuses hold for the cases
// that broke them: bad values of record's --python, --python-scope and
// --python-threshold, recover without its argument and completion of an
// unknown shell exit 2, with one line naming the fix; the usage hint says
// "cuprof", not "cuprof cuprof".
func TestExitStatusContract(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.cuprof")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "-o", out, "--python", "bogus", "--", "true"}, `invalid --python "bogus": use full, stacks or off`},
		{[]string{"record", "-o", out, "--python-scope", "bogus", "--", "true"}, `invalid --python-scope "bogus": use cuda or all`},
		{[]string{"record", "-o", out, "--python-threshold", "-5", "--", "true"}, "invalid --python-threshold -5: give 1 to 59999"},
		{[]string{"record", "-o", out, "--python-threshold", "lots", "--", "true"}, `invalid argument "lots" for "--python-threshold"`},
		{[]string{"recover"}, "(usage: cuprof recover SPILLDIR -o FILE)"},
		{[]string{"completion", "tcsh"}, `unknown shell "tcsh": use bash, fish, powershell, zsh`},
		{[]string{"completion"}, "name a shell: bash, fish, powershell, zsh"},
		{[]string{"--bogus"}, "unknown flag: --bogus (see cuprof --help)"},
		{[]string{"record", "--bogus"}, "unknown flag: --bogus (see cuprof record --help)"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(c.args, nil, &stdout, &stderr)
		code, msg := exitStatus(err)
		if err == nil || code != exitUsage || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("cuprof %s: status %d %q; want 2 and one line saying %q", strings.Join(c.args, " "), code, msg, c.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("cuprof %s wrote to stdout: %q", strings.Join(c.args, " "), stdout.String())
		}
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("a refused record wrote %s", out)
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"completion", "bash"}, nil, &stdout, &stderr); err != nil || stdout.Len() == 0 {
		t.Errorf("completion bash: %v, %d bytes", err, stdout.Len())
	}
}

// TestDefaultNamesNeverLoseATrace: three records without -o in the same
// second used to keep one NAME.old, so the third lost the first; each now
// takes a name of its own (NAME, NAME-1, NAME-2) and none is moved aside.
func TestDefaultNamesNeverLoseATrace(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	at := time.Date(2026, 12, 7, 23, 15, 0, 0, time.Local)
	old := recordNow
	defer func() { recordNow = old }()
	recordNow = func() time.Time { return at }
	for i := 0; i < 3; i++ {
		var stdout, stderr bytes.Buffer
		if err := run([]string{"record", "--sim", "--", "true"}, nil, &stdout, &stderr); err != nil {
			t.Fatalf("record %d: %v\n%s", i, err, stderr.String())
		}
		if i > 0 && !strings.Contains(stderr.String(), fmt.Sprintf("cuprof: cuprof-true-20261207-231500.cuprof exists: writing cuprof-true-20261207-231500-%d.cuprof instead", i)) {
			t.Errorf("record %d does not say which name it took:\n%s", i, stderr.String())
		}
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	want := []string{"cuprof-true-20261207-231500-1.cuprof", "cuprof-true-20261207-231500-2.cuprof", "cuprof-true-20261207-231500.cuprof"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", names, want)
	}
	for _, n := range names {
		if _, err := trace.ReadFile(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestEveryFileWrittenIsSaid: each command that writes a file says
// "cuprof: wrote FILE" on stderr, and nothing of it on stdout.
func TestEveryFileWrittenIsSaid(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join("..", "..", "trace", "testdata", "small.txt")
	for _, c := range []struct {
		args []string
		out  string
	}{
		{[]string{"dump", tr, "-o"}, "d.txt"},
		{[]string{"lint", "--fail-on", "never", tr, "-o"}, "l.txt"},
		{[]string{"flame", tr, "-o"}, "f.pb.gz"},
		{[]string{"timeline", tr, "-o"}, "t.pftrace"},
		{[]string{"diff", tr, tr, "-o"}, "c.pb.gz"},
	} {
		out := filepath.Join(dir, c.out)
		var stdout, stderr bytes.Buffer
		if err := run(append(c.args, out), nil, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if !strings.Contains(stderr.String(), "cuprof: wrote "+out+"\n") || strings.Contains(stdout.String(), "wrote") {
			t.Errorf("%v: stdout %q, stderr %q; want stderr to say it wrote %s", c.args, stdout.String(), stderr.String(), out)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("%v: %v", c.args, err)
		}
	}
}
