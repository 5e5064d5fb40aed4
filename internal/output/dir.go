package output

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PrivateDir makes path a directory for files cuprof writes and then runs or
// reads back (demo's example, its Python seed): created with mode 0700 when
// absent (its parents as needed), or, when it exists, accepted only if
// nobody else could have put anything in it: the user's own directory (not a
// link), writable by nobody else, in a directory that others cannot write
// unless it is sticky (as /tmp is: then nobody else can rename the user's
// directory away and put one of theirs in its place). Every directory above
// must be the user's or root's, like the build cache's (internal/cbuild).
// It returns the directory's path with the links above it resolved: the one
// to use from then on (a link on the way could be repointed after the
// check).
func PrivateDir(path string) (string, error) {
	if path == "" {
		return "", errors.New("empty directory name")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return "", err
	}
	if err := os.Mkdir(abs, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	abs = filepath.Join(parent, filepath.Base(abs))
	st, err := os.Lstat(abs)
	if err != nil {
		return "", err
	}
	uid := uint32(os.Geteuid())
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		to, _ := os.Readlink(abs)
		return "", fmt.Errorf("%s is a symbolic link (to %s), not a directory of yours", path, to)
	case !st.IsDir():
		return "", fmt.Errorf("%s is not a directory", path)
	case fileOwner(st) != uid:
		return "", fmt.Errorf("%s belongs to uid %d, not to you (uid %d): anything in it could be theirs", path, fileOwner(st), uid)
	case st.Mode().Perm()&0o022 != 0:
		return "", fmt.Errorf("%s is writable by others (mode %#o): anything in it could be theirs", path, st.Mode().Perm())
	}
	for dir := parent; ; dir = filepath.Dir(dir) {
		st, err := os.Lstat(dir)
		if err != nil {
			return "", err
		}
		if o := fileOwner(st); o != uid && o != 0 {
			return "", fmt.Errorf("%s is in %s, which belongs to uid %d, neither you nor root", path, dir, o)
		}
		if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
			return "", fmt.Errorf("%s is in %s, which others can write and is not sticky (mode %#o)", path, dir, st.Mode().Perm())
		}
		if dir == filepath.Dir(dir) {
			return abs, nil
		}
	}
}

// TempDir creates a new private directory (mode 0700, a name nobody can
// guess or make first) in the temporary directory, for a command's files
// when the user named no place for them.
func TempDir(prefix string) (string, error) {
	return os.MkdirTemp("", prefix)
}
