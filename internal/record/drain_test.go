package record

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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

// TestPollPace: the drainer polls at its interval while a ring fills
// slowly, every 1 ms while one fills at 1 MiB of slots per interval or
// faster (the writer's chunks stay cache-warm; judged by the rate, so that
// it holds at 1 ms), and within 200 us when a writer waits for room or a
// poll read an eighth of the ring.
func TestPollPace(t *testing.T) {
	const ring = 64 << 20 / recSize
	const poll = 5 * time.Millisecond
	for _, c := range []struct {
		waiters uint32
		n       uint64
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 0, poll, 0},
		{0, warmSlots - 1, poll, 0},
		{0, warmSlots, poll, warmPoll},
		{0, warmSlots/5 + 1, warmPoll, warmPoll}, // the same rate, at the warm pace
		{0, warmSlots/5 - 1, warmPoll, 0},
		{0, warmSlots, 2 * poll, 0}, // a late poll: half the rate
		{0, ring/8 - 1, poll, warmPoll},
		{0, ring / 8, poll, busyPoll},
		{1, 0, poll, busyPoll},
		{0, warmSlots, 0, 0},
	} {
		if got := pollPace(c.waiters, c.n, ring, c.elapsed, poll); got != c.want {
			t.Errorf("pollPace(%d waiters, %d slots in %v) = %v, want %v", c.waiters, c.n, c.elapsed, got, c.want)
		}
	}
	// A small ring (CUPROF_BUFFER of 4 MiB): an eighth is less than 1 MiB.
	if got := pollPace(0, warmSlots/2, 4<<20/recSize, poll, poll); got != busyPoll {
		t.Errorf("pollPace on a 4 MiB ring, half a MiB read = %v, want %v", got, busyPoll)
	}
}
