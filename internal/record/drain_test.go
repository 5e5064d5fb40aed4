package record

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cuprof/cuprof/internal/hostid"
	"github.com/cuprof/cuprof/trace"
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

var updateWrite = flag.Bool("update", false, "rewrite testdata/write/*.golden from the current write")

// TestWriteGolden: the final pass writes, from fixed spill files (real
// recordings' spills: processes that fork and exec, two threads of 6,000
// calls each, which the pass writes in halves, and Python frames with their
// code entries) and fixed counts on their rings, the very bytes of the
// golden trace (written before the pass was split into its parts: the
// split changed no byte).
func TestWriteGolden(t *testing.T) {
	for _, name := range []string{"forkexec", "threads", "python"} {
		t.Run(name, func(t *testing.T) {
			spills, _ := filepath.Glob(filepath.Join("testdata", "write", name, "*.spill"))
			if len(spills) == 0 {
				t.Fatal("no spill files")
			}
			d := &drainer{st: trace.NewStringTable(), codes: newCodeTable(), maps: map[*ring]string{}, cfg: &config{}}
			defer d.closeRings()
			for i, s := range spills {
				r, _, _, err := openSpill(s)
				if err != nil {
					t.Fatal(err)
				}
				// Counts of every kind, as a ring's would be.
				for tid := range r.threads {
					r.drops[tid] = uint64(i + 1)
				}
				r.overflow, r.growDrops, r.stallDrops, r.nestedDrops = 1, 2, 3, uint64(4+i)
				r.pyCodeDrops, r.pyLostCode, r.exitKnown, r.exitCode, r.pyStatus = 5, 1, true, int32(i), "monitoring"
				r.waits, r.waitNs, r.pyEvent, r.driver = 7, 8000, 90000, 13000
				d.rings = append(d.rings, r)
			}
			var out bytes.Buffer
			// The host of the golden, not the machine's: the bytes are
			// the same wherever the test runs.
			defer func(h func() hostid.Host) { thisHost = h }(thisHost)
			thisHost = func() hostid.Host {
				return hostid.Host{Name: "golden", BootID: "boot-id", MachineID: "machine-id", NS: "uts:1 pid:2 net:3"}
			}
			clk := clock{tsc: true, hz: 2.5e9, tick0: 1000, mono0: 5_000_000, source: "tsc"}
			meta := trace.Meta{Capture: "shim", CuprofVersion: "golden", Command: []string{name}, MonoStart: 5_000_000, WallStart: 1_700_000_000_000_000_000}
			res := &Result{ExitCode: 3}
			if err := d.write(&out, meta, clk, int(d.rings[0].pid), res); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "write", name+".golden")
			if *updateWrite {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("write made %d bytes that differ from %s (%d bytes); run with -update only when the format is meant to change", out.Len(), golden, len(want))
			}
			tr, err := trace.Read(bytes.NewReader(out.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if res.Events != len(tr.Events) || res.Events == 0 || res.Drops != tr.TotalDrops() || res.Drops == 0 {
				t.Errorf("result %d events, %d drops; the trace %d, %d", res.Events, res.Drops, len(tr.Events), tr.TotalDrops())
			}
		})
	}
}

// A recorder's lock is never seen unheld: another cuprof looking for what
// killed recorders left (leftovers) removes a working directory whose lock
// it can take, so a lock that existed a moment before its flock made a
// recording being set up vanish from under it.
func TestRecorderLockNeverSeenUnheld(t *testing.T) {
	base := t.TempDir()
	const n = 300
	done := make(chan struct{})
	var seen, unheld atomic.Int64
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-done:
				return
			default:
			}
			for i := 0; i < n; i++ {
				dir := filepath.Join(base, strconv.Itoa(i))
				if _, err := os.Lstat(filepath.Join(dir, lockName)); err != nil {
					continue
				}
				seen.Add(1)
				if !recorderLives(dir) {
					unheld.Add(1)
				}
			}
		}
	}()
	var locks []*os.File
	for i := 0; i < n; i++ {
		dir := filepath.Join(base, strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := holdRecorderLock(dir)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, f)
	}
	// Let the watcher go over every lock at least once before they go.
	for deadline := time.Now().Add(time.Minute); seen.Load() < 2*n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(done)
	<-watched
	for _, f := range locks {
		f.Close()
	}
	if seen.Load() == 0 {
		t.Fatal("the watcher never saw a lock: the test tests nothing")
	}
	if unheld.Load() != 0 {
		t.Errorf("a lock was seen unheld %d times of %d", unheld.Load(), seen.Load())
	}
	ents, _ := os.ReadDir(filepath.Join(base, "0"))
	if len(ents) != 1 || ents[0].Name() != lockName {
		t.Errorf("the ring directory holds %v; want the lock alone", ents)
	}
	if _, err := holdRecorderLock(filepath.Join(base, "0")); err == nil {
		t.Error("a second lock in one ring directory was made")
	}
}

// TestInPlaceCorrectsTheCalibration checks the arithmetic of the in-place
// correction: the rings' mean cold shadow call less their mean warm one,
// less the calibrator's same difference, is added to AddedNs; too few
// shadows of either kind, or no calibrator's measurement, leave the
// calibration as it was.
func TestInPlaceCorrectsTheCalibration(t *testing.T) {
	clk := clock{tsc: true, hz: 2e9} // 2 ticks a ns
	ringsOf := func(n ...uint64) []*ring {
		var rs []*ring
		for _, c := range n {
			// cold 30 ns each, warm 20
			rs = append(rs, &ring{inPlaceCold: c * 60, inPlaceColdN: c, inPlaceWarm: c * 40, inPlaceWarmN: c})
		}
		return rs
	}
	calib := trace.Overhead{InsideNs: 15, AddedNs: 40}
	for _, c := range []struct {
		name    string
		rings   []*ring
		calibOK bool
		want    trace.Overhead
	}{
		{"measured", ringsOf(100, 300), true, trace.Overhead{InsideNs: 15, AddedNs: 48, InPlaceNs: 8, InPlaceCalls: 800}},
		{"too few", ringsOf(10, 20), true, calib},
		{"no calibrator's", ringsOf(100, 300), false, calib},
	} {
		d := &drainer{rings: c.rings, calibShadowNs: 2, calibShadowOK: c.calibOK}
		if got := d.inPlace(calib, clk); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	// A calibrator's difference above the program's: AddedNs goes down,
	// never under InsideNs.
	d := &drainer{rings: ringsOf(1000), calibShadowNs: 40, calibShadowOK: true}
	if got := d.inPlace(calib, clk); got.InPlaceNs != -30 || got.AddedNs != 15 {
		t.Errorf("calibrator's above: %+v, want InPlaceNs -30 and AddedNs clamped to InsideNs 15", got)
	}
}
