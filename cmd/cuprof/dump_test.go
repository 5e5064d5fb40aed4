package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/golden"
)

var updateDump = golden.NewFlag("update-dump", "rewrite the dump golden files under testdata/dump")

const dumpFixture = "../../trace/testdata/small.txt"

func dumpCLI(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(append([]string{"dump"}, args...), strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), err
}

// checkDumpGolden compares got with testdata/dump/name (-update-dump rewrites).
func checkDumpGolden(t *testing.T, name, got string) {
	t.Helper()
	updateDump.Check(t, filepath.Join("testdata", "dump", name), []byte(got))
}

func TestDumpText(t *testing.T) {
	out, errs, err := dumpCLI(t, "", dumpFixture)
	if err != nil || errs != "" {
		t.Fatalf("dump: %v %q", err, errs)
	}
	checkDumpGolden(t, "small.txt", out)

	// text → binary → text gives the same dump.
	dir := t.TempDir()
	bin := filepath.Join(dir, "small.cuprof")
	if _, _, err := dumpCLI(t, "", dumpFixture, "--binary", "-o", bin); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(bin); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("binary output: %v, %v", st, err)
	}
	data, _ := os.ReadFile(bin)
	if !bytes.HasPrefix(data, []byte("\x89cuprof\n")) {
		t.Fatalf("--binary did not write a binary trace: %q", data[:16])
	}
	out2, _, err := dumpCLI(t, "", bin)
	if err != nil || out2 != out {
		t.Errorf("dump of the binary differs (%v):\n%s", err, out2)
	}
	// -o writes the text to a file; "-" reads standard input.
	txt := filepath.Join(dir, "small.txt")
	if _, _, err := dumpCLI(t, "", bin, "-o", txt); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(txt); string(b) != out {
		t.Errorf("-o wrote %q", b)
	}
	fixture, _ := os.ReadFile(dumpFixture)
	if out3, _, err := dumpCLI(t, string(fixture), "-"); err != nil || out3 != out {
		t.Errorf("dump - differs: %v", err)
	}
}

func TestDumpTruncated(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "small.cuprof")
	if _, _, err := dumpCLI(t, "", dumpFixture, "--binary", "-o", bin); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(bin)
	cut := filepath.Join(dir, "cut.cuprof")
	os.WriteFile(cut, data[:len(data)-40], 0o600) // into the last batch, before the footer
	out, errs, err := dumpCLI(t, "", cut)
	if err != nil {
		t.Fatal(err)
	}
	checkDumpGolden(t, "truncated.txt", out)
	checkDumpGolden(t, "truncated.stderr", strings.ReplaceAll(errs, dir, "$DIR"))
	if strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "is damaged: ") {
		t.Errorf("want one warning line, got %q", errs)
	}
}

func TestDumpErrors(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "small.cuprof")
	if _, _, err := dumpCLI(t, "", dumpFixture, "--binary", "-o", bin); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(bin)
	bad := filepath.Join(dir, "bad.cuprof")
	os.WriteFile(bad, append(data, 0, 0), 0o600) // bytes after the footer
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("PK\x03\x04"), 0o600)
	badText := filepath.Join(dir, "bad.txt")
	os.WriteFile(badText, []byte("cuprof-text 1\ncall 1/2 t=zz\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "missing.cuprof")}, "no such file or directory (check the path)"},
		{[]string{bad}, "corrupt .cuprof file at byte offset"},
		{[]string{junk}, "not a cuprof trace"},
		{[]string{badText}, "line 2:"},
		{[]string{dumpFixture, "--binary"}, "--binary needs -o FILE"},
		{[]string{}, "requires at least 1 arg"},
		{[]string{dumpFixture, filepath.Join(dir, "missing.cuprof")}, "check the path"},
	} {
		_, _, err := dumpCLI(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("dump %q: err = %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}

func TestDumpMerge(t *testing.T) {
	out, errs, err := dumpCLI(t, "", "testdata/dump/rank0.txt", "testdata/dump/rank1.txt")
	if err != nil || errs != "" {
		t.Fatalf("dump: %v %q", err, errs)
	}
	checkDumpGolden(t, "merged.txt", out)
	// Merging binary files gives the same.
	dir := t.TempDir()
	var bins []string
	for _, r := range []string{"rank0", "rank1"} {
		bin := filepath.Join(dir, r+".cuprof")
		if _, _, err := dumpCLI(t, "", "testdata/dump/"+r+".txt", "--binary", "-o", bin); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, bin)
	}
	out2, _, err := dumpCLI(t, "", bins...)
	if err != nil || out2 != out {
		t.Errorf("merge of binaries differs (%v):\n%s", err, out2)
	}
}
