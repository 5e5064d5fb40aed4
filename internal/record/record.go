// Package record runs a program under cuprof's interposer shim and turns the
// ring files its processes write into a trace file.
//
// Run sets up a private working directory and the environment (LD_PRELOAD,
// NVTX_INJECTION64_PATH, CUPROF_DIR, and LD_LIBRARY_PATH for the simulated
// driver), starts the program with signals forwarded, drains every process's
// ring while it runs (children and exec'd programs write their own rings),
// calibrates the clock and the shim's own cost, symbolizes call sites and
// writes the trace. Memory does not grow with the number of events: what is
// drained goes to spill files beside the output until the end (spill.go).
package record

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cuprof/cuprof/cudawrap/shim"
	"github.com/cuprof/cuprof/cudawrap/sim"
	"github.com/cuprof/cuprof/internal/cbuild"
	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/trace"
)

// ErrNoCommand is returned when Run is given no program to run.
var ErrNoCommand = errors.New("missing command: use cuprof record [flags] -- CMD ARGS")

// ErrNoOutput is returned when Run is given no trace file to write.
var ErrNoOutput = errors.New("missing output file: pass record.WithOutput(PATH)")

// Observer receives events while the recording runs, so that an exporter can
// stream them (the OTLP exporter plugs in here).
type Observer interface {
	// Observe is called from the recorder's draining goroutine, never
	// concurrently, with the events just read from one process. Times are
	// on the trace clock (CLOCK_MONOTONIC ns; while the program runs the
	// TSC rate is provisional, the final trace is calibrated over the whole
	// run), Name and Domain index strs, the recording's string table so far.
	// events and strs must not be retained or modified after Observe returns.
	Observe(pid uint32, events []trace.Event, strs []string)
}

// CodeObserver is implemented by an Observer that wants the code entries
// Python frames name (their Event.Code indexes code). ObserveCode is called
// before Observe whenever the table grew, from the same goroutine; code and
// strs must not be retained or modified after it returns.
type CodeObserver interface {
	ObserveCode(code []trace.Code, strs []string)
}

// Drop reasons of Python frames (trace.Drop.Reason).
const (
	DropPythonBuffer = "python frames: buffer full"
	DropPythonCode   = "python frames: no room for their code's name"
)

// Drop reasons of events the buffer did not lose (trace.Drop.Reason).
const (
	// DropRingHeld: every chunk of the ring was held by a thread and the
	// ring could not grow (no room on its file system, RLIMIT_FSIZE).
	DropRingHeld = "ring could not grow (every chunk held by a thread)"
	// DropRecorderGone: a writer waiting for room found the recorder gone
	// (killed), and the event was dropped.
	DropRecorderGone = "recorder gone (a wait for room gave up)"
	// DropNestedCall: a driver call made inside a wrapped call of the same
	// thread (a signal handler's), which went to the driver unrecorded.
	DropNestedCall = "driver call inside a wrapped call (signal handler)"
	// DropChildNoRing: an event of a fork child that could make no ring of
	// its own (after a privilege drop, the ring directory is another
	// user's), counted in its parent's ring until it exec'd or exited.
	DropChildNoRing = "a child process could make no ring (a changed user: setuid, setpriv)"
)

// Reasons for names lost or cut (trace.Drop.Reason): the events that named
// them are in the trace, so these count names, not events.
const (
	// DropNameNoRoom: an NVTX, cuprof_intern or span name (or a Python
	// code's) found the ring's 1 MiB string area full; its events are
	// recorded without a name.
	DropNameNoRoom = "names lost: the ring's string area was full (their events are kept, unnamed)"
	// DropNameCut: a name longer than 65,535 bytes (an NVTX wide string:
	// 1 KiB) was cut to its first bytes.
	DropNameCut = "names cut to their first 65,535 bytes (their events are kept)"
)

// PythonStatus says how Python frames were recorded in one process, or why
// not (trace.Process.Python; "" when it ran no Python).
type PythonStatus struct {
	PID    uint32
	Exe    string
	Status string
}

// DefaultBuffer is the ring size per process when none is given.
const DefaultBuffer = 64 << 20

type config struct {
	output         string
	buffer         uint64
	sim            bool
	observer       Observer
	stdin          io.Reader
	stdout         io.Writer
	stderr         io.Writer
	progress       func(Progress)
	poll           time.Duration
	version        string
	shim           string
	simDir         string
	endOnly        bool
	whenFull       WhenFull
	onRecorderExit OnRecorderExit
	// calibPath replaces the built calibrator (tests of its failure).
	calibPath string
	fallback  string // ring directory on disk, for rings that do not fit in the ring base
	// Python frames (python.go)
	python      string
	pyScope     string
	pyThreshold int
	pyHelperMin time.Duration // a helper cheaper than this (median) stops being written; < 0: never
	pyBoot      string        // the bootstrap's directory
	dir         string        // the program's working directory ("": ours)
	force       bool          // cliopts.go
	claimed     bool          // cliopts.go: the output is an empty file claimed for it
	notices     io.Writer     // cliopts.go
	capture     Capture       // capture ranges (capture.go)
	passThrough []trace.API   // APIs handed to the driver unrecorded (passthrough.go)
	onStart     func()        // called once everything is ready, before the program starts
}

// Option configures Run.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithOutput sets the trace file Run writes (required), through
// internal/output: a regular file is written to a temporary file beside it
// and renamed when complete, mode 0600; a device or FIFO is written through.
// The recording's spill files go to a private directory beside it (in the
// temporary directory when it is not a regular file).
func WithOutput(path string) Option { return optionFunc(func(c *config) { c.output = path }) }

// WithOnStart sets a function called once the recording is set up (shim,
// working and spill directories, clock calibration), right before the
// program starts: a command says "recording" there, not before a set-up that
// may still fail.
func WithOnStart(f func()) Option { return optionFunc(func(c *config) { c.onStart = f }) }

// WithBuffer sets the ring size per process in bytes (events beyond what the
// recorder drains in time are dropped and counted).
func WithBuffer(bytes uint64) Option { return optionFunc(func(c *config) { c.buffer = bytes }) }

// WithSim runs the program against the simulated driver.
func WithSim(on bool) Option { return optionFunc(func(c *config) { c.sim = on }) }

// WithObserver streams events to o while the program runs.
func WithObserver(o Observer) Option { return optionFunc(func(c *config) { c.observer = o }) }

// WithStdio gives the program these standard streams (default: none for
// stdin, discard for outputs) and writes cuprof's notices to stderr.
func WithStdio(stdin io.Reader, stdout, stderr io.Writer) Option {
	return optionFunc(func(c *config) { c.stdin, c.stdout, c.stderr = stdin, stdout, stderr })
}

// Progress is what a recording holds so far, for a status line.
type Progress struct {
	Events    int           // events drained
	Drops     uint64        // events the processes could not record
	Processes int           // processes seen
	Rate      float64       // events per second since the last report
	Elapsed   time.Duration // since the program started
}

// WithProgress calls f about four times a second while the program runs,
// from the draining goroutine (f must be quick). Drawing it is the
// caller's business: Run writes nothing to the terminal.
func WithProgress(f func(Progress)) Option { return optionFunc(func(c *config) { c.progress = f }) }

// WithVersion sets the cuprof version recorded in the trace's metadata.
func WithVersion(v string) Option { return optionFunc(func(c *config) { c.version = v }) }

// WithEndOnlyTiming makes the shim read the clock once per call, after it
// returns: calls are recorded with Start == End, for about half the
// overhead (the two clock reads are most of the shim's cost).
func WithEndOnlyTiming(on bool) Option { return optionFunc(func(c *config) { c.endOnly = on }) }

// WhenFull is what a writer does when its process's ring has no free chunk.
type WhenFull string

const (
	// Wait makes the writer wait for the recorder to free a chunk, for as
	// long as the recorder polls the ring (it drops, counted, only when the
	// recorder has not polled for 2 s: killed or stuck). No event is lost;
	// the program is slowed to the recorder's pace instead (LTTng's
	// blocking mode). The default.
	Wait WhenFull = "wait"
	// Drop drops the event and counts it: the program is never slowed
	// (LTTng's discard mode).
	Drop WhenFull = "drop"
)

// ParseWhenFull checks a --when-full value.
func ParseWhenFull(s string) (WhenFull, error) {
	switch w := WhenFull(s); w {
	case Wait, Drop:
		return w, nil
	}
	return "", fmt.Errorf("invalid --when-full %q: use wait (writers wait for room, nothing is dropped) or drop (events that do not fit are dropped and counted)", s)
}

// WithWhenFull sets what a writer does when the ring is full (default Wait).
func WithWhenFull(w WhenFull) Option { return optionFunc(func(c *config) { c.whenFull = w }) }

// OnRecorderExit says what happens to the program when cuprof dies first
// (SIGKILL, OOM): RecorderExitStop (the default) sends it SIGTERM, through
// PR_SET_PDEATHSIG, so that nothing runs on untraced; RecorderExitContinue
// lets it run on, its threads no longer waiting for a full ring once the
// recorder has not moved for CUPROF_STALL_MS (its events from then on are
// lost). Either way what was drained is in the spill directory beside the
// output, which Recover (cuprof recover) turns into a trace.
type OnRecorderExit string

const (
	RecorderExitStop     OnRecorderExit = "stop"
	RecorderExitContinue OnRecorderExit = "continue"
)

// ParseOnRecorderExit reads a --on-recorder-exit value.
func ParseOnRecorderExit(s string) (OnRecorderExit, error) {
	switch m := OnRecorderExit(s); m {
	case RecorderExitStop, RecorderExitContinue:
		return m, nil
	}
	return "", fmt.Errorf("unknown --on-recorder-exit %q: use stop (the program gets SIGTERM when cuprof dies) or continue", s)
}

// WithOnRecorderExit sets what happens to the program if cuprof dies.
func WithOnRecorderExit(m OnRecorderExit) Option {
	return optionFunc(func(c *config) { c.onRecorderExit = m })
}

// withDir runs the program in dir (tests).
func withDir(dir string) Option { return optionFunc(func(c *config) { c.dir = dir }) }

// WithPollInterval sets how often the rings are drained (default 5ms).
func WithPollInterval(d time.Duration) Option { return optionFunc(func(c *config) { c.poll = d }) }

// Result is a finished recording, written to the WithOutput file.
type Result struct {
	// Events, Processes and Drops count the events written, the processes
	// recorded and the events they could not record (buffer full).
	Events    int
	Processes int
	Drops     uint64
	// SpillDrops is the part of Drops a full disk kept out of the spill
	// files, and BadRecords the part that were torn or bogus ring records.
	SpillDrops, BadRecords uint64
	// OtherDrops is the part of Drops lost for any other reason than a
	// full buffer, a full disk or a bad record, by reason (the Drop*
	// constants, the trace's Drop.Reason); nil when there were none.
	OtherDrops map[string]uint64
	// RinglessChildren counts the fork children that could make no ring of
	// their own (a privilege drop: setuid, setpriv; their events until
	// they exec'd or exited are drops, DropChildNoRing; what a program
	// they exec'd did is not seen at all).
	RinglessChildren uint64
	// FullWaits and FullWait are how often writers waited for room in a
	// full ring (WhenFull Wait) and how long, summed over threads.
	FullWaits uint64
	FullWait  time.Duration
	// ExitCode is the program's exit status, or 128+signal when a signal
	// killed it (what a shell reports).
	ExitCode int
	// Signal is the signal that killed the program, or 0.
	Signal syscall.Signal
	// Rescued, when not "", is where the trace was written instead of the
	// WithOutput file, which could not be written (WriteErr says why).
	Rescued  string
	WriteErr error
	// Simulated says the program ran against the simulated driver.
	Simulated bool
	// Python holds every process's Python status, by PID.
	Python []PythonStatus

	// peakBuffered is the most events the final pass held at once, and
	// outOfOrder how many batches started before the end of their thread's
	// previous batch (tests).
	peakBuffered, outOfOrder int
}

// CheckOptions reports the first invalid option of opts, as Run would,
// without running anything: a command can refuse bad flags before it says
// it is recording.
func CheckOptions(opts ...Option) error {
	cfg := config{whenFull: Wait}
	for _, o := range opts {
		o.apply(&cfg)
	}
	return cfg.check()
}

// check validates the options that do not need the program or the output.
func (c *config) check() error {
	if _, err := ParseWhenFull(string(c.whenFull)); err != nil {
		return err
	}
	if err := c.capture.check(); err != nil {
		return err
	}
	return c.checkPython()
}

// Run records argv[0] with arguments argv[1:] until it exits.
func Run(ctx context.Context, argv []string, opts ...Option) (*Result, error) {
	cfg := config{buffer: DefaultBuffer, poll: 5 * time.Millisecond, stdout: io.Discard, stderr: io.Discard, whenFull: Wait}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, ErrNoCommand
	}
	if cfg.output == "" {
		return nil, ErrNoOutput
	}
	// An output that cannot be written is refused before the program runs.
	if err := output.Check(cfg.output, cfg.outputOptions()...); err != nil {
		return nil, err
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("cannot run %q: %w", argv[0], err)
	}
	if StaticELF(path) {
		fmt.Fprintf(cfg.note(), "cuprof: warning: %s is statically linked: the dynamic loader cannot preload the shim into it, so its driver calls are not recorded (link it dynamically; dynamic programs it starts are recorded)\n", argv[0])
	}
	shimPath, err := shim.Library(ctx)
	if err != nil {
		return nil, err
	}
	calib, err := shim.Calibrator(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	if !cfg.sim && !DriverInstalled() {
		fmt.Fprintln(cfg.note(), "cuprof: no libcuda.so.1 on this machine: recording against the simulated driver (--sim)")
		cfg.sim = true
	}
	if cfg.sim {
		if cfg.simDir, err = sim.Driver(ctx); err != nil {
			return nil, err
		}
		res.Simulated = true
	}
	cfg.shim = shimPath

	work, err := workDir(cfg.note())
	if err != nil {
		return nil, fmt.Errorf("create working directory: %w", err)
	}
	defer os.RemoveAll(work)
	rings := filepath.Join(work, "rings")
	calibDir := filepath.Join(work, "calib")
	for _, d := range []string{rings, calibDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("create working directory: %w", err)
		}
	}
	lock, err := holdRecorderLock(rings)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if cfg.python != PythonOff {
		if cfg.pyBoot, err = bootstrapDir(); err != nil {
			return nil, err
		}
	}

	// Drained records wait in a private directory beside the output (on
	// disk: /dev/shm would hold them in memory).
	parent, err := spillParent(cfg.output, cfg.note())
	if err != nil {
		return nil, err
	}
	spillDir, err := mkdirTempAbs(parent, ".cuprof-spill-")
	if err != nil {
		return nil, fmt.Errorf("create a spill directory beside %s: %w (check that its directory exists and is writable)", cfg.output, err)
	}
	defer os.RemoveAll(spillDir)
	if err := noteSpill(work, spillDir); err != nil {
		return nil, fmt.Errorf("create working directory: %w", err)
	}
	// Rings that do not fit in the ring directory (a small tmpfs) go to
	// disk, beside the spill files; so does the calibrator's.
	cfg.fallback = filepath.Join(spillDir, "rings")
	diskCalib := filepath.Join(spillDir, "calib")
	for _, d := range []string{cfg.fallback, diskCalib} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("create a spill directory beside %s: %w", cfg.output, err)
		}
	}
	if cfg.calibPath != "" {
		calib = cfg.calibPath
	}
	// A calibrator whose ring did not fit still reads both clocks (kind 0:
	// the rings say which clock it read); one on disk measures the shim's
	// cost too.
	calibrate := func(iters int) (clockPair, error) {
		p, err := runCalibrator(ctx, calib, &cfg, calibDir, iters)
		if err == nil && p.kind != 0 {
			return p, nil
		}
		q, err2 := runCalibrator(ctx, calib, &cfg, diskCalib, iters)
		switch {
		case err2 == nil && q.kind != 0:
			return q, nil
		case err == nil:
			return p, nil
		case err2 == nil:
			return q, nil
		}
		return clockPair{}, err
	}

	wall0, mono0 := clockNow()
	sync0 := clockSync()
	startPair, startErr := calibrate(0)

	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args = argv
	cmd.Dir = cfg.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.stdin, cfg.stdout, cfg.stderr
	cmd.Env = childEnv(os.Environ(), &cfg, rings)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if cfg.onRecorderExit != RecorderExitContinue {
		// The kernel sends the signal when the thread that forked the
		// program exits: keep this goroutine on it until the program is
		// waited for.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	}
	cmd.WaitDelay = 10 * time.Second

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer func() {
		// Stop guarantees no more deliveries, so closing ends the
		// forwarding goroutine below instead of leaving it parked.
		signal.Stop(sigs)
		close(sigs)
	}()
	plan := planSignals(cmd) // signals.go
	if cfg.onStart != nil {
		cfg.onStart()
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() {
		for s := range sigs {
			plan.forward(cmd.Process, s)
		}
	}()

	d := newDrainer([]string{rings, cfg.fallback}, spillDir, &cfg, startPair)
	defer d.closeRings()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.loop(stop)
	}()
	waitErr := cmd.Wait()
	close(stop)
	wg.Wait()
	d.drain() // what was committed after the last poll
	d.drain()
	if d.err != nil {
		return nil, fmt.Errorf("read the recording: %w", d.err)
	}

	st := cmd.ProcessState
	if st == nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], waitErr)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal()
		res.ExitCode = 128 + int(ws.Signal())
	} else {
		res.ExitCode = st.ExitCode()
	}

	// Calibrate the TSC over the whole run (at least 50 ms) and the shim's cost.
	if el := time.Duration(monoNow()-startPair.mono) * time.Nanosecond; el < 50*time.Millisecond {
		time.Sleep(50*time.Millisecond - el)
	}
	endPair, endErr := calibrate(20000)
	if err := errors.Join(startErr, endErr); err != nil {
		// The recording is kept: the rings carry clock anchors of their own.
		startPair, endPair = d.anchorPairs(startPair, startErr == nil, endPair, endErr == nil)
		fmt.Fprintf(cfg.note(), "cuprof: warning: %v; the trace's clock comes from the rings' own anchors (%s) and the shim's cost is not measured\n",
			firstLine(err), d.anchorNote(startPair, endPair))
	}
	d.noteRings()
	if len(d.rings) == 0 {
		fmt.Fprintf(cfg.note(), "cuprof: warning: no process of %s recorded anything: it made no driver or NVTX call the shim saw (a statically linked program, or one that clears LD_PRELOAD, cannot load the shim)\n", argv[0])
	}
	startPair.kind, endPair.kind = d.clockKind(startPair.kind), d.clockKind(endPair.kind)
	clk := clockFrom(startPair, endPair)
	meta := trace.Meta{Capture: "shim", CuprofVersion: cfg.version, Command: append([]string(nil), argv...),
		MonoStart: int64(mono0), WallStart: int64(wall0), Overhead: endPair.overhead(clk), WhenFull: string(cfg.whenFull),
		CaptureRange: cfg.capture.String()}
	if res.Simulated {
		meta.Capture = "sim"
	}
	wallEnd, monoEnd := clockNow()
	meta.Sync = worseSync(sync0, clockSync(), wallEnd, monoEnd)
	meta.Host, _ = os.Hostname()
	if spillHook != nil {
		spillHook(spillDir)
	}
	d.calibShadowNs, d.calibShadowOK = endPair.shadowNs(clk)
	if err := writeTrace(d, cfg.output, meta, clk, cmd.Process.Pid, res, cfg.outputOptions()...); err != nil {
		return nil, err
	}
	pythonNotice(cfg.note(), res.Python)
	return res, nil
}

// mkdirTempAbs is os.MkdirTemp returning an absolute path: the program
// gets the directories it writes rings to in its environment, and it may
// change directory before it opens one.
func mkdirTempAbs(dir, pattern string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(abs, pattern)
}

// spillHook, when set (tests), is called with the spill directory before
// the trace is written from it.
var spillHook func(dir string)

// writeTrace writes the trace to path through internal/output (atomic for
// a regular file, written through a device or FIFO, mode 0600). When that
// fails after the program ran, the recording is not lost: it is written to
// a private file elsewhere (output.Rescue), named in res.Rescued.
func writeTrace(d *drainer, path string, meta trace.Meta, clk clock, pid int, res *Result, opts ...output.Option) error {
	write := func(f *output.File) error {
		if err := d.write(f, meta, clk, pid, res); err != nil {
			f.Abort()
			return err
		}
		return f.Commit()
	}
	f, err := output.Create(path, opts...)
	if err == nil {
		err = write(f)
	}
	if err == nil {
		return nil
	}
	// Every place a write failed in is left: a full temporary directory
	// lets the file be made and fails its writes, and the home directory
	// may have room.
	rescued, rerr := output.Rescue(path, write)
	if rerr != nil {
		return fmt.Errorf("write trace %s: %w (and no other place could hold it: %v)", path, err, rerr)
	}
	res.Rescued, res.WriteErr = rescued, err
	return nil
}

// spillBase is the directory the spill files go to: the output's (links
// followed) when it is a regular file or new, else the temporary directory
// (/dev/null's directory is no place for them).
func spillBase(out string) string {
	target, err := output.Resolve(out)
	if err != nil {
		return filepath.Dir(out)
	}
	if st, err := os.Stat(target); err == nil && !st.Mode().IsRegular() {
		return os.TempDir()
	}
	return filepath.Dir(target)
}

// spillParent is the directory the spill directory goes in: spillBase,
// when nobody else can write there; else the user's own directory there
// (DIR/cuprof-UID, 0700, checked: cbuild.UserDir), or in the temporary
// directory when that one cannot be had (notes says so). The disk fallback
// for rings lies in the spill directory and the program's environment
// names it (CUPROF_DIR_FALLBACK): once cuprof has removed it, nobody else
// can make it again for a child that outlives cuprof.
func spillParent(out string, notes io.Writer) (string, error) {
	base := spillBase(out)
	if !othersCanWrite(base) {
		return base, nil
	}
	dir, err := cbuild.UserDir(base)
	if err == nil {
		return dir, nil
	}
	dir, err2 := cbuild.UserDir(os.TempDir())
	if err2 != nil {
		return "", fmt.Errorf("others can write %s, and no directory of yours there or in %s can hold the spill files: %v; %v (write the trace to a directory of yours)",
			base, os.TempDir(), err, err2)
	}
	fmt.Fprintf(notes, "cuprof: note: others can write %s and %v: the spill files go to %s\n", base, err, dir)
	return dir, nil
}

// othersCanWrite reports whether someone other than the user may be able
// to make or rename entries of dir: it is another user's, or writable by
// group or others (sticky or not), or cannot be looked at.
func othersCanWrite(dir string) bool {
	st, err := os.Stat(dir)
	if err != nil {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return !ok || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o022 != 0
}

// childEnv is the program's environment: the shim preloaded (after any
// preloads already there), NVTX injection, the ring directory, the
// simulated driver first on the library path with --sim.
func childEnv(env []string, cfg *config, rings string) []string {
	out := make([]string, 0, len(env)+5)
	var preload, libpath, pythonPath string
	nvtxSet := false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "LD_PRELOAD":
			preload = v
			continue
		case "LD_LIBRARY_PATH":
			libpath = v
			continue
		case "CUPROF_DIR", "CUPROF_DIR_FALLBACK", "CUPROF_BUFFER", "CUPROF_TIMING", "CUPROF_WHEN_FULL",
			"CUPROF_PYTHON", "CUPROF_PY_SCOPE", "CUPROF_PY_THRESHOLD", "CUPROF_PY_HELPER_NS",
			"CUPROF_CAPTURE", "CUPROF_CAPTURE_KEEP", "CUPROF_CAPTURE_NVTX", "CUPROF_CAPTURE_NVTX_DOMAIN",
			"CUPROF_CAPTURE_WINDOW", "CUPROF_CAPTURE_COUNT", // captureEnv's
			"CUPROF_PASS_THROUGH", // passThroughEnv's
			"CUPROF_HOST":         // hostKey's
			continue
		case "PYTHONPATH":
			pythonPath = v
			continue
		case "NVTX_INJECTION64_PATH":
			nvtxSet = v != ""
		}
		out = append(out, kv)
	}
	if preload != "" {
		preload += ":" + cfg.shim
	} else {
		preload = cfg.shim
	}
	if cfg.fallback != "" {
		out = append(out, "CUPROF_DIR_FALLBACK="+cfg.fallback)
	}
	out = append(out, "CUPROF_HOST="+hostKey())
	out = append(out, "LD_PRELOAD="+preload, "CUPROF_DIR="+rings,
		"CUPROF_BUFFER="+strconv.FormatUint(cfg.buffer, 10), "CUPROF_WHEN_FULL="+string(cfg.whenFull))
	if !nvtxSet {
		out = append(out, "NVTX_INJECTION64_PATH="+cfg.shim)
	}
	if cfg.endOnly {
		out = append(out, "CUPROF_TIMING=end")
	}
	out = append(out, pythonEnv(cfg, pythonPath)...)
	out = append(out, "CUPROF_CAPTURE_KEEP="+keptAPIs())
	out = append(out, captureEnv(cfg.capture)...)
	out = append(out, passThroughEnv(cfg.passThrough)...)
	if cfg.simDir != "" {
		if libpath != "" {
			libpath = cfg.simDir + ":" + libpath
		} else {
			libpath = cfg.simDir
		}
	}
	if libpath != "" {
		out = append(out, "LD_LIBRARY_PATH="+libpath)
	}
	return out
}

// DriverInstalled reports whether a libcuda.so.1 can be found by the dynamic
// loader (on LD_LIBRARY_PATH, in the loader cache or the usual directories).
func DriverInstalled() bool {
	dirs := filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))
	dirs = append(dirs, "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
		"/lib/x86_64-linux-gnu", "/lib64", "/usr/local/cuda/compat", "/usr/lib/wsl/lib")
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "libcuda.so.1")); err == nil {
			return true
		}
	}
	out, err := exec.Command("/sbin/ldconfig", "-p").Output()
	return err == nil && bytes.Contains(out, []byte("libcuda.so.1 "))
}

// inTerminalForeground reports whether cuprof (and so the program, which
// shares its process group) is in the foreground process group of its
// controlling terminal, the group Ctrl-C and Ctrl-\ signal. Standard input
// says nothing about it: /dev/null is a character device too, and a program
// whose stdin is redirected still gets the terminal's signals.
func inTerminalForeground() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == syscall.Getpgrp()
}

// clockPair is one instant on the ring clock and CLOCK_MONOTONIC, plus the
// calibrator's measurement of the shim's cost.
type clockPair struct {
	kind  int
	tick  uint64
	mono  uint64
	calib [8]uint64 // cuprof_calibrate's out[8]
}

func runCalibrator(ctx context.Context, path string, cfg *config, dir string, iters int) (clockPair, error) {
	cmd := exec.CommandContext(ctx, path, strconv.Itoa(iters))
	cmd.Env = []string{"LD_PRELOAD=" + cfg.shim, "CUPROF_DIR=" + dir, "CUPROF_BUFFER=" + strconv.Itoa(32<<20)}
	if cfg.endOnly {
		cmd.Env = append(cmd.Env, "CUPROF_TIMING=end")
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return clockPair{}, fmt.Errorf("calibrate the clock: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	var p clockPair
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		nums := make([]uint64, len(f)-1)
		for i := range nums {
			nums[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		switch {
		case f[0] == "clock" && len(nums) == 1:
			p.kind = int(nums[0])
		case f[0] == "pair" && len(nums) == 2:
			p.tick, p.mono = nums[0], nums[1]
		case f[0] == "calib" && (len(nums) == 4 || len(nums) == 8):
			copy(p.calib[:], nums)
		}
	}
	if p.mono == 0 {
		return clockPair{}, fmt.Errorf("calibrate the clock: unexpected calibrator output %q", out.String())
	}
	// Clean its rings so the directory does not grow.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.Remove(filepath.Join(dir, e.Name()))
	}
	return p, nil
}

// clock converts ring ticks to trace nanoseconds.
type clock struct {
	tsc    bool
	hz     float64
	tick0  uint64
	mono0  uint64
	source string
}

func clockFrom(a, b clockPair) clock {
	c := clock{source: "monotonic"}
	if a.kind != clockTSC {
		return c
	}
	c.tsc, c.source, c.tick0, c.mono0 = true, "tsc", a.tick, a.mono
	if b.mono > a.mono && b.tick > a.tick {
		c.hz = float64(b.tick-a.tick) * 1e9 / float64(b.mono-a.mono)
	}
	if c.hz <= 0 || math.IsNaN(c.hz) {
		c.hz = 1e9
	}
	return c
}

func (c clock) ns(tick int64, ringClock uint32) int64 {
	if !c.tsc || ringClock != clockTSC {
		return tick
	}
	return int64(c.mono0) + int64(math.Round(float64(tick-int64(c.tick0))*1e9/c.hz))
}

func (c clock) ticksToNs(t float64) float64 {
	if !c.tsc {
		return t
	}
	return t * 1e9 / c.hz
}

func (p clockPair) overhead(c clock) trace.Overhead {
	n := float64(p.calib[3])
	if n == 0 {
		return trace.Overhead{}
	}
	plain := c.ticksToNs(float64(p.calib[0]) / n)
	wrapped := c.ticksToNs(float64(p.calib[1]) / n)
	inside := c.ticksToNs(float64(p.calib[2]) / n)
	o := trace.Overhead{AddedNs: wrapped - plain, InsideNs: inside - plain}
	o.AddedNs = math.Max(0, math.Round(o.AddedNs*10)/10)
	o.InsideNs = math.Max(0, math.Round(o.InsideNs*10)/10)
	return o
}

// shadowNs is the calibrator's mean cold shadow call less its mean warm one
// (inplace.c), measured in its tight loop; ok is false when it measured
// too few of either.
func (p clockPair) shadowNs(c clock) (ns float64, ok bool) {
	return shadowDiff(c, p.calib[4], p.calib[5], p.calib[6], p.calib[7])
}

// shadowDiff is the mean of cold ticks over coldN shadow calls less that of
// warm over warmN, in ns; ok is false with fewer than minInPlaceCalls of
// either.
func shadowDiff(c clock, cold, coldN, warm, warmN uint64) (float64, bool) {
	if coldN < minInPlaceCalls || warmN < minInPlaceCalls {
		return 0, false
	}
	return c.ticksToNs(float64(cold)/float64(coldN) - float64(warm)/float64(warmN)), true
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[uint32]V) []uint32 {
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// ringBase is where the working directory holding the rings goes: $CUPROF_TMPDIR
// when set, else /dev/shm when it is a writable directory (memory-backed: pages
// of a shared mapping there are never written back, so the shim's stores never
// fault again after the first touch), else the system's temporary directory.
func ringBase() string {
	if d := os.Getenv("CUPROF_TMPDIR"); d != "" {
		return d
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		return "/dev/shm"
	}
	return ""
}

// hostKey is CUPROF_HOST: this boot and PID namespace
// ("BOOTID/pid:[N]"), for the shim to record only processes whose pids
// mean here what they mean to it (ring.c, same_host).
func hostKey() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return bootID() + "/" + ns
}
