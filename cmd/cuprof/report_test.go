package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
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
			if name == "basic" && format != "text" && !strings.Contains(errb.String(), "3 events were dropped") {
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
		{[]string{"report"}, "accepts 1 arg"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		err := run(c.args, nil, &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
