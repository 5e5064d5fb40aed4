package output

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

func TestNewFileIsAtomicAndPrivate(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "new")
	// Until Commit nothing is at the name.
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("before commit: %v", err)
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

// An existing file is kept as NAME.old, the new one takes its mode; with
// Force it is replaced, its mode kept, nothing kept.
func TestExistingFileIsKeptAsOldWithItsMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(p, []byte("first"), 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o640)
	var kept []string
	onKeep := OnKeep(func(path, old string) { kept = append(kept, path+" "+old) })
	if err := WriteFile(p, write("second"), onKeep); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	old, _ := os.ReadFile(p + ".old")
	st, _ := os.Stat(p)
	if string(b) != "second" || string(old) != "first" || st.Mode().Perm() != 0o640 {
		t.Errorf("new %q (mode %v), old %q", b, st.Mode(), old)
	}
	if len(kept) != 1 || kept[0] != p+" "+p+".old" {
		t.Errorf("OnKeep calls %q", kept)
	}
	// A second write replaces the older .old.
	if err := WriteFile(p, write("third")); err != nil {
		t.Fatal(err)
	}
	if old, _ := os.ReadFile(p + ".old"); string(old) != "second" {
		t.Errorf(".old has %q, want second", old)
	}
	// Force: replaced in place, mode kept, .old untouched.
	if err := WriteFile(p, write("fourth"), Force(true)); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(p)
	old, _ = os.ReadFile(p + ".old")
	st, _ = os.Stat(p)
	if string(b) != "fourth" || string(old) != "second" || st.Mode().Perm() != 0o640 {
		t.Errorf("forced: new %q (mode %v), old %q", b, st.Mode(), old)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left behind: %v", ents)
	}
}

// A name that appears between Create and Commit is not replaced.
func TestNameCreatedMeanwhileIsNotReplaced(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "mine")
	if err := os.Symlink("/etc/passwd", p); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err == nil || !strings.Contains(err.Error(), "not replaced") {
		t.Fatalf("commit over a planted link: %v", err)
	}
	if st, _ := os.Lstat(p); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("planted link replaced by %v", st.Mode())
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

// otherUser is a uid that is not the test's, for files "another user"
// planted; it needs root to chown them.
func otherUser(t *testing.T) int {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to make files of another user")
	}
	return 65534
}

// stickyDir is a world-writable sticky directory like /tmp.
func stickyDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return d
}

// Links are not followed without Force: a link another user planted in a
// sticky directory, a dangling one, one to a device. The victims stay as
// they were and nothing is created.
func TestLinksAreRefused(t *testing.T) {
	uid := otherUser(t)
	tmp := stickyDir(t)
	victimDir := t.TempDir()
	victim := filepath.Join(victimDir, "owned-by-root")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(victim, 0o644)
	dev := filepath.Join(victimDir, "disk")
	if err := unix.Mknod(dev, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 250))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	links := map[string]string{
		"planted":  victim,
		"dangling": filepath.Join(victimDir, "chosen-by-attacker"),
		"device":   dev,
		"null":     "/dev/null",
	}
	for name, to := range links {
		l := filepath.Join(tmp, name)
		if err := os.Symlink(to, l); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(l, uid, uid); err != nil {
			t.Fatal(err)
		}
		for _, op := range []string{"Check", "WriteFile"} {
			var err error
			if op == "Check" {
				err = Check(l)
			} else {
				err = WriteFile(l, write("trace"))
			}
			if err == nil || !strings.Contains(err.Error(), "is a symbolic link") || !strings.Contains(err.Error(), "--force") {
				t.Errorf("%s(%s -> %s) = %v, want a refusal naming the link and --force", op, name, to, err)
			}
		}
	}
	b, _ := os.ReadFile(victim)
	st, _ := os.Stat(victim)
	if string(b) != "precious" || st.Mode().Perm() != 0o644 {
		t.Errorf("victim now %q mode %v", b, st.Mode())
	}
	if _, err := os.Lstat(links["dangling"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dangling link's target created: %v", err)
	}
	if st, _ := os.Lstat(dev); st.Mode()&os.ModeDevice == 0 {
		t.Errorf("device replaced: %v", st.Mode())
	}
	// Even with Force the kernel follows the link, and so applies
	// protected_symlinks in the sticky directory: root cannot be made to
	// write through another user's link there.
	if b, err := os.ReadFile("/proc/sys/fs/protected_symlinks"); err == nil && strings.TrimSpace(string(b)) == "1" {
		err := WriteFile(filepath.Join(tmp, "planted"), write("trace"), Force(true))
		if err == nil {
			t.Errorf("forced write through another user's link in a sticky directory succeeded")
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Errorf("victim now %q", b)
		}
	}
}

// Force follows the user's own link to a regular file, keeping its mode.
func TestForceFollowsALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.txt")
	os.WriteFile(target, []byte("old contents, longer"), 0o644)
	os.Chmod(target, 0o644)
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("real.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, write("new")); err == nil {
		t.Fatal("link written without Force")
	}
	if err := WriteFile(link, write("new"), Force(true)); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Lstat(link)
	b, _ := os.ReadFile(target)
	tst, _ := os.Stat(target)
	if st.Mode()&os.ModeSymlink == 0 || string(b) != "new" || tst.Mode().Perm() != 0o644 {
		t.Errorf("link %v, target %q mode %v", st.Mode(), b, tst.Mode())
	}
	// /dev/stdout is root's link in /dev: written through without Force.
	if err := Check("/dev/stdout"); err != nil {
		t.Errorf("Check(/dev/stdout): %v", err)
	}
}

// Special files of another user and block devices are refused without
// Force; the user's own FIFO is written through (above).
func TestOtherUsersSpecialFilesAreRefused(t *testing.T) {
	uid := otherUser(t)
	tmp := stickyDir(t)
	fifo := filepath.Join(tmp, "out.cuprof")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	os.Chown(fifo, uid, uid)
	if err := Check(fifo); err == nil || !strings.Contains(err.Error(), "FIFO of another user") {
		t.Errorf("another user's FIFO: %v", err)
	}
	dev := filepath.Join(t.TempDir(), "disk")
	if err := unix.Mknod(dev, unix.S_IFBLK|0o600, int(unix.Mkdev(7, 250))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	if err := Check(dev); err == nil || !strings.Contains(err.Error(), "block device") {
		t.Errorf("block device: %v", err)
	}
	// Another user's regular file is kept as .old, and does not lend the
	// new file its mode.
	p := filepath.Join(tmp, "planted.cuprof")
	os.WriteFile(p, []byte("theirs"), 0o666)
	os.Chmod(p, 0o666)
	os.Chown(p, uid, uid)
	if err := WriteFile(p, write("mine")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != Mode || fileOwner(st) != uint32(os.Geteuid()) {
		t.Errorf("new file mode %v owner %d", st.Mode(), fileOwner(st))
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
	p, err := Rescue("/nonexistent/dir/run.cuprof", func(f *File) error {
		io.WriteString(f, "kept")
		return f.Commit()
	})
	if err != nil {
		t.Fatal(err)
	}
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

// TestDirectWritesTheBytes: an output written with Direct holds exactly the
// bytes written, in writes of every size (whole buffers, their remainders, a
// last partial block), where the file system takes O_DIRECT (the temporary
// directory, when it does) and where it does not (tmpfs, when it does not).
func TestDirectWritesTheBytes(t *testing.T) {
	dirs := []string{t.TempDir()}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "cuprof-output-test"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dirs = append(dirs, d)
		}
	}
	want := make([]byte, 2*directBuffer+3*4096+123)
	for i := range want {
		want[i] = byte(i*7 + i>>13)
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, "out.bin")
		f, err := Create(p, Direct())
		if err != nil {
			t.Fatal(err)
		}
		direct := f.d != nil
		rest := want
		for _, n := range []int{1, 4095, 1 << 20, directBuffer, 7, directBuffer - 1} {
			n = min(n, len(rest))
			if _, err := f.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if _, err := f.Write(rest); err != nil {
			t.Fatal(err)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: O_DIRECT %v, %d bytes", dir, direct, len(got))
		if !bytes.Equal(got, want) {
			t.Errorf("%s (O_DIRECT %v): %d bytes read back, %d written, equal: false", dir, direct, len(got), len(want))
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != Mode {
			t.Errorf("%s: mode %v (%v)", dir, st.Mode(), err)
		}
	}
}

// TestDirectWritesAlignedBlocksInPlace: page-aligned blocks written to an
// empty buffer go out from where they are (the buffer stays empty), a
// block's part past its last whole page is gathered as before, and the file
// holds exactly the bytes written, either way.
func TestDirectWritesAlignedBlocksInPlace(t *testing.T) {
	const block = 1 << 20
	src := make([]byte, 4*block+block/2) // large allocations: page-aligned
	blk := make([]byte, block+100)
	if !aligned(src, directPage) || !aligned(blk, directPage) {
		t.Skip("the allocation is not page-aligned here")
	}
	for i := range src {
		src[i] = byte(i*13 + i>>11)
	}
	p := filepath.Join(t.TempDir(), "out.bin")
	f, err := Create(p, Direct())
	if err != nil {
		t.Fatal(err)
	}
	if f.d == nil {
		t.Skip("the temporary directory's file system does not take O_DIRECT")
	}
	var want []byte
	for i := 0; i < 3; i++ {
		n := copy(blk, src[i*block:(i+1)*block])
		if _, err := f.Write(blk[:n]); err != nil {
			t.Fatal(err)
		}
		want = append(want, blk[:n]...)
		if f.d.n != 0 {
			t.Fatalf("block %d: %d bytes gathered in the buffer, want 0 (written in place)", i, f.d.n)
		}
	}
	n := copy(blk, src[3*block:])
	if _, err := f.Write(blk[:n]); err != nil { // its last 100 bytes are gathered
		t.Fatal(err)
	}
	want = append(want, blk[:n]...)
	if f.d.n != 100 {
		t.Errorf("%d bytes gathered after a block of %d, want 100", f.d.n, n)
	}
	if _, err := f.Write(src[:block]); err != nil { // after them: gathered too
		t.Fatal(err)
	}
	want = append(want, src[:block]...)
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%d bytes read back, %d written, equal: false", len(got), len(want))
	}
}

// TestNoSyncLeavesOutTheSync: a new file is synced before its rename
// unless NoSync is given; either way it lands whole under its name.
func TestNoSyncLeavesOutTheSync(t *testing.T) {
	syncs := 0
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	syncFile = func(f *os.File) error { syncs++; return f.Sync() }
	dir := t.TempDir()
	for _, c := range []struct {
		opts  []Option
		syncs int
	}{{nil, 1}, {[]Option{NoSync()}, 0}} {
		syncs = 0
		path := filepath.Join(dir, "out"+strings.Repeat("x", c.syncs))
		if err := WriteFile(path, write("data"), c.opts...); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != "data" {
			t.Errorf("%s: %q, %v", path, b, err)
		}
		if syncs != c.syncs {
			t.Errorf("%d options: %d syncs, want %d", len(c.opts), syncs, c.syncs)
		}
	}
}
