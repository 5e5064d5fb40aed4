package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	for _, c := range []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n", "(no difference)\n"},
		{"a\nb\nc\n", "a\nx\nc\n", "from line 2: 1 line(s) of want replaced by 1 line(s) of got\n- \"b\"\n+ \"x\"\n"},
		{"a\nc\n", "a\nb\nc\n", "from line 2: 0 line(s) of want replaced by 1 line(s) of got\n+ \"b\"\n"},
		{"a\nb\nc", "a\nc", "from line 2: 1 line(s) of want replaced by 0 line(s) of got\n- \"b\"\n"},
		{"a\n", "a", "from line 2: 1 line(s) of want replaced by 0 line(s) of got\n- \"\"\n"},
		{"x\tb\n", "x b\n", "from line 1: 1 line(s) of want replaced by 1 line(s) of got\n- \"x\\tb\"\n+ \"x b\"\n"},
	} {
		if got := Diff(c.want, c.got); got != c.diff {
			t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", c.want, c.got, got, c.diff)
		}
	}
}

func TestDiffLimit(t *testing.T) {
	d := Diff(strings.Repeat("a\n", 100), strings.Repeat("b\n", 100))
	if n := strings.Count(d, "\n"); n != 1+2*(maxLines+1) {
		t.Errorf("%d lines in a capped diff:\n%s", n, d)
	}
	if !strings.Contains(d, "- ... 60 more\n") || !strings.Contains(d, "+ ... 60 more\n") {
		t.Errorf("capped diff does not say how many lines it left out:\n%s", d)
	}
}

func TestCheck(t *testing.T) {
	on := false
	f := &Flag{name: "update-test", on: &on}
	path := filepath.Join(t.TempDir(), "out.golden")

	// missing file: fatal, naming the flag
	ft := &fakeT{TB: t}
	ft.run(func() { f.Check(ft, path, []byte("x\n")) })
	if !ft.fatal || !strings.Contains(ft.msg, "go test -update-test creates it") {
		t.Errorf("missing golden file: fatal=%v %q", ft.fatal, ft.msg)
	}

	// the flag writes the file, private to the user
	on = true
	f.Check(t, path, []byte("x\ny\n"))
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("written golden file: %v %v", st, err)
	}
	on = false

	f.Check(t, path, []byte("x\ny\n")) // equal: passes

	ft = &fakeT{TB: t}
	ft.run(func() { f.Check(ft, path, []byte("x\nz\n")) })
	if ft.fatal || !ft.failed || !strings.Contains(ft.msg, "go test -update-test rewrites it") || !strings.Contains(ft.msg, "- \"y\"\n+ \"z\"") {
		t.Errorf("differing output: fatal=%v failed=%v %q", ft.fatal, ft.failed, ft.msg)
	}
}

// fakeT records what Check reports instead of failing the real test.
type fakeT struct {
	testing.TB
	failed, fatal bool
	msg           string
}

type fatalStop struct{}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.failed = true
	f.msg = fmt.Sprintf(format, args...)
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed, f.fatal = true, true
	f.msg = fmt.Sprintf(format, args...)
	panic(fatalStop{})
}
func (f *fakeT) Fatal(args ...any) { f.Fatalf("%v", args...) }

func (f *fakeT) run(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatalStop); !ok {
				panic(r)
			}
		}
	}()
	fn()
}

func TestLookup(t *testing.T) {
	f := NewFlag("update-lookup-test", "a flag for TestLookup")
	if Lookup("update-lookup-test") != f {
		t.Fatal("Lookup did not return the flag NewFlag made")
	}
	if Lookup("no-such-flag") != nil {
		t.Fatal("Lookup of a name never registered is not nil")
	}
}
