package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cuprof/cuprof/internal/cbuild"
)

// The working directory of a recording holds the rings (rings/, with the
// recorder's lock), the calibrator's ring and the spill directory's path
// (spill). It lies in the user's own directory of the ring base
// (cbuild.UserDir: /dev/shm/cuprof-UID), so that once it is removed nobody
// else can make it again for a program that outlives cuprof and still
// names it in CUPROF_DIR. A recorder killed before it removes the
// directory leaves it behind, rings and all: the next recording reports it
// when its spill directory still exists (cuprof recover reads the rings
// beside the spill files) and removes it otherwise.

// spillNote is the file of a working directory naming its spill directory.
const spillNote = "spill"

// recordingNote is the file of a spill directory naming the recording's
// working directory and the boot it ran under, so that recover reads the
// rings the recorder never polled (no spill file names them).
const recordingNote = "recording"

// workDir makes the recording's working directory, after reporting (or
// removing) what killed recorders left in the same place; notes (cuprof's
// own lines: io.Discard under -q) gets what it says.
func workDir(notes io.Writer) (string, error) {
	parent, err := cbuild.UserDir(ringBase())
	if err != nil {
		fmt.Fprintf(notes, "cuprof: warning: %v; the rings go to a directory of their own there instead\n", err)
		return mkdirTempAbs(ringBase(), "cuprof-record-")
	}
	leftovers(parent, notes)
	return os.MkdirTemp(parent, "record-")
}

// noteSpill writes the spill directory's path into the working directory,
// and the working directory's (and the boot's) into the spill directory:
// each names the other.
func noteSpill(work, spillDir string) error {
	if err := os.WriteFile(filepath.Join(work, spillNote), []byte(spillDir+"\n"), 0o600); err != nil {
		return err
	}
	note := appendRecordingNote(nil, work, bootID())
	f, err := os.OpenFile(filepath.Join(spillDir, recordingNote), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(note)
	return errors.Join(err, f.Close())
}

// appendRecordingNote appends the recording note's text: "work PATH" and
// "boot ID", one a line.
func appendRecordingNote(b []byte, work, boot string) []byte {
	b = append(b, "work "+work+"\n"...)
	return append(b, "boot "+boot+"\n"...)
}

// parseRecordingNote reads a recording note: an absolute working
// directory, and the boot id (may be empty).
func parseRecordingNote(b []byte) (work, boot string, err error) {
	if len(b) > 8192 {
		return "", "", errors.New("recording note: longer than 8 KiB")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "work":
			work = v
		case "boot":
			boot = v
		default:
			return "", "", fmt.Errorf("recording note: unknown line %q", line)
		}
	}
	if work == "" || !filepath.IsAbs(work) || filepath.Clean(work) != work {
		return "", "", fmt.Errorf("recording note: working directory %q is not a clean absolute path", work)
	}
	return work, boot, nil
}

// privateDir checks that path is a directory of the user's that nobody
// else can open or write (not a link, mode 0700 or less).
func privateDir(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", path)
	case !ok || int(sys.Uid) != os.Geteuid():
		return fmt.Errorf("%s is not the user's", path)
	case st.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s is open to others (mode %#o)", path, st.Mode().Perm())
	}
	return nil
}

// leftovers looks at the working directories in parent whose recorder is
// gone (nobody holds their lock): those whose spill directory is gone too
// are removed, the others reported once each.
func leftovers(parent string, stderr io.Writer) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "record-") {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		if recorderLives(filepath.Join(dir, "rings")) {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, spillNote))
		spill := strings.TrimSpace(string(b))
		if st, err := os.Stat(spill); spill == "" || err != nil || !st.IsDir() {
			os.RemoveAll(dir)
			continue
		}
		fmt.Fprintf(stderr, "cuprof: note: %s holds the rings of a recording whose cuprof was killed: `cuprof recover %s -o FILE` gets its events back and removes it\n",
			dir, spill)
	}
}

// recorderLives reports whether a recorder holds the lock of the ring
// directory dir (a directory without a lock file is being set up by
// another cuprof, or not a recording's: it counts as live, left alone).
func recorderLives(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return true
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// recorderHolds reports whether a live recorder holds the lock of the ring
// directory dir: its lock file is there and cannot be locked exclusively.
// Unlike recorderLives, a directory without a lock counts as nobody's.
func recorderHolds(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
