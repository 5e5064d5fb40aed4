package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/internal/cbuild"
	"github.com/cuprof/cuprof/trace"
)

// Recover writes to out the trace held by the spill files in dir, the
// private directory (.cuprof-spill-*) a recording leaves beside its output
// when cuprof itself is killed before it writes the trace. Each spill file
// reads up to its last whole batch: what the recorder drained, up to one
// poll interval before it died. Times are put on CLOCK_MONOTONIC with the
// rings' clock anchors kept in the spill files and, under the boot that
// recorded, a calibrator run now (the TSC still counts: an exact anchor long
// after the others); otherwise the TSC rate comes from the last event and
// the file's modification time (the last drain), good to a poll interval
// over the run's length. Thread names
// are kept; the rings' drop counters and exit statuses died with the
// recorder. Notices go to stderr.
func Recover(dir, out string, stderr io.Writer) (*Result, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.spill"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("no spill files in %s: pass the .cuprof-spill-* directory a killed cuprof record left beside its output", dir)
	}
	sort.Strings(names)
	d := &drainer{st: trace.NewStringTable(), maps: map[*ring]string{}, cfg: &config{stderr: stderr}}
	defer d.closeRings()
	var anchors []clockPair
	var meta trace.Meta
	boot := ""
	for _, name := range names {
		r, a, m, err := openSpill(name, &boot)
		if err != nil {
			fmt.Fprintf(stderr, "cuprof: warning: skipping %s: %v\n", name, err)
			continue
		}
		d.rings = append(d.rings, r)
		anchors = append(anchors, a...)
		if meta.WallStart == 0 || m.WallStart < meta.WallStart {
			meta.WallStart, meta.MonoStart = m.WallStart, m.MonoStart
		}
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
	return res, nil
}

// openSpill opens one spill file as a ring whose records are all spilled,
// and returns the clock anchors it gives: its ring's, and its last event's
// tick at the file's modification time.
func openSpill(path string, boot *string) (*ring, []clockPair, trace.Meta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, trace.Meta{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, trace.Meta{}, err
	}
	tf, err := trace.NewFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, trace.Meta{}, err
	}
	t := tf.Tables()
	kv := map[string]string{}
	if len(t.Meta.Command) == 0 || t.Meta.Command[0] != "cuprof-spill" {
		f.Close()
		return nil, nil, trace.Meta{}, fmt.Errorf("not a cuprof spill file")
	}
	for _, a := range t.Meta.Command[1:] {
		k, v, _ := strings.Cut(a, "=")
		kv[k] = v
	}
	num := func(k string) uint64 { n, _ := strconv.ParseUint(kv[k], 10, 64); return n }
	*boot = kv["boot"]
	r := &ring{path: kv["ring"], spill: f, pid: uint32(num("pid")), clock: uint32(num("clock")),
		tsc0: num("tick0"), mono0: num("mono0"), wall0: num("wall0"),
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
	meta := trace.Meta{WallStart: int64(r.wall0), MonoStart: int64(r.mono0)}
	r.path = "" // nothing beside the dead ring is read: no .maps, no symbols
	return r, anchors, meta, nil
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
