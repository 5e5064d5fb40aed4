package output

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func TestRegularFileIsReplacedAtomicallyAndPrivate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "new")
	// Until Commit the old contents stay.
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("before commit: %q", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "new" || st.Mode().Perm() != Mode {
		t.Errorf("got %q mode %v", b, st.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestFailedWriteKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	os.WriteFile(p, []byte("old"), 0o600)
	err := WriteFile(p, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("disk on fire")
	})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("old file now %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestSpecialFilesAreWrittenThroughNotReplaced(t *testing.T) {
	// /dev/null: a character device. As root a rename would replace it.
	if err := WriteFile("/dev/null", write("x")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat("/dev/null")
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is now %v (%v)", st.Mode(), err)
	}

	// A FIFO: the reader gets the bytes and the FIFO stays a FIFO.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := WriteFile(fifo, write("through the fifo")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the fifo" {
		t.Errorf("reader got %q", s)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("fifo replaced: %v", st.Mode())
	}
}

func TestSymlinkWritesItsTarget(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	target := filepath.Join(sub, "real.txt")
	os.WriteFile(target, []byte("old"), 0o600)
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("sub/real.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, write("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced by %v", st.Mode())
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("target has %q", b)
	}
	// A dangling link creates its target, as a shell's > does.
	dangling := filepath.Join(dir, "dangling")
	os.Symlink("sub/made.txt", dangling)
	if err := WriteFile(dangling, write("made")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sub, "made.txt")); string(b) != "made" {
		t.Errorf("dangling target has %q", b)
	}
	// A link to a device writes through it.
	devlink := filepath.Join(dir, "null")
	os.Symlink("/dev/null", devlink)
	if err := WriteFile(devlink, write("x")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(devlink); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("device link replaced by %v", st.Mode())
	}
	loop := filepath.Join(dir, "loop")
	os.Symlink("loop", loop)
	if err := Check(loop); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("loop: %v", err)
	}
}

func TestCheckFindsProblemsBeforeWork(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o500)
	cases := []struct{ path, want string }{
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "x"), "does not exist"},
		{filepath.Join(dir, "new") + "/", "names a directory"},
	}
	if os.Geteuid() != 0 {
		cases = append(cases, struct{ path, want string }{filepath.Join(ro, "x"), "permission denied"})
	}
	for _, c := range cases {
		err := Check(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%s) = %v, want %q", c.path, err, c.want)
		}
		if _, err := Create(c.path); err == nil {
			t.Errorf("Create(%s) succeeded", c.path)
		}
	}
	if err := Check(filepath.Join(dir, "fine.cuprof")); err != nil {
		t.Error(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("Check created files: %v", ents)
	}
}

func TestRescueIsPrivateAndElsewhere(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	f, err := Rescue("/nonexistent/dir/run.cuprof")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "kept")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	p := f.Name()
	if filepath.Base(p) != "run.cuprof" || !strings.HasPrefix(p, tmp) {
		t.Errorf("rescued to %s", p)
	}
	dst, _ := os.Stat(filepath.Dir(p))
	fst, _ := os.Stat(p)
	if dst.Mode().Perm() != 0o700 || fst.Mode().Perm() != 0o600 {
		t.Errorf("modes %v %v", dst.Mode(), fst.Mode())
	}
}

func TestNextFreeKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.pftrace")
	if moved, err := NextFree(p); err != nil || moved != "" {
		t.Fatalf("nothing there: %q %v", moved, err)
	}
	os.WriteFile(p, []byte("first"), 0o600)
	moved, err := NextFree(p)
	if err != nil || moved != p+".old" {
		t.Fatalf("moved %q %v", moved, err)
	}
	if b, _ := os.ReadFile(p + ".old"); string(b) != "first" {
		t.Errorf(".old has %q", b)
	}
}
