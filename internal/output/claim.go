package output

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// claimTries bounds the numbered names Claim tries after the one asked for.
const claimTries = 100000

// Claim takes path for an output that is written later, by creating it as
// an empty private file (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600): of
// recorders started at once into one directory (the ranks of a job), each
// gets a name of its own, and a name that exists, another rank's trace or
// anything else, is never replaced. When path exists, NAME-1.EXT, NAME-2.EXT
// ... are tried in turn; Claim returns the name it took. The file is
// written later with the Replace option (renamed over: the empty file is
// this process's own), and the caller removes it when the recording fails
// (Unclaim).
func Claim(path string) (string, error) {
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext)
	for i := 0; i <= claimTries; i++ {
		name := path
		if i > 0 {
			name = base + "-" + strconv.Itoa(i) + ext
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, Mode)
		if err == nil {
			return name, f.Close()
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("claim output %s: %w", name, err)
		}
	}
	return "", fmt.Errorf("claim output %s: it and %d numbered names after it exist; remove some or give another name", path, claimTries)
}

// Unclaim removes a name Claim took while it is still empty and a regular
// file (nothing was written to it), and says whether it did.
func Unclaim(name string) bool {
	st, err := os.Lstat(name)
	if err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		return false
	}
	return os.Remove(name) == nil
}
