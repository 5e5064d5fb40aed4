package cbuild_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/cuprof/cuprof/internal/cbuild"
)

// A prebuilt part stands for a compile: with one for these sources and a
// glibc at least as new as its NEEDS, Build installs it (no compiler is
// looked for: CC names none that exists); with a NEEDS newer than the
// machine's, or CUPROF_NO_PREBUILT=1, or other sources, Build compiles.
func TestPrebuiltPartInsteadOfACompile(t *testing.T) {
	have, ok := cbuild.GlibcProvided()
	if !ok {
		t.Skip("no glibc found on this machine: prebuilt parts are never used here")
	}
	sources := fstest.MapFS{"part.c": {Data: []byte("int part;\n")}}
	flags := []string{"-O2"}
	key, err := cbuild.SourceKey("testpart", flags, sources)
	if err != nil {
		t.Fatal(err)
	}
	dir := "testpart-" + key
	parts := func(needs string) fstest.MapFS {
		return fstest.MapFS{
			dir + "/libpart.so.1": {Data: []byte("the prebuilt library")},
			dir + "/NEEDS":        {Data: []byte("glibc " + needs + "\n")},
			dir + "/LINKS":        {Data: []byte("libpart.so libpart.so.1\n../escape libpart.so.1\n")},
		}
	}
	compiled := 0
	build := func(ctx context.Context, cc []string, tmp string) error {
		compiled++
		return os.WriteFile(filepath.Join(tmp, "libpart.so.1"), []byte("compiled"), 0o700)
	}
	t.Setenv("CC", "/nonexistent/cc")

	t.Run("used", func(t *testing.T) {
		t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
		defer cbuild.SetPrebuilt(parts(have.String()))()
		got, err := cbuild.Build(context.Background(), "testpart", sources, flags, build)
		if err != nil {
			t.Fatalf("Build with a prebuilt part and no compiler: %v", err)
		}
		b, err := os.ReadFile(filepath.Join(got, "libpart.so.1"))
		if err != nil || string(b) != "the prebuilt library" {
			t.Fatalf("the part's library: %q, %v", b, err)
		}
		st, err := os.Stat(filepath.Join(got, "libpart.so.1"))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("the library's mode: %v, %v (want 0700)", st.Mode(), err)
		}
		if target, err := os.Readlink(filepath.Join(got, "libpart.so")); err != nil || target != "libpart.so.1" {
			t.Errorf("libpart.so link: %q, %v", target, err)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(got), "escape")); err == nil {
			t.Error("a LINKS line naming a path outside the part was made")
		}
		if compiled != 0 {
			t.Errorf("compiled %d times with a prebuilt part at hand", compiled)
		}
	})
	for _, c := range []struct {
		name, needs string
		parts       func(string) fstest.MapFS
		noPrebuilt  bool
	}{
		{"glibc too old", "99.0", parts, false},
		{"CUPROF_NO_PREBUILT", have.String(), parts, true},
		{"other sources", have.String(), func(n string) fstest.MapFS {
			return fstest.MapFS{"testpart-0123/libpart.so.1": {Data: []byte("x")}}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
			if c.noPrebuilt {
				t.Setenv("CUPROF_NO_PREBUILT", "1")
			}
			defer cbuild.SetPrebuilt(c.parts(c.needs))()
			_, err := cbuild.Build(context.Background(), "testpart", sources, flags, build)
			if !errors.Is(err, cbuild.ErrNoCompiler) {
				t.Fatalf("Build: %v, want the compile path (ErrNoCompiler: CC names no compiler)", err)
			}
		})
	}
}

func TestParseGlibcVersion(t *testing.T) {
	for in, want := range map[string]cbuild.GlibcVersion{
		"GLIBC_2.34": {2, 34}, "2.17": {2, 17}, "GLIBC_2.2.5": {2, 2},
	} {
		if got, ok := cbuild.ParseGlibcVersion(in); !ok || got != want {
			t.Errorf("ParseGlibcVersion(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "GLIBC_PRIVATE", "2", "x.y"} {
		if _, ok := cbuild.ParseGlibcVersion(in); ok {
			t.Errorf("ParseGlibcVersion(%q) accepted", in)
		}
	}
}
