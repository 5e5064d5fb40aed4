package record

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mapsOf is /proc/PID/maps text naming each file as an executable mapping.
func mapsOf(files ...string) string {
	var b strings.Builder
	for i, f := range files {
		start := 0x400000 + i*0x10000
		fmt.Fprintf(&b, "%x-%x r-xp 00000000 08:01 1234 %s\n", start, start+0x1000, f)
	}
	return b.String()
}

// copyFile copies src to dst with mode perm.
func copyFile(t *testing.T, src, dst string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, perm); err != nil {
		t.Fatal(err)
	}
}

// symbolizeWithin runs s.symbolize and fails the test when it has not
// returned within d (the old symbolizer blocked in open(2) on a FIFO).
func symbolizeWithin(t *testing.T, s *symbolizer, d time.Duration, uid uint32, maps string) map[string]string {
	t.Helper()
	done := make(chan map[string]string, 1)
	go func() {
		ms, _ := s.symbolize(1, uid, maps, nil)
		ids := map[string]string{}
		for _, m := range ms {
			ids[filepath.Base(m.File)] = m.BuildID
		}
		done <- ids
	}()
	select {
	case ids := <-done:
		return ids
	case <-time.After(d):
		t.Fatalf("symbolize has not returned after %v", d)
		return nil
	}
}

// TestSymbolizeNeverOpensPlantedFiles: at the end of record every
// executable mapping's file was opened by its /proc/PID/maps name, " (deleted)"
// included: another user's FIFO at "NAME (deleted)" blocked cuprof for
// minutes, and a crafted ELF there was parsed as root. As root, with files a
// second user (uid 65534) made in a directory both can write: no FIFO is
// opened (by a deleted name or its own), a deleted name is never opened, and
// the other user's ELF is read only for a process that ran as that user.
func TestSymbolizeNeverOpensPlantedFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("needs root to act as a second user, and CI runs as root")
		}
		t.Skip("needs root, to plant files as a second user (uid 65534)")
	}
	shared, err := os.MkdirTemp("", "cuprof-shared-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shared)
	os.Chmod(shared, 0o777)
	copyFile(t, "/bin/true", filepath.Join(shared, "mine.so"), 0o755)
	cmd := exec.Command("/bin/sh", "-ec", `
mkfifo 'jit.so (deleted)' plain.so
cp /bin/true 'gone.so (deleted)'
cp /bin/true theirs.so
`)
	cmd.Dir = shared
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
	in := func(n string) string { return filepath.Join(shared, n) }
	maps := mapsOf(in("mine.so"), in("jit.so (deleted)"), in("plain.so"), in("gone.so (deleted)"), in("theirs.so"))

	s := newSymbolizer()
	ids := symbolizeWithin(t, s, time.Minute, 0, maps)
	if ids["mine.so"] == "" {
		t.Errorf("root's own file was not read: build IDs %v", ids)
	}
	for _, n := range []string{"jit.so (deleted)", "plain.so", "gone.so (deleted)", "theirs.so"} {
		if id, ok := ids[n]; !ok || id != "" {
			t.Errorf("%s: mapping %v, build ID %q; want the mapping, not the file read", n, ok, id)
		}
	}
	want := map[string]int{skipDeleted: 2, skipSpecial: 1, skipOwner: 1}
	for r, n := range want {
		if s.skipped[r] != n {
			t.Errorf("skipped %q: %d, want %d (all: %v)", r, s.skipped[r], n, s.skipped)
		}
	}
	var note strings.Builder
	s.note(&note)
	if !strings.Contains(note.String(), "1 of another user") {
		t.Errorf("note %q does not say a file of another user was left out", note.String())
	}

	// A process that ran as the other user mapped its own file: read.
	ids = symbolizeWithin(t, newSymbolizer(), time.Minute, 65534, maps)
	if ids["theirs.so"] == "" || ids["theirs.so"] != ids["mine.so"] {
		t.Errorf("the file of the user the process ran as was not read: %v", ids)
	}
}

// TestSymbolizeTimeBudget: a file whose read never returns (a hung network
// or FUSE mount) costs the symbolizer its budget, not the recording: it
// returns, counts the files left out, and reads nothing more.
func TestSymbolizeTimeBudget(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.so"), filepath.Join(dir, "b.so")
	copyFile(t, "/bin/true", a, 0o755)
	copyFile(t, "/bin/true", b, 0o755)
	block := make(chan struct{})
	defer close(block)
	oldRead, oldBudget := readMapped, symbolizeBudget
	defer func() { readMapped, symbolizeBudget = oldRead, oldBudget }()
	readMapped = func(io.ReaderAt) *elfSyms { <-block; return &elfSyms{} }
	symbolizeBudget = 100 * time.Millisecond
	s := newSymbolizer()
	symbolizeWithin(t, s, time.Minute, uint32(os.Geteuid()), mapsOf(a, b))
	if s.skipped[skipTime] != 2 {
		t.Errorf("%d files counted out of time, want 2 (skipped: %v)", s.skipped[skipTime], s.skipped)
	}
	var note strings.Builder
	s.note(&note)
	if !strings.Contains(note.String(), "2 out of time") {
		t.Errorf("note %q", note.String())
	}
}

// FuzzReadELF: readELF never panics and keeps its tables within the input,
// whatever the bytes (a crafted ELF is what a program may map).
func FuzzReadELF(f *testing.F) {
	b, err := os.ReadFile("/bin/true")
	if err == nil {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:64])
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := readELF(strings.NewReader(string(data)))
		if !e.ok && (len(e.funcs) != 0 || e.buildID != "") {
			t.Errorf("a file that did not parse has symbols")
		}
	})
}
