// Package output writes the files cuprof commands produce, all in one way.
//
// A regular file (or a new one) is written to a private temporary file in
// the same directory and renamed over the target when complete, so a reader
// never sees half a file and a failed write leaves the old one in place.
// Anything that is not a regular file (/dev/null, /dev/stdout, a FIFO, a
// terminal) is opened and written through, never replaced. A symbolic link
// is followed: its target is what is written (replaced when regular, written
// through otherwise), and the link itself is left as it is. Files cuprof
// creates have mode 0600.
package output

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Mode is the permission of every file cuprof creates.
const Mode fs.FileMode = 0o600

// maxLinks bounds how many symbolic links Resolve follows.
const maxLinks = 40

// File is an output being written. Write to it, then Commit (or Abort).
type File struct {
	path   string // the name the user gave
	target string // path with symbolic links followed
	f      *os.File
	tmp    string // temporary file renamed to target; "" when written through
	done   bool
}

// Resolve follows the symbolic links of path (which need not exist) to the
// name that is written.
func Resolve(path string) (string, error) {
	p := path
	for i := 0; i < maxLinks; i++ {
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		l, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(p), l)
		}
		p = l
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// Check reports, without creating anything, a problem that would make
// writing path fail: a directory, a missing or unwritable directory, a
// special file that cannot be opened for writing. Commands call it before
// doing work whose result would otherwise be lost.
func Check(path string) error {
	if path == "" {
		return errors.New("empty output file name")
	}
	target, err := Resolve(path)
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	st, err := os.Stat(target)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("output %s is a directory; give a file name inside it", path)
	case err == nil && !st.Mode().IsRegular():
		if unix.Access(target, unix.W_OK) != nil {
			return fmt.Errorf("output %s: cannot write to it (permission denied)", path)
		}
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("output %s: %w", path, err)
	}
	if strings.HasSuffix(path, string(filepath.Separator)) {
		return fmt.Errorf("output %s names a directory; give a file name", path)
	}
	dir := filepath.Dir(target)
	dst, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("output %s: directory %s does not exist; create it first", path, dir)
	case err != nil:
		return fmt.Errorf("output %s: %w", path, err)
	case !dst.IsDir():
		return fmt.Errorf("output %s: %s is not a directory", path, dir)
	}
	if unix.Access(dir, unix.W_OK|unix.X_OK) != nil {
		return fmt.Errorf("output %s: cannot create files in %s (permission denied); choose another -o", path, dir)
	}
	return nil
}

// Create starts writing path: a temporary file beside it (mode 0600) when
// path is a regular file or does not exist, path itself when it is
// something else (a device, a FIFO, a terminal).
func Create(path string) (*File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	target, err := Resolve(path)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	out := &File{path: path, target: target}
	if st, err := os.Stat(target); err == nil && !st.Mode().IsRegular() {
		// Written through: no O_CREATE, no O_TRUNC, nothing replaced.
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot open %s: %w", path, err)
		}
		out.f = f
		return out, nil
	}
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", path, err)
	}
	if err := f.Chmod(Mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("cannot create %s: %w", path, err)
	}
	out.f, out.tmp = f, f.Name()
	return out, nil
}

// Write writes to the output.
func (o *File) Write(p []byte) (int, error) {
	return o.f.Write(p)
}

// Name is the path the output was created with.
func (o *File) Name() string { return o.path }

// Commit completes the output: the temporary file is synced and renamed over
// the target (or the special file closed). On error nothing is replaced and
// the temporary file is removed.
func (o *File) Commit() error {
	if o.done {
		return errors.New("output already closed")
	}
	o.done = true
	if o.tmp == "" {
		if err := o.f.Close(); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("cannot write %s: %w", o.path, err)
		}
		return nil
	}
	err := o.f.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil // file systems without fsync
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.tmp, o.target)
	}
	if err != nil {
		os.Remove(o.tmp)
		return fmt.Errorf("cannot write %s: %w", o.path, err)
	}
	return nil
}

// Abort drops the output: the temporary file is removed, the target left as
// it was. It does nothing after Commit.
func (o *File) Abort() {
	if o.done {
		return
	}
	o.done = true
	o.f.Close()
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
}

// WriteFile writes path with write (buffered), through Create and Commit.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		f.Abort()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return f.Commit()
}

// Rescue creates a private file named like path in a new private directory
// elsewhere (the temporary directory, else the home directory), for a
// result that could not be written where asked and must not be lost.
func Rescue(path string) (*File, error) {
	var dirs []string
	if d := os.TempDir(); d != "" {
		dirs = append(dirs, d)
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, h)
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	var errs []error
	for _, base := range dirs {
		d, err := os.MkdirTemp(base, "cuprof-rescue-")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		name := filepath.Base(path)
		if name == "." || name == string(filepath.Separator) || name == "" {
			name = "recording.cuprof"
		}
		f, err := Create(filepath.Join(d, name))
		if err != nil {
			os.Remove(d)
			errs = append(errs, err)
			continue
		}
		return f, nil
	}
	return nil, fmt.Errorf("no place to rescue %s: %w", path, errors.Join(errs...))
}

// NextFree returns path when nothing exists there; otherwise, like perf with
// perf.data, it renames the existing file to path.old (replacing an older
// .old) and returns path. Only regular files are moved. It is for default
// output names, which the user did not choose; a name given with -o is
// overwritten as asked.
func NextFree(path string) (moved string, err error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", nil
	}
	old := path + ".old"
	if err := os.Rename(path, old); err != nil {
		return "", fmt.Errorf("keep the existing %s: %w", path, err)
	}
	return old, nil
}
