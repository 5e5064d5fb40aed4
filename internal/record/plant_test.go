package record

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cuprof/cuprof/cudawrap/shim"
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
			// Move the nearest directory above it that is there out of
			// the way, and make the path (then put it back).
			up := filepath.Dir(p)
			for _, err := os.Lstat(up); err != nil && up != "/"; _, err = os.Lstat(up) {
				up = filepath.Dir(up)
			}
			if up != "/" && os.Rename(up, up+".moved") == nil {
				made := os.MkdirAll(p, 0o777) == nil
				os.RemoveAll(up)
				os.Rename(up+".moved", up)
				if made {
					fmt.Printf("planted %s: moved %s away and made it\n", p, up)
					continue
				}
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

// inheritedPathsTo runs `env` under cuprof record, the trace written to
// out ("": a temporary file), and returns the paths the program's
// environment names (preloads, the NVTX injection, PYTHONPATH, the ring
// directories, the library path), after the recording ended.
func inheritedPathsTo(t *testing.T, out string) []string {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "env")
	argv := []string{"sh", "-c", `env > "$0"`, envFile}
	if out == "" {
		record(t, argv)
	} else if _, err := Run(context.Background(), argv, WithSim(true), WithOutput(out)); err != nil {
		t.Fatalf("Run: %v", err)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, kv := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "LD_PRELOAD", "NVTX_INJECTION64_PATH", "PYTHONPATH", "CUPROF_DIR", "CUPROF_DIR_FALLBACK", "LD_LIBRARY_PATH":
			paths = append(paths, strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ' ' })...)
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
	if testing.Short() {
		t.Skip("builds the shim in three caches: run without -short")
	}
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
	// Outputs in directories others can write: the disk fallback for rings
	// (CUPROF_DIR_FALLBACK) lies in the spill directory, which used to lie
	// right there, to be made again by anyone once cuprof removed it.
	sticky := filepath.Join(t.TempDir(), "sticky")
	if err := os.Mkdir(sticky, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(sticky, 0o777|os.ModeSticky)
	os.Chmod(filepath.Dir(sticky), 0o755)
	os.Chmod(filepath.Dir(filepath.Dir(sticky)), 0o755) // the test's temporary directory: the other user gets to both
	cache := os.Getenv("CUPROF_CACHE_DIR")
	for _, c := range []struct{ name, cache, out string }{
		{"trusted", cache, ""}, {"untrusted", shared, ""}, {"through a link", link, ""},
		{"output in a sticky world-writable directory", cache, filepath.Join(sticky, "out.cuprof")},
		{"output in a world-writable directory", cache, filepath.Join(shared, "out.cuprof")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CUPROF_CACHE_DIR", c.cache)
			paths := inheritedPathsTo(t, c.out)
			if c.out != "" {
				os.Remove(c.out)
				if !slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(p, ".cuprof-spill-") }) {
					t.Fatalf("no disk fallback among the inherited paths %v", paths)
				}
			}
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

// TestMapsFileNeverThroughALink: the mappings the shim saves beside its
// ring (NAME.maps, written as NAME.maps.tmp and renamed) never go through a
// link planted at either name: a link at NAME.maps.tmp stops the save
// (its target, a file that does not exist, is not made), and one at
// NAME.maps is replaced by the file, its target (another file of the
// user's) left as it was.
func TestMapsFileNeverThroughALink(t *testing.T) {
	_, sim := programs(t)
	bin := buildProgram(t, "testdata/mapsplant.c", "mapsplant", "-lcuda")
	lib, err := shim.Library(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, atTmp := range []bool{true, false} {
		t.Run(map[bool]string{true: "link at .maps.tmp", false: "link at .maps"}[atTmp], func(t *testing.T) {
			dir, other := t.TempDir(), t.TempDir()
			victim := filepath.Join(other, "victim")
			if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chmod(victim, 0o644)
			absent := filepath.Join(other, "made-through-a-link")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "CUPROF_DIR="+dir, "LD_LIBRARY_PATH="+sim)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer stdin.Close()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || line != "ready\n" {
				t.Fatalf("mapsplant said %q, %v", line, err)
			}
			rings, _ := filepath.Glob(filepath.Join(dir, "*.ring"))
			if len(rings) != 1 {
				t.Fatalf("rings %v, want one", rings)
			}
			maps := rings[0] + ".maps"
			if b, err := os.ReadFile(maps); err != nil || !bytes.Contains(b, []byte("mapsplant")) {
				t.Fatalf("the ring's open saved no mappings naming the program: %v", err)
			}
			os.Remove(maps)
			if err := os.Symlink(victim, maps); err != nil {
				t.Fatal(err)
			}
			if atTmp {
				if err := os.Symlink(absent, maps+".tmp"); err != nil {
					t.Fatal(err)
				}
			}
			stdin.Write([]byte("go\n"))
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("mapsplant: %v", err)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
				t.Errorf("the link's target holds %q (%v), want it unchanged", b, err)
			}
			if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o644 {
				t.Errorf("the link's target: %v %v, want mode 0644 kept", st.Mode(), err)
			}
			if _, err := os.Lstat(absent); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the dangling link's target was made: %v", err)
			}
			st, err := os.Lstat(maps)
			switch {
			case err != nil:
				t.Errorf("%s: %v", maps, err)
			case atTmp && st.Mode()&os.ModeSymlink == 0:
				t.Errorf("%s is %v: the exit's save went on past the planted .maps.tmp", maps, st.Mode())
			case !atTmp && (!st.Mode().IsRegular() || st.Mode().Perm() != 0o600):
				t.Errorf("%s is %v, want the exit's save: a regular file, 0600", maps, st.Mode())
			case !atTmp:
				if b, _ := os.ReadFile(maps); !bytes.Contains(b, []byte("mapsplant")) {
					t.Errorf("%s does not hold the program's mappings", maps)
				}
			}
		})
	}
}

// TestRingOnlyInAPrivateDirectory: the shim creates its ring only in a
// directory of the user's that neither group nor others can write, and
// not through a link: a ring directory another user made again at the name
// the program inherited, after cuprof removed it, gets no ring (it goes to
// the next directory, CUPROF_DIR_FALLBACK, when that one is fit).
func TestRingOnlyInAPrivateDirectory(t *testing.T) {
	bins, sim := programs(t)
	lib, err := shim.Library(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fallback := t.TempDir() // 0700, the user's
	base := t.TempDir()
	cases := []struct {
		name  string
		setup func(dir string) error
	}{
		{"open to others", func(dir string) error { return os.Chmod(dir, 0o777) }},
		{"writable by the group", func(dir string) error { return os.Chmod(dir, 0o770) }},
		{"a link to a private directory", func(dir string) error {
			os.Remove(dir)
			return os.Symlink(t.TempDir(), dir)
		}},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name  string
			setup func(dir string) error
		}{"another user's", func(dir string) error { return os.Chown(dir, 65534, 65534) }})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(base, strconv.Itoa(i))
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := c.setup(dir); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(bins, "threads"), "10", "1")
			cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "CUPROF_DIR="+dir, "CUPROF_DIR_FALLBACK="+fallback,
				"LD_LIBRARY_PATH="+sim, "CUPROF_SIM_COST_SCALE=0")
			if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "made 10" {
				t.Fatalf("threads: %v, %q", err, out)
			}
			if got, _ := filepath.Glob(filepath.Join(dir, "*")); len(got) != 0 {
				t.Errorf("the shim wrote %v in a directory it must not use", got)
			}
			rings, _ := filepath.Glob(filepath.Join(fallback, "*.ring"))
			if len(rings) != 1 {
				t.Errorf("rings in the private fallback: %v, want the program's", rings)
			}
			for _, r := range rings {
				os.Remove(r)
				os.Remove(r + ".maps")
			}
		})
	}
}
