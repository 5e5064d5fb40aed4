package record

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDrainSkipsVanishedRing: the shim removes a ring file it could not
// size or map, and the drainer may have listed it just before. Opening it
// then fails with ENOENT (a dangling link here); that is no error of the
// recording (it used to fail the whole recording), and the next ring is
// still read.
func TestDrainSkipsVanishedRing(t *testing.T) {
	dir, spill := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "7-0.ring")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "8-0.ring"), validRing(), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newDrainer([]string{dir}, spill, &config{}, clockPair{})
	defer d.closeRings()
	d.drain()
	if d.err != nil {
		t.Fatalf("drain: %v", d.err)
	}
	if len(d.rings) != 1 || d.rings[0].n != 1 {
		t.Errorf("rings read: %d, want the valid one with its record", len(d.rings))
	}
}
