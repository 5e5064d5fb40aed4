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

	"github.com/cuprof/cuprof/internal/cbuild"
	"github.com/cuprof/cuprof/trace"
)

// Recover writes to out the trace held by the spill files in dir, the
// private directory (.cuprof-spill-*) a recording leaves beside its output
// when cuprof itself is killed before it writes the trace. Each spill file
// reads up to its last whole batch: what the recorder drained. A ring
// file the killed recorder left (its working directory stays until the next
// recording or until recovered) gives what was committed after that, from
// the read marks the recorder left in it, with its threads' drop counters,
// exit status and mappings. Times are put on CLOCK_MONOTONIC with the
// rings' clock anchors kept in the spill files and, under the boot that
// recorded, a calibrator run now (the TSC still counts: an exact anchor long
// after the others); otherwise the TSC rate comes from the last event and
// the file's modification time (the last drain), good to a poll interval
// over the run's length. The rings read are removed once the trace is
// written; the spill files are left. Notices go to stderr.
func Recover(dir, out string, stderr io.Writer) (*Result, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.spill"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("no spill files in %s: pass the .cuprof-spill-* directory a killed cuprof record left beside its output", dir)
	}
	sort.Strings(names)
	if err := checkRecoverOutput(dir, names, out); err != nil {
		return nil, err
	}
	d := &drainer{st: trace.NewStringTable(), codes: newCodeTable(), maps: map[*ring]string{}, cfg: &config{stderr: stderr}}
	d.sp.st = d.st
	defer d.closeRings()
	var anchors []clockPair
	var meta trace.Meta
	boot := ""
	var rest []*ring // the rings left beside the spills, their remainders spilled to tmp
	tmp := ""
	defer func() {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}()
	for _, name := range names {
		r, a, h, err := openSpill(name)
		if err != nil {
			fmt.Fprintf(stderr, "cuprof: warning: skipping %s: %v\n", name, err)
			continue
		}
		boot = h.boot
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
		if tmp == "" {
			if tmp, err = os.MkdirTemp("", "cuprof-recover-"); err != nil {
				rr.close()
				return nil, err
			}
		}
		rr.codeTab = d.codes
		if err := createSpill(tmp, rr, len(rest)); err != nil {
			rr.close()
			return nil, err
		}
		if _, err := rr.poll(d.st, &d.sp); err != nil {
			rr.close()
			return nil, fmt.Errorf("read %s: %w", rr.path, err)
		}
		d.maps[rr] = readFileString(rr.path + ".maps")
		d.rings = append(d.rings, rr)
		rest = append(rest, rr)
	}
	if len(d.rings) == 0 {
		return nil, fmt.Errorf("no readable spill file in %s", dir)
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
	shimPath, err := cbuild.Shim(ctx)
	if err != nil {
		return clockPair{}, err
	}
	calib, err := cbuild.Calibrator(ctx)
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
