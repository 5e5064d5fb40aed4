package record

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// plantAs runs as the helper process of TestNothingInheritedOthersCanMake:
// it becomes uid (and gid) and tries, for each path, what another user
// would to get their code or files used in its place: make it (and the
// directories to it) when it is gone, or put a file beside it and move it
// when it is there. It prints "planted PATH: HOW" for each that worked,
// "ok PATH" for the others, and exits.
func plantAs(uid int, paths []string) {
	if err := syscall.Setgid(uid); err != nil {
		fmt.Println("setgid:", err)
		os.Exit(2)
	}
	if err := syscall.Setuid(uid); err != nil {
		fmt.Println("setuid:", err)
		os.Exit(2)
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			if err := os.MkdirAll(p, 0o777); err == nil {
				fmt.Printf("planted %s: made it\n", p)
				continue
			}
		} else {
			if f, err := os.Create(filepath.Join(filepath.Dir(p), "planted-by-other")); err == nil {
				f.Close()
				fmt.Printf("planted %s: a file beside it\n", p)
				continue
			}
			if err := os.Rename(p, p+".moved"); err == nil {
				fmt.Printf("planted %s: moved it\n", p)
				continue
			}
		}
		fmt.Printf("ok %s\n", p)
	}
	os.Exit(0)
}

// inheritedPaths runs `env` under cuprof record and returns the paths the
// program's environment names (preloads, the NVTX injection, PYTHONPATH,
// the ring directories, the library path), after the recording ended.
func inheritedPaths(t *testing.T) []string {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "env")
	record(t, []string{"sh", "-c", `env > "$0"`, envFile})
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, kv := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "LD_PRELOAD", "NVTX_INJECTION64_PATH", "PYTHONPATH", "CUPROF_DIR", "CUPROF_DIR_FALLBACK", "LD_LIBRARY_PATH":
			for _, p := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' }) {
				paths = append(paths, p)
			}
		}
	}
	if len(paths) < 5 {
		t.Fatalf("the program's environment names %v: want the shim, the bootstrap, the rings", paths)
	}
	return paths
}

// TestNothingInheritedOthersCanMake records a program with the build cache
// trusted, untrusted (mode 0777: the C parts go to a private directory)
// and reached through another user's link, then, as that other user
// (uid 65534, in a helper process; as root only), tries to make again or
// replace every path the program's environment named. A child that
// outlives cuprof keeps those: PYTHONPATH used to name a directory in
// /dev/shm that cuprof removed and anyone could make again with a
// sitecustomize.py of theirs, LD_PRELOAD one in /tmp likewise when the
// cache was untrusted, and LD_PRELOAD kept the link's path, which its owner
// could repoint, after the cache had been checked through it.
func TestNothingInheritedOthersCanMake(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to try as a second user what that user can make")
	}
	private := t.TempDir() // 0700, root's
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	os.Chmod(filepath.Dir(shared), 0o755)
	link := filepath.Join(os.TempDir(), fmt.Sprintf("cuprof-test-link-%d", os.Getpid()))
	os.Remove(link)
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	if err := os.Lchown(link, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, cache string }{
		{"trusted", os.Getenv("CUPROF_CACHE_DIR")}, {"untrusted", shared}, {"through a link", link},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CUPROF_CACHE_DIR", c.cache)
			paths := inheritedPaths(t)
			for _, p := range paths {
				if c.cache == link && strings.HasPrefix(p, link) {
					t.Errorf("%s is through the other user's link %s", p, link)
				}
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "CUPROF_TEST_PLANT="+strings.Join(paths, "\x1f"))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("the other user's helper: %v\n%s", err, out.String())
			}
			ok := 0
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if strings.HasPrefix(l, "ok ") {
					ok++
				} else {
					t.Errorf("uid 65534 %s", l)
				}
			}
			if ok != len(paths) {
				t.Errorf("%d of %d paths checked; helper said:\n%s", ok, len(paths), out.String())
			}
		})
	}
}
