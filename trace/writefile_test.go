package trace

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileNeverReplacesSpecialFiles: WriteFile writes through
// /dev/null (as root a rename would have replaced it with a regular file)
// and refuses a symbolic link, leaving it and its target as they were.
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
	if err := WriteTextFile(link, tr); err == nil {
		t.Fatal("wrote through a symbolic link")
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced")
	}
	if _, err := os.Lstat(filepath.Join(dir, "real.cuprof")); !os.IsNotExist(err) {
		t.Errorf("the link's target was created: %v", err)
	}
}
