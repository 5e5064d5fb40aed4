package cbuild

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// A cached build is loaded into the traced program (the shim's constructor
// runs as the recording user), so it is used only when nobody else could
// have put it there: the entry, every file in it, the cache root and the
// root's ancestors must pass trustedPath. A cache that does not is left
// alone and the C parts are built into a private directory instead, with
// one warning per process.

// untrustedError says why a path cannot be trusted.
type untrustedError struct {
	path, why string
}

func (e *untrustedError) Error() string { return e.path + " " + e.why }

// owner returns the owning uid of st.
func owner(st fs.FileInfo) (uint32, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return s.Uid, true
}

// checkOwn checks that st (of path) is owned by uid and not writable by
// group or others.
func checkOwn(path string, st fs.FileInfo, uid uint32) error {
	o, ok := owner(st)
	if !ok {
		return &untrustedError{path, "has no owner information"}
	}
	if o != uid {
		return &untrustedError{path, fmt.Sprintf("is owned by uid %d, not by you (uid %d)", o, uid)}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return &untrustedError{path, fmt.Sprintf("is writable by others (mode %#o)", st.Mode().Perm())}
	}
	return nil
}

// trustedRoot checks the cache root and its ancestors, links resolved, and
// returns the resolved path: the one to use from then on (a link of
// someone else's on the way could be repointed after the check). The root
// must be the user's and writable only by them; an ancestor must belong to
// the user or to root, and may be writable by others only when sticky
// (like /tmp: then nobody else can rename what the user owns in it).
func trustedRoot(root string, uid uint32) (string, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", err
	}
	st, err := os.Lstat(real)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", &untrustedError{real, "is not a directory"}
	}
	if err := checkOwn(real, st, uid); err != nil {
		return "", err
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		st, err := os.Lstat(dir)
		if err != nil {
			return "", err
		}
		if o, ok := owner(st); !ok || (o != uid && o != 0) {
			return "", &untrustedError{dir, fmt.Sprintf("is owned by uid %d, neither you nor root", o)}
		}
		if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
			return "", &untrustedError{dir, fmt.Sprintf("is writable by others and not sticky (mode %#o)", st.Mode().Perm())}
		}
		if dir == filepath.Dir(dir) {
			return real, nil
		}
	}
}

// UserDir returns base/cuprof-UID, a directory of the user's that nobody
// else can write, made (0700) when absent and checked like the cache root:
// what cuprof makes and removes in it cannot be made again by another user,
// so paths under it can be handed to programs that outlive cuprof. It
// fails when the name is taken by something that is not such a directory.
func UserDir(base string) (string, error) {
	uid := uint32(os.Getuid())
	base, err := filepath.Abs(base)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(base, fmt.Sprintf("cuprof-%d", uid))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", &untrustedError{dir, "is not a directory"}
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", &untrustedError{dir, fmt.Sprintf("is open to others (mode %#o)", st.Mode().Perm())}
	}
	return trustedRoot(dir, uid)
}

// trustedEntry checks a cache entry: a directory of the user's, writable
// only by them, holding only regular files of theirs, writable only by
// them, and links to those.
func trustedEntry(dir string, uid uint32) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &untrustedError{dir, "is not a directory"}
	}
	if err := checkOwn(dir, st, uid); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			if err := trustedEntry(p, uid); err != nil {
				return err
			}
			continue
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			// A link to a sibling (libcuda.so -> libcuda.so.1), which is
			// checked itself.
			target, err := os.Readlink(p)
			if err != nil || target != filepath.Base(target) || target == ".." || target == "." {
				return &untrustedError{p, fmt.Sprintf("is a link out of its entry (to %q)", target)}
			}
			continue
		}
		if !st.Mode().IsRegular() {
			return &untrustedError{p, "is not a regular file"}
		}
		if err := checkOwn(p, st, uid); err != nil {
			return err
		}
	}
	return nil
}

// warnOut receives the one warning about an untrusted cache.
var warnOut io.Writer = os.Stderr

var private struct {
	sync.Mutex
	dir    string
	warned bool
}

// privateRoot returns this process's private build directory, made on
// first use, and warns once that the cache at root was not used because of
// why.
func privateRoot(root string, why error) (string, error) {
	private.Lock()
	defer private.Unlock()
	if private.dir == "" {
		// Inside the user's own directory, so that once it is removed
		// nobody else can make it again for the programs that still name
		// it (LD_PRELOAD of a child that outlives cuprof).
		parent, err := UserDir(os.TempDir())
		var d string
		if err == nil {
			d, err = os.MkdirTemp(parent, "build-")
		}
		if err != nil {
			return "", fmt.Errorf("the build cache %s cannot be trusted (%v), and no private directory could be made: %w (set CUPROF_CACHE_DIR to a directory of yours, mode 0700)", root, why, err)
		}
		private.dir = d
	}
	if !private.warned {
		private.warned = true
		fmt.Fprintf(warnOut, "cuprof: warning: not using the build cache %s: %v; building the C parts into %s for this run (make the cache yours and mode 0700, or set CUPROF_CACHE_DIR to a private directory)\n",
			root, why, private.dir)
	}
	return private.dir, nil
}

// RemovePrivate removes the private build directory, if one was made
// because the cache could not be trusted. Call it when nothing built is in
// use any more.
func RemovePrivate() {
	private.Lock()
	defer private.Unlock()
	if private.dir != "" {
		os.RemoveAll(private.dir)
		private.dir = ""
	}
}
