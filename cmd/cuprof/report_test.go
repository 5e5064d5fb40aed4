package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

const reportFixtures = "../../internal/report/testdata/"

// The command's output is the package's, whose goldens live beside it.
func TestReportFormats(t *testing.T) {
	for _, format := range []string{"text", "json", "csv"} {
		for _, name := range []string{"basic", "multidev", "empty", "errors"} {
			var out, errb bytes.Buffer
			err := run([]string{"report", reportFixtures + name + ".txt", "--format", format}, nil, &out, &errb)
			if err != nil {
				t.Fatalf("%s %s: %v", name, format, err)
			}
			ext := map[string]string{"text": "txt", "json": "json", "csv": "csv"}[format]
			want, err := os.ReadFile(reportFixtures + name + ".golden." + ext)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("report %s --format %s differs from %s.golden.%s:\n%s", name, format, name, format, out.String())
			}
			if name == "basic" && format != "text" && !strings.Contains(errb.String(), "the capture dropped 3 events") {
				t.Errorf("no drop warning on stderr: %q", errb.String())
			}
		}
	}
}

func TestReportErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"report", reportFixtures + "basic.txt", "--format", "xml"}, `unknown --format "xml"; use text, json or csv`},
		{[]string{"report", "no-such-file.cuprof"}, "cannot read trace"},
		{[]string{"report"}, "requires at least 1 arg"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		err := run(c.args, nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// A cut binary file is reported up to the cut, with the loss said loudly.
func TestReportTruncatedFile(t *testing.T) {
	tr, err := trace.ReadFile(reportFixtures + "basic.txt")
	if err != nil {
		t.Fatal(err)
	}
	var bin bytes.Buffer
	if err := trace.WriteBinary(&bin, tr); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.cuprof")
	if err := os.WriteFile(path, bin.Bytes()[:bin.Len()-20], 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := run([]string{"report", path}, nil, &out, &errb); err != nil {
		t.Skipf("the reader rejects this cut: %v", err)
	}
	if !strings.Contains(out.String(), "!! TRUNCATED TRACE") || !strings.Contains(out.String(), "CUDA driver API summary") {
		t.Errorf("report of a cut file:\n%s", out.String())
	}
	out.Reset()
	if err := run([]string{"report", path, "--format", "json"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"loss": {`) || !strings.Contains(errb.String(), "is damaged") {
		t.Errorf("json report of a cut file: %s\nstderr %s", out.String(), errb.String())
	}
}
