package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cuprof/cuprof/cudawrap/shim"
	"github.com/cuprof/cuprof/trace"
)

// Recover writes to out the trace held by the spill files in dir, the
// private directory (.cuprof-spill-*) a recording leaves beside its output
// when cuprof itself is killed before it writes the trace, and by the
// rings the recording left. Each spill file reads up to its last whole
// batch: what the recorder drained. A ring file the killed recorder left
// gives what was committed after that, from the read marks the recorder
// left in it, with its threads' drop counters, exit status and mappings:
// the ring a spill file names, and every ring in the recording's working
// directory (which dir's recording note names; it lives until the next
// recording or until recovered) and disk fallback, also those the recorder
// never polled, which no spill file names. Times are put on
// CLOCK_MONOTONIC with the rings' clock anchors and, under the boot that
// recorded, a calibrator run now (the TSC still counts: an exact anchor long
// after the others); otherwise the TSC rate comes from the last event and
// the file's modification time (the last drain), good to a poll interval
// over the run's length. The rings read are removed once the trace is
// written; the spill files are left. Notices go to stderr.
func Recover(dir, out string, stderr io.Writer) (*Result, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.spill"))
	if err != nil {
		return nil, fmt.Errorf("recover %s: %w", dir, err)
	}
	sort.Strings(names)
	ringDirs, noteBoot := recordingRings(dir, stderr)
	for _, rd := range ringDirs {
		if recorderHolds(rd) {
			return nil, fmt.Errorf("the recording of %s is still running (its cuprof holds the lock in %s): what recover would write is partial; stop that cuprof (interrupt it: it writes the whole trace), or recover once it was killed", dir, rd)
		}
	}
	if len(names) == 0 && !anyRing(ringDirs) {
		return nil, fmt.Errorf("no spill files or rings in %s: pass the .cuprof-spill-* directory a killed cuprof record left beside its output", dir)
	}
	if err := checkRecoverOutput(dir, names, out); err != nil {
		return nil, err
	}
	d := &drainer{st: trace.NewStringTable(), codes: newCodeTable(), maps: map[*ring]string{}, cfg: &config{stderr: stderr}}
	d.sp.st = d.st
	defer d.closeRings()
	var anchors []clockPair
	var meta trace.Meta
	boot := noteBoot
	var rest []*ring // the rings left beside the spills, their remainders spilled to tmp
	tmp := ""
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	// take reads what ring rr committed after its read marks.
	take := func(rr *ring) error {
		if tmp == "" {
			var err error
			if tmp, err = os.MkdirTemp("", "cuprof-recover-"); err != nil {
				rr.close()
				return err
			}
		}
		rr.codeTab = d.codes
		if err := createSpill(tmp, rr, len(rest)); err != nil {
			rr.close()
			return err
		}
		if _, err := rr.poll(d.st, &d.sp); err != nil {
			rr.close()
			return fmt.Errorf("read %s: %w", rr.path, err)
		}
		d.maps[rr] = readFileString(rr.path + ".maps")
		d.rings = append(d.rings, rr)
		rest = append(rest, rr)
		return nil
	}
	spilled := map[ringID]bool{} // the rings the spill files are of
	for _, name := range names {
		r, a, h, err := openSpill(name)
		if err != nil {
			fmt.Fprintf(stderr, "cuprof: warning: skipping %s: %v\n", name, err)
			continue
		}
		boot = h.boot
		spilled[ringID{h.pid, h.mono0, h.tick0}] = true
		d.rings = append(d.rings, r)
		anchors = append(anchors, a...)
		if meta.WallStart == 0 || int64(h.wall0) < meta.WallStart {
			meta.WallStart, meta.MonoStart = int64(h.wall0), int64(h.mono0)
		}
		rr, err := leftRing(h)
		if err != nil {
			fmt.Fprintf(stderr, "cuprof: warning: the ring of %s: %v; what it held after the last drain is lost\n", name, err)
		}
		if rr == nil {
			continue
		}
		// The last poll's records may be in the spill file although the
		// ring never got their marks: its marks file has them.
		marks, err := readPollMarks(name, len(rr.cursors))
		if err != nil {
			fmt.Fprintf(stderr, "cuprof: warning: the marks of %s: %v; its last poll's records may be read twice\n", name, err)
		}
		rr.applyPollMarks(marks)
		if err := take(rr); err != nil {
			return nil, err
		}
	}
	// The rings the recorder never polled: no spill file names them.
	for _, path := range ringFiles(ringDirs) {
		rr, err := unpolledRing(path, spilled)
		if err != nil {
			fmt.Fprintf(stderr, "cuprof: warning: skipping the ring %s: %v\n", path, err)
			continue
		}
		if rr == nil {
			continue
		}
		anchors = append(anchors, clockPair{kind: int(rr.clock), tick: rr.tsc0, mono: rr.mono0})
		if meta.WallStart == 0 || int64(rr.wall0) < meta.WallStart {
			meta.WallStart, meta.MonoStart = int64(rr.wall0), int64(rr.mono0)
		}
		if err := take(rr); err != nil {
			return nil, err
		}
	}
	if len(d.rings) == 0 {
		return nil, fmt.Errorf("no readable spill file or ring in %s", dir)
	}
	sort.Slice(anchors, func(i, j int) bool { return anchors[i].mono < anchors[j].mono })
	start, end := anchors[0], anchors[len(anchors)-1]
	if start.kind == clockTSC {
		// Under the boot that recorded, the TSC still counts: the
		// calibrator, run now, gives an exact anchor long after the rest.
		if now, err := calibrateNow(boot); err == nil {
			end = now
		} else {
			fmt.Fprintf(stderr, "cuprof: note: the TSC rate comes from the spill files' anchors and modification times (%v)\n", err)
		}
	}
	clk := clockFrom(start, end)
	if clk.tsc && end.mono < start.mono+10_000_000 {
		fmt.Fprintln(stderr, "cuprof: warning: the spill files span less than 10 ms: the TSC rate is a guess, durations may be off")
	}
	meta.Capture = "shim (recovered)"
	meta.Host, _ = os.Hostname()
	res := &Result{}
	if err := writeTrace(d, out, meta, clk, 0, res); err != nil {
		return nil, err
	}
	for _, rr := range rest {
		removeLeftRing(rr.path, dir)
	}
	return res, nil
}

// checkRecoverOutput refuses an output that is one of the spill files
// read, or would be taken for one (a .spill file in dir).
func checkRecoverOutput(dir string, names []string, out string) error {
	absDir, err1 := filepath.Abs(dir)
	absOut, err2 := filepath.Abs(out)
	if err1 == nil && err2 == nil && filepath.Dir(absOut) == absDir && strings.HasSuffix(absOut, ".spill") {
		return fmt.Errorf("recover: -o %s is a spill file of %s, which recover reads: write the trace elsewhere", out, dir)
	}
	st, err := os.Stat(out)
	if err != nil {
		return nil
	}
	for _, n := range names {
		if in, err := os.Stat(n); err == nil && os.SameFile(in, st) {
			return fmt.Errorf("recover: -o %s is %s, which recover reads: write the trace elsewhere", out, n)
		}
	}
	return nil
}

// ringID is what tells a ring from another of the same name: its process
// and clock anchor, which its spill file's header repeats.
type ringID struct {
	pid          uint32
	mono0, tick0 uint64
}

// recordingRings returns the ring directories of the recording whose
// spill directory is dir: its working directory's rings (when the spill
// directory's recording note names a private directory of the user's that
// names dir back) and its disk fallback inside dir; and the boot the
// recording ran under.
func recordingRings(dir string, stderr io.Writer) (dirs []string, boot string) {
	dirs = []string{filepath.Join(dir, "rings")}
	b, err := os.ReadFile(filepath.Join(dir, recordingNote))
	if errors.Is(err, fs.ErrNotExist) {
		return dirs, ""
	}
	work, boot, err := parseRecordingNote(b)
	if err != nil {
		fmt.Fprintf(stderr, "cuprof: warning: %s: %v; rings the recorder never read are not looked for\n", dir, err)
		return dirs, ""
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dirs, boot
	}
	back := strings.TrimSpace(readFileString(filepath.Join(work, spillNote)))
	if _, err := os.Lstat(work); errors.Is(err, fs.ErrNotExist) {
		return dirs, boot // removed: by the next recording, or a reboot
	}
	for _, p := range []string{work, filepath.Join(work, "rings")} {
		if err := privateDir(p); err != nil {
			fmt.Fprintf(stderr, "cuprof: warning: %v: its rings are not read\n", err)
			return dirs, boot
		}
	}
	if back != abs {
		fmt.Fprintf(stderr, "cuprof: warning: %s is another recording's (it names %q): its rings are not read\n", work, back)
		return dirs, boot
	}
	return append([]string{filepath.Join(work, "rings")}, dirs...), boot
}

// ringFiles lists the ring files of dirs.
func ringFiles(dirs []string) []string {
	var paths []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, "*.ring"))
		sort.Strings(m)
		paths = append(paths, m...)
	}
	return paths
}

func anyRing(dirs []string) bool { return len(ringFiles(dirs)) > 0 }

// unpolledRing opens the ring file at path, read from where its read
// marks say (from its start when it was never polled); nil when a spill
// file is of it, or it is not (yet) a ring.
func unpolledRing(path string, spilled map[ringID]bool) (*ring, error) {
	r, err := openRing(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotReady) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if spilled[ringID{r.pid, r.mono0, r.tsc0}] {
		r.close()
		return nil, nil
	}
	if err := r.resume(); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// leftRing opens the ring file a spill file names when it is still there
// and is that spill's ring (the same process and clock anchor), its read
// positions set from the marks its recorder left; nil when it is gone.
func leftRing(h spillHeader) (*ring, error) {
	if h.ring == "" {
		return nil, nil
	}
	r, err := openRing(h.ring)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotReady) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.pid != h.pid || r.mono0 != h.mono0 || r.tsc0 != h.tick0 {
		r.close()
		return nil, nil // another ring of the same name
	}
	if err := r.resume(); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// removeLeftRing removes a recovered ring and its mappings, and the
// working directory it lies in when that belongs to the recording of
// spillDir (its spill note names it).
func removeLeftRing(path, spillDir string) {
	os.Remove(path)
	os.Remove(path + ".maps")
	work := filepath.Dir(filepath.Dir(path))
	note := strings.TrimSpace(readFileString(filepath.Join(work, spillNote)))
	if a, err := filepath.Abs(spillDir); err == nil && note == a {
		os.RemoveAll(work)
	}
}

func readFileString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// openSpill opens one spill file as a ring whose records are all spilled,
// and returns its header and the clock anchors it gives: its ring's, and
// its last event's tick at the file's modification time.
func openSpill(path string) (*ring, []clockPair, spillHeader, error) {
	var h spillHeader
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, h, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, h, err
	}
	head := make([]byte, min(st.Size(), maxSpillHeader))
	if _, err := io.ReadFull(f, head); err != nil {
		f.Close()
		return nil, nil, h, err
	}
	h, off, err := parseSpillHeader(head)
	if err != nil {
		f.Close()
		return nil, nil, h, err
	}
	size := st.Size() - int64(off)
	tf, err := trace.NewFile(io.NewSectionReader(f, int64(off), size), size)
	if err != nil {
		f.Close()
		return nil, nil, h, err
	}
	t := tf.Tables()
	r := &ring{spill: f, spillOff: int64(off), pid: h.pid, clock: h.clock, tsc0: h.tick0, mono0: h.mono0, wall0: h.wall0,
		threads: map[uint32]string{}, drops: map[uint32]uint64{}}
	for _, p := range t.Processes {
		if p.PID == r.pid {
			r.ppid, r.exe, r.cmdline, r.env = p.PPID, p.Exe, p.Cmdline, p.Env
		}
	}
	for _, th := range t.Threads {
		r.threads[th.TID] = th.Name
	}
	anchors := []clockPair{{kind: int(r.clock), tick: r.tsc0, mono: r.mono0}}
	// The last event's end on the ring clock happened just before the
	// last drain wrote the file.
	var last uint64
	for e, err := range tf.Events() {
		if err != nil {
			break
		}
		last = max(last, uint64(e.End))
	}
	if r.clock == clockTSC && last > r.tsc0 && r.wall0 > r.mono0 {
		monoAt := uint64(st.ModTime().UnixNano()) - (r.wall0 - r.mono0)
		if monoAt > r.mono0 {
			anchors = append(anchors, clockPair{kind: clockTSC, tick: last, mono: monoAt})
		}
	}
	// r.path stays "": what lies beside the ring is read through the ring
	// itself (leftRing), when it is still there.
	return r, anchors, h, nil
}

// calibrateNow runs the clock calibrator when this is the boot that wrote
// the spill files, for one instant on the TSC and CLOCK_MONOTONIC.
func calibrateNow(boot string) (clockPair, error) {
	if boot == "" || boot != bootID() {
		return clockPair{}, errors.New("recorded under another boot of the machine")
	}
	ctx := context.Background()
	shimPath, err := shim.Library(ctx)
	if err != nil {
		return clockPair{}, err
	}
	calib, err := shim.Calibrator(ctx)
	if err != nil {
		return clockPair{}, err
	}
	dir, err := os.MkdirTemp("", "cuprof-recover-")
	if err != nil {
		return clockPair{}, err
	}
	defer os.RemoveAll(dir)
	p, err := runCalibrator(ctx, calib, &config{shim: shimPath}, dir, 0)
	if err != nil {
		return clockPair{}, err
	}
	if p.kind != clockTSC {
		return clockPair{}, errors.New("the calibrator reads no TSC")
	}
	return p, nil
}
