package trace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileNeverReplacesSpecialFiles: WriteFile writes through
// /dev/null (as root a rename would have replaced it with a regular file)
// and through a symbolic link to its target.
func TestWriteFileNeverReplacesSpecialFiles(t *testing.T) {
	tr, err := ReadFile("testdata/small.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(os.DevNull, tr); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is now %v", os.DevNull, st.Mode())
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "link.cuprof")
	os.Symlink("real.cuprof", link)
	if err := WriteTextFile(link, tr); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced")
	}
	if back, err := ReadFile(filepath.Join(dir, "real.cuprof")); err != nil || len(back.Events) != len(tr.Events) {
		t.Errorf("target: %v", err)
	}
}
