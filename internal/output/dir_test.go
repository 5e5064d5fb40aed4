package output

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrivateDir: a new directory is made 0700; an existing one is taken
// only when it is the user's, not a link, writable by nobody else, in a
// directory others cannot write unless it is sticky.
func TestPrivateDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "fresh")
	got, err := PrivateDir(fresh)
	if err != nil || got != fresh {
		t.Fatalf("PrivateDir(%s) = %q, %v", fresh, got, err)
	}
	if st, _ := os.Lstat(fresh); st.Mode().Perm() != 0o700 {
		t.Errorf("made with mode %v, want 0700", st.Mode().Perm())
	}
	if _, err := PrivateDir(fresh); err != nil {
		t.Errorf("the user's own directory again: %v", err)
	}

	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	link := filepath.Join(base, "link")
	os.Symlink(fresh, link)
	plain := filepath.Join(base, "plain")
	os.Mkdir(plain, 0o700)
	os.Chmod(plain, 0o777) // writable by others, not sticky
	os.Mkdir(filepath.Join(plain, "in"), 0o700)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	for path, want := range map[string]string{
		open:                       "is writable by others (mode 0777)",
		link:                       "is a symbolic link",
		filepath.Join(plain, "in"): "which others can write and is not sticky",
		file:                       "is not a directory",
	} {
		if _, err := PrivateDir(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PrivateDir(%s): %v, want %q", path, err, want)
		}
	}
	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		os.Mkdir(theirs, 0o700)
		os.Chown(theirs, 65534, 65534)
		if _, err := PrivateDir(theirs); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("another user's directory: %v", err)
		}
	}
}
