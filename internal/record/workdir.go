package record

import (
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

// workDir makes the recording's working directory, after reporting (or
// removing) what killed recorders left in the same place.
func workDir(stderr io.Writer) (string, error) {
	parent, err := cbuild.UserDir(ringBase())
	if err != nil {
		fmt.Fprintf(stderr, "cuprof: warning: %v; the rings go to a directory of their own there instead\n", err)
		return mkdirTempAbs(ringBase(), "cuprof-record-")
	}
	leftovers(parent, stderr)
	return os.MkdirTemp(parent, "record-")
}

// noteSpill writes the spill directory's path into the working directory.
func noteSpill(work, spillDir string) error {
	return os.WriteFile(filepath.Join(work, spillNote), []byte(spillDir+"\n"), 0o600)
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
