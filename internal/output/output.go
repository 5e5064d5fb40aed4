// Package output writes the files cuprof commands produce, all in one way.
//
// The rules (docs/cli.md, "Writing outputs"):
//
//   - A new file is written to a private temporary file in the same
//     directory (mode 0600, O_EXCL) and renamed to its name when complete,
//     with RENAME_NOREPLACE: a reader never sees half a file, and a name
//     someone else creates meanwhile is never replaced.
//   - An existing regular file is kept as NAME.old (an older .old is
//     replaced, as perf does with perf.data) and the new file takes its
//     permission bits. With Force it is replaced without keeping a copy.
//   - The name's own entry is what is examined and replaced: symbolic links
//     are never resolved in Go and never renamed over. A symbolic link is
//     refused unless Force is given (or it is root's, in a directory only
//     root can write, as /dev/stdout is); then the kernel follows it, so its
//     protected_symlinks rule applies, and its target is written through.
//   - A character device or FIFO owned by the user or root (/dev/null, a
//     terminal, a pipe the user made) is opened with O_NOFOLLOW and written
//     through, never replaced or truncated. Any other file that is not
//     regular (a block device, a socket, a device or FIFO of another user)
//     is refused unless Force is given.
//   - With Direct (the timeline, hundreds of megabytes nobody reads back),
//     a new file's bytes go to the device through O_DIRECT where the file
//     system takes it, not through the page cache; the same bytes either way.
//
// google/renameio was considered and not used: it renames over whatever
// entry the name has (it has no RENAME_NOREPLACE step, no refusal of links,
// devices and other users' FIFOs, no .old), which are the rules above; what
// it does besides (CreateTemp, Sync, Rename) is a few lines here.
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

type config struct {
	force   bool
	direct  bool
	replace bool
	noSync  bool
	perm    fs.FileMode // a new file's mode; 0 for Mode
	onKeep  func(path, old string)
}

// Option changes how an output is written.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Force writes where asked even when the rules refuse: a symbolic link is
// followed (by the kernel) and its target written through, a block device or
// another user's FIFO written through, and an existing regular file replaced
// without keeping NAME.old.
func Force(force bool) Option { return optionFunc(func(c *config) { c.force = c.force || force }) }

// Replace replaces an existing regular file of the name (renamed over, its
// mode kept) instead of keeping it as NAME.old, for outputs a command
// regenerates whole (man pages); links and special files are refused as
// without it.
func Replace() Option { return optionFunc(func(c *config) { c.replace = true }) }

// Perm is the mode of a new file instead of Mode (0600): 0644 for what is
// meant for every user to read (man pages).
func Perm(perm fs.FileMode) Option { return optionFunc(func(c *config) { c.perm = perm.Perm() }) }

// NoSync leaves out Commit's sync of the new file before its rename, for
// outputs made again from their trace whenever asked (reports, profiles,
// timelines, dumps): the sync waits for the disk to take the file, and on
// a machine whose disk is busy with other programs' writes that wait was
// most of a command's time (a report of a large trace: 81 s of wall time
// for 3.8 s of CPU, where standard output took 4.9 s; an fsync of ext4
// waits for the journal, which other files' writes fill). Without it a
// crash just after the command may leave the new file empty or absent
// (NAME.old keeps the previous one); a reader of the running system still
// never sees half a file. A recording is synced: it cannot be made again.
func NoSync() Option { return optionFunc(func(c *config) { c.noSync = true }) }

// syncFile syncs an output's new file before its rename (a variable: the
// tests count the syncs).
var syncFile = (*os.File).Sync

// OnKeep is called when an existing file path was kept as old.
func OnKeep(f func(path, old string)) Option { return optionFunc(func(c *config) { c.onKeep = f }) }

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	return c
}

// File is an output being written. Write to it, then Commit (or Abort).
type File struct {
	path string // the name the user gave
	cfg  *config
	f    *os.File
	tmp  string      // temporary file renamed to path; "" when written through
	keep bool        // an existing regular file is to be kept as path.old
	perm fs.FileMode // permission bits for the new file
	done bool
	kept string
	d    *directWriter // Direct: writes go through it; nil otherwise
}

// Resolve follows the symbolic links of path (which need not exist) to the
// name they lead to. Outputs are never written through what it returns (a
// link could change after it looked); it serves to tell where a file would
// land, for messages and for choosing a directory.
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

// kind is what the name of an output is now, and so how it is written.
type kind int

const (
	kindNew     kind = iota // nothing there: created
	kindRegular             // a regular file: kept as .old (or replaced with Force)
	kindThrough             // a device or FIFO written through, opened O_NOFOLLOW
	kindLink                // a link the kernel follows (allowed or forced)
	kindRefused             // not written
)

// classify decides how path is written, or why it is not.
func classify(path string, c *config) (kind, fs.FileInfo, error) {
	if path == "" {
		return kindRefused, nil, errors.New("empty output file name")
	}
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if strings.HasSuffix(path, string(filepath.Separator)) {
			return kindRefused, nil, fmt.Errorf("output %s names a directory; give a file name", path)
		}
		return kindNew, nil, nil
	}
	if err != nil {
		return kindRefused, nil, fmt.Errorf("output %s: %w", path, err)
	}
	m := st.Mode()
	switch {
	case m.IsDir():
		return kindRefused, st, fmt.Errorf("output %s is a directory; give a file name inside it", path)
	case m.IsRegular():
		return kindRegular, st, nil
	case m&fs.ModeSymlink != 0:
		if c.force || trustedLink(path, st) {
			return kindLink, st, nil
		}
		to, _ := os.Readlink(path)
		return kindRefused, st, fmt.Errorf("output %s is a symbolic link (to %s); cuprof does not write through links: give the file's own name, or pass --force", path, to)
	}
	owner := fileOwner(st)
	mine := owner == uint32(os.Geteuid()) || owner == 0
	switch {
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0:
		if !c.force {
			return kindRefused, st, fmt.Errorf("output %s is a block device; cuprof does not write a trace over a disk (pass --force if that is meant)", path)
		}
	case m&(fs.ModeCharDevice|fs.ModeNamedPipe) != 0:
		if !mine && !c.force {
			return kindRefused, st, fmt.Errorf("output %s is a %s of another user (uid %d); cuprof does not write into it: choose another -o, or pass --force", path, special(m), owner)
		}
	default:
		if !c.force {
			return kindRefused, st, fmt.Errorf("output %s is a %s, not a file; choose another -o (or pass --force)", path, special(m))
		}
	}
	return kindThrough, st, nil
}

// special names a non-regular file's type for messages.
func special(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// trustedLink reports whether the link at path is one of the system's
// links to open files, /dev/stdout, /dev/stderr, /dev/fd/N: root's, in
// /dev or /dev/fd, which nobody else can write.
func trustedLink(path string, st fs.FileInfo) bool {
	if fileOwner(st) != 0 {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	dir := filepath.Dir(abs)
	if dir != "/dev" && dir != "/dev/fd" && dir != "/proc/self/fd" {
		return false
	}
	dst, err := os.Lstat(dir)
	return err == nil && dst.IsDir() && fileOwner(dst) == 0 && dst.Mode().Perm()&0o022 == 0
}

func fileOwner(st fs.FileInfo) uint32 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Uid
	}
	return ^uint32(0)
}

// Check reports, without creating anything, a problem that would make
// writing path fail or that the rules refuse: a directory, a missing or
// unwritable directory, a link or special file without Force. Commands
// call it before doing work whose result would otherwise be lost.
func Check(path string, opts ...Option) error {
	c := newConfig(opts)
	k, _, err := classify(path, c)
	switch k {
	case kindRefused:
		return err
	case kindThrough, kindLink:
		if _, err := os.Stat(path); k == kindLink && errors.Is(err, fs.ErrNotExist) {
			return nil // a forced dangling link: the open says what happens
		}
		if unix.Access(path, unix.W_OK) != nil {
			return fmt.Errorf("output %s: cannot write to it (permission denied)", path)
		}
		return nil
	}
	dir := filepath.Dir(path)
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

// Create starts writing path by the rules of the package comment.
func Create(path string, opts ...Option) (*File, error) {
	if err := Check(path, opts...); err != nil {
		return nil, err
	}
	c := newConfig(opts)
	k, st, err := classify(path, c)
	if err != nil {
		return nil, err
	}
	out := &File{path: path, cfg: c, perm: Mode}
	if c.perm != 0 {
		out.perm = c.perm
	}
	switch k {
	case kindThrough:
		// No O_CREATE, no O_TRUNC, nothing replaced; O_NOFOLLOW in case
		// the name became a link since it was looked at.
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NOCTTY, 0)
		if err != nil {
			return nil, fmt.Errorf("cannot open %s: %w", path, err)
		}
		if err := sameFile(f, st); err != nil {
			f.Close()
			return nil, fmt.Errorf("cannot open %s: %w", path, err)
		}
		out.f = f
		return out, nil
	case kindLink:
		// The kernel follows the link, so its protected_symlinks rule
		// applies. A link of root's (/dev/stdout) is written through like
		// a special file; a forced one to a file that is written in place:
		// created if missing, truncated with its mode kept.
		flags := os.O_WRONLY | syscall.O_NOCTTY
		if !trustedLink(path, st) {
			flags |= os.O_CREATE
		}
		f, err := os.OpenFile(path, flags, Mode)
		if err != nil {
			return nil, fmt.Errorf("cannot open %s: %w", path, err)
		}
		if fst, err := f.Stat(); err == nil && fst.Mode().IsRegular() && flags&os.O_CREATE != 0 {
			if err := f.Truncate(0); err != nil {
				f.Close()
				return nil, fmt.Errorf("cannot open %s: %w", path, err)
			}
		}
		out.f = f
		return out, nil
	case kindRegular:
		out.keep = !c.force && !c.replace
		if fileOwner(st) == uint32(os.Geteuid()) {
			// The user's own file: its mode is theirs to keep. Another
			// user's file does not lend its mode (it could make the new
			// file readable to that user).
			out.perm = st.Mode().Perm()
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("cannot create %s: %w", path, err)
	}
	if err := f.Chmod(out.perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("cannot create %s: %w", path, err)
	}
	out.f, out.tmp = f, f.Name()
	if c.direct {
		out.d = newDirect(f)
	}
	return out, nil
}

// sameFile checks that f is the file st described.
func sameFile(f *os.File, st fs.FileInfo) error {
	fst, err := f.Stat()
	if err != nil {
		return err
	}
	if !os.SameFile(fst, st) {
		return errors.New("the file changed while it was opened; not written")
	}
	return nil
}

// Write writes to the output.
func (o *File) Write(p []byte) (int, error) {
	if o.d != nil {
		return o.d.Write(p)
	}
	return o.f.Write(p)
}

// Name is the path the output was created with.
func (o *File) Name() string { return o.path }

// Kept is the name the file that was at the output's path was kept as, once
// committed ("" when there was none).
func (o *File) Kept() string { return o.kept }

// Commit completes the output: the temporary file is synced, an existing
// regular file moved to NAME.old (unless Force), and the temporary file
// renamed to NAME without replacing anything (or the special file closed).
// On error the temporary file is removed.
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
	var err error
	if o.d != nil {
		err = o.d.finish()
	}
	if err == nil && !o.cfg.noSync {
		err = syncFile(o.f)
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
			err = nil // file systems without fsync
		}
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = o.place()
	}
	if err != nil {
		os.Remove(o.tmp)
		return fmt.Errorf("cannot write %s: %w", o.path, err)
	}
	return nil
}

// place puts the complete temporary file at the output's name.
func (o *File) place() error {
	if !o.keep {
		if o.cfg.force || o.cfg.replace {
			// Replaces what is there, as asked: the entry itself (a link
			// made meanwhile is replaced, not followed).
			return os.Rename(o.tmp, o.path)
		}
		return renameNoReplace(o.tmp, o.path)
	}
	old := o.path + ".old"
	st, err := os.Lstat(o.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// gone meanwhile: nothing to keep
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is no longer a regular file; not replaced", o.path)
	default:
		if err := os.Rename(o.path, old); err != nil {
			return fmt.Errorf("keep the existing file as %s: %w (pass --force to replace it)", old, err)
		}
		o.kept = old
	}
	if err := renameNoReplace(o.tmp, o.path); err != nil {
		return err
	}
	if o.kept != "" && o.cfg.onKeep != nil {
		o.cfg.onKeep(o.path, o.kept)
	}
	return nil
}

// renameNoReplace renames from to to, failing when to exists: with
// RENAME_NOREPLACE, or where the file system lacks it, with a hard link
// (which fails on an existing name too) and an unlink.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if err = os.Link(from, to); err == nil {
			os.Remove(from)
		}
	}
	if errors.Is(err, fs.ErrExist) || errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%s was created by someone else while cuprof wrote it; not replaced", to)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
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
	if o.d != nil {
		o.d.release()
	}
	o.f.Close()
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
}

// WriteFile writes path with write (buffered), through Create and Commit.
func WriteFile(path string, write func(io.Writer) error, opts ...Option) error {
	f, err := Create(path, opts...)
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

// Rescue writes a result that could not be written where asked and must
// not be lost to a private file named like path in a new private
// directory elsewhere: the temporary directory, else the home directory,
// else the working directory. write fills the file and commits it; where
// creating or writing fails (a full disk lets the file be made and fails
// its writes), the file and its directory are removed and the next place
// is tried. It returns the file's name.
func Rescue(path string, write func(*File) error) (string, error) {
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
	name := filepath.Base(path)
	if name == "." || name == string(filepath.Separator) || name == "" {
		name = "recording.cuprof"
	}
	var errs []error
	for _, base := range dirs {
		d, err := os.MkdirTemp(base, "cuprof-rescue-")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f, err := Create(filepath.Join(d, name))
		if err == nil {
			if err = write(f); err != nil {
				f.Abort()
				os.Remove(f.Name())
			}
		}
		if err != nil {
			os.Remove(d)
			errs = append(errs, fmt.Errorf("%s: %w", base, err))
			continue
		}
		return f.Name(), nil
	}
	return "", fmt.Errorf("no place to rescue %s: %w", path, errors.Join(errs...))
}

// NextFree moves an existing regular file at path to path.old now (an
// older .old replaced) and returns that name ("" when there was none). It
// is for record, which says so before the program runs; every other output
// is kept the same way when it is committed.
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
		return "", fmt.Errorf("keep the existing %s as %s: %w (pass --force to replace it)", path, old, err)
	}
	return old, nil
}
