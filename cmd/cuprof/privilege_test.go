package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of this file plant files as a second user (uid 65534, nobody)
// in a directory both can write, as root only, and check that cuprof
// neither runs nor writes through what was planted (issue 47's privilege
// items).

// otherUID is the second user's uid and gid.
const otherUID = 65534

// needRoot skips a test that needs root to act as a second user; in CI,
// which runs as root, it fails instead.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("needs root to act as a second user, and CI runs as root")
	}
	t.Skip("needs root, to plant files as a second user (uid 65534)")
}

// sharedDir is a new directory like /tmp (mode 1777) that the second user
// can reach and write.
func sharedDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "cuprof-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return d
}

// asOtherUser runs the shell script as the second user, in dir.
func asOtherUser(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %v\n%s", otherUID, err, out)
	}
}

// plantDemo makes, as the second user, the cuprof-demo/ an old demo would
// have reused in dir: a Python seed folder with an argparse.py that the
// seed script would import first, and an example binary, each of which
// leaves a file named pwned-* in dir when run.
func plantDemo(t *testing.T, dir string) {
	asOtherUser(t, dir, `
umask 0
mkdir -p cuprof-demo/python/minicore
chmod 777 cuprof-demo cuprof-demo/python cuprof-demo/python/minicore
printf 'open("'"$PWD"'/pwned-argparse", "w").close()\nraise SystemExit(3)\n' > cuprof-demo/python/argparse.py
cp cuprof-demo/python/argparse.py cuprof-demo/python/json.py
printf '#!/bin/sh\ntouch '"$PWD"'/pwned-binary\n' > cuprof-demo/tempbuffer
chmod 777 cuprof-demo/tempbuffer cuprof-demo/python/*.py
`)
}

// pwned lists what the planted files left in dir.
func pwned(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "pwned-*"))
	return m
}

// TestDemoNeverRunsAnotherUsersFiles: cuprof demo in a directory another
// user can write (cd /tmp && cuprof demo) used to reuse that user's
// cuprof-demo/ and run its planted argparse.py as root. It now writes into a
// new private directory of its own in $TMPDIR, and --dir naming the other
// user's directory, or one of the user's that others can write, is refused
// before anything runs.
func TestDemoNeverRunsAnotherUsersFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	needRoot(t)
	shared := sharedDir(t)
	plantDemo(t, shared)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := demoChild
	t.Cleanup(func() { demoChild = old })
	var childDir string
	wd, _ := os.Getwd()
	if err := os.Chdir(shared); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)

	// The example is cuprof's own copy (no clone here): the test binary
	// stands in, run as TestDemoChild.
	t.Setenv("CUPROF_DEMO_TEST_CHILD", "5")
	demoChild = func(g *globalOptions, dir string, calls int) ([]string, error) {
		childDir = dir
		return []string{os.Args[0], "-test.run=^TestDemoChild$", "-test.count=1"}, nil
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"demo", "--sim", "-n", "5"}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if p := pwned(shared); len(p) != 0 {
		t.Fatalf("the other user's planted files ran as root: %v", p)
	}
	if !strings.HasPrefix(childDir, tmp+string(filepath.Separator)+"cuprof-demo-") {
		t.Errorf("the demo's files went to %q, want a new directory in $TMPDIR %s", childDir, tmp)
	}
	if st, err := os.Lstat(childDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("demo directory %s: %v, mode %v; want 0700", childDir, err, st.Mode())
	}
	if !strings.Contains(stdout.String(), "its files go to "+childDir) {
		t.Errorf("the demo does not say where its files are:\n%s", stdout.String())
	}
	if !strings.Contains(stdout.String(), "Python frames:") {
		t.Errorf("the Python seed did not run from the private directory:\n%s", stdout.String())
	}

	// --dir naming the other user's folder, or a folder of root's that
	// others can write: refused, nothing run.
	mine := filepath.Join(shared, "mine")
	if err := os.Mkdir(mine, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(mine, 0o777)
	for _, c := range []struct{ dir, want string }{
		{"cuprof-demo", "belongs to uid 65534"},
		{filepath.Join(shared, "cuprof-demo", "python"), "belongs to uid 65534"},
		{mine, "is writable by others (mode 0777)"},
	} {
		stdout.Reset()
		stderr.Reset()
		err := run([]string{"demo", "--sim", "-n", "5", "--dir", c.dir}, nil, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("demo --dir %s: error %v, want one saying %q", c.dir, err, c.want)
		}
		if code, _ := exitStatus(err); code != exitFailure {
			t.Errorf("demo --dir %s: exit status %d, want 1", c.dir, code)
		}
		if strings.Contains(stdout.String(), "== examples/") {
			t.Errorf("demo --dir %s ran something:\n%s", c.dir, stdout.String())
		}
	}
	if p := pwned(shared); len(p) != 0 {
		t.Fatalf("the other user's planted files ran as root: %v", p)
	}
}

// TestDemoNeverBuildsAnotherUsersClone: in a clone of cuprof that another
// user owns, demo does not go build (and then run) its examples/tempbuffer;
// it runs its own copy of the example. A clone of the user's own is built.
func TestDemoNeverBuildsAnotherUsersClone(t *testing.T) {
	needRoot(t)
	shared := sharedDir(t)
	asOtherUser(t, shared, `
mkdir -p clone/examples/tempbuffer
printf 'module github.com/cuprof/cuprof\n\ngo 1.22\n' > clone/go.mod
printf 'package main\n\nfunc main() {}\n' > clone/examples/tempbuffer/main.go
`)
	clone := filepath.Join(shared, "clone")
	if err := trustedModule(clone); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("another user's clone trusted: %v", err)
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(clone); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if moduleRoot() != clone {
		t.Fatalf("moduleRoot() = %q, want the planted clone %s", moduleRoot(), clone)
	}
	dir := t.TempDir()
	var stdout bytes.Buffer
	argv, err := exampleProgram(&globalOptions{stdout: &stdout}, dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "not building examples/tempbuffer from "+clone) || strings.Contains(stdout.String(), "built examples/tempbuffer") {
		t.Errorf("demo built another user's clone:\n%s", stdout.String())
	}
	if len(argv) < 2 || argv[1] != "demo" {
		t.Errorf("argv %q: want cuprof's own copy (… demo --run-example)", argv)
	}
	// The repository this test runs in is root's: trusted.
	if err := trustedModule(filepath.Join(wd, "..", "..")); err != nil {
		t.Errorf("this clone is not trusted: %v", err)
	}
}

// TestManNeverWritesThroughPlantedFiles: cuprof man DIR, as root, into a
// directory another user can write (not sticky, so the kernel's
// protected_symlinks does not step in): a link the other user planted at a
// page's name used to be followed (a root file truncated and overwritten, a
// new root file made where the link pointed) and a FIFO there blocked the
// write forever. Each is now refused, left as it was, with nothing written
// through it; a clean directory gets every page, mode 0644, and a second
// run replaces them without .old copies.
func TestManNeverWritesThroughPlantedFiles(t *testing.T) {
	needRoot(t)
	shared := sharedDir(t)
	if err := os.Chmod(shared, 0o777); err != nil { // not sticky
		t.Fatal(err)
	}
	private := t.TempDir()
	victim := filepath.Join(private, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(private, "made-by-root")
	for _, c := range []struct{ name, plant, want string }{
		{"link to a root file", "ln -s " + victim + " cuprof.1", "is a symbolic link"},
		{"dangling link", "ln -s " + dangling + " cuprof.1", "is a symbolic link"},
		{"fifo", "mkfifo cuprof.1", "is a FIFO of another user (uid 65534)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(shared, strings.ReplaceAll(c.name, " ", "-"))
			if err := os.Mkdir(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, 0o777)
			asOtherUser(t, dir, c.plant)
			before, err := os.Lstat(filepath.Join(dir, "cuprof.1"))
			if err != nil {
				t.Fatal(err)
			}
			var so, se bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- run([]string{"man", dir}, nil, &so, &se) }()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				// the old write blocked in open(2) on the FIFO: unblock
				// it with a reader so the test ends
				if f, err := os.OpenFile(filepath.Join(dir, "cuprof.1"), os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
					defer f.Close()
				}
				t.Fatal("cuprof man blocked on the planted file for a minute")
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("man: error %v, want one saying %q", err, c.want)
			}
			after, err := os.Lstat(filepath.Join(dir, "cuprof.1"))
			if err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
				t.Errorf("the planted cuprof.1 was replaced: %v %v", after, err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "root's\n" {
				t.Errorf("the link's target was written: %q", b)
			}
			if _, err := os.Lstat(dangling); err == nil {
				t.Errorf("a root file was made where the dangling link pointed")
			}
		})
	}

	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		var so, se bytes.Buffer
		if err := run([]string{"man", dir}, nil, &so, &se); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(se.String(), "cuprof: wrote ") || !strings.Contains(se.String(), " man pages into "+dir) {
			t.Errorf("stderr does not say what was written: %q", se.String())
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		st, _ := e.Info()
		if !strings.HasSuffix(e.Name(), ".1") || !st.Mode().IsRegular() || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v; want only man pages, regular, 0644", e.Name(), st.Mode())
		}
	}
	if len(ents) < 10 {
		t.Errorf("%d pages written", len(ents))
	}
}
