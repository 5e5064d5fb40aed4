package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

func TestRecordErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record"}, "missing command"},
		{[]string{"record", "--buffer", "lots", "--", "true"}, "invalid --buffer"},
		{[]string{"record", "--nope", "--", "true"}, "unknown flag"},
	} {
		var out, errb bytes.Buffer
		err := run(c.args, nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"65536": 65536, "256K": 256 << 10, "64M": 64 << 20, "1G": 1 << 30, "16KiB": 16 << 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// Sizes past 2^64 bytes wrapped around (17179869184G was 0: a ring of
	// two tiny chunks) instead of being refused.
	for _, in := range []string{"17179869184G", "17179869185G", "18446744073709551616", "0", "-1"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestRecordWritesTraceAndKeepsExitCode(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
	t.Setenv("CUPROF_SIM_COST_SCALE", "0")
	out := filepath.Join(t.TempDir(), "t.cuprof")
	var stdout, stderr bytes.Buffer
	err := run([]string{"record", "--sim", "-o", out, "--", "sh", "-c", "echo hi; exit 3"}, nil, &stdout, &stderr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 3 {
		t.Fatalf("record of exit 3: %v (stderr %q)", err, stderr.String())
	}
	if stdout.String() != "hi\n" {
		t.Errorf("program output %q", stdout.String())
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("trace mode %v, want 0600", st.Mode().Perm())
	}
	tr, err := trace.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Meta.Capture != "sim" || len(tr.Meta.Command) != 3 {
		t.Errorf("meta %+v", tr.Meta)
	}
	if !strings.Contains(stderr.String(), "written to "+out) {
		t.Errorf("stderr %q", stderr.String())
	}
}
