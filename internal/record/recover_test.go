package record

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cuprof/cuprof/internal/cbuild"
	"github.com/cuprof/cuprof/trace"
)

// recorderProcess runs Run as the test binary's only job, for tests that
// kill the recorder: the program and its arguments in
// CUPROF_TEST_RECORDER_ARGS (separated by \x1f), the mode in
// CUPROF_TEST_RECORDER_EXIT.
func recorderProcess(out string) {
	argv := strings.Split(os.Getenv("CUPROF_TEST_RECORDER_ARGS"), "\x1f")
	mode, _ := ParseOnRecorderExit(os.Getenv("CUPROF_TEST_RECORDER_EXIT"))
	opts := []Option{WithSim(true), WithOutput(out), WithStdio(nil, os.Stdout, os.Stderr), WithOnRecorderExit(mode)}
	if os.Getenv("CUPROF_TEST_RECORDER_NOPOLL") != "" {
		opts = append(opts, WithPollInterval(time.Hour)) // killed long before its first poll
	}
	if n, err := strconv.Atoi(os.Getenv("CUPROF_TEST_RECORDER_DIE_SPILLED")); err == nil {
		// Killed by itself in the poll that spills the n-th record,
		// after the spill and before the ring's read marks.
		testHookSpilled = func(r *ring) {
			if r.n >= n {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	}
	_, err := Run(context.Background(), argv, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// alive reports whether pid is a process that has not exited.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// killed is a recorder killed by killRecorder: the program's pid, the
// output the recorder was to write, how long the recorder took from its
// start to the program's "ready", and the program's further output lines.
type killed struct {
	pid   int
	out   string
	ready time.Duration
	lines <-chan string
}

// killPoint is when killRecorder kills the recorder, once the program
// made its calls.
type killPoint int

const (
	// beforePoll: the recorder polls every hour, so it never read the
	// program's ring (no spill file names it).
	beforePoll killPoint = iota
	// afterOpen: the recorder has opened the ring (made its spill file).
	afterOpen
	// afterSpill: the recorder spilled every call.
	afterSpill
	// spilledUnmarked: the recorder kills itself in the poll that spilled
	// the last call, between the spill and the ring's read marks.
	spilledUnmarked
)

// killRecorder starts a recorder of killme in a process of its own, waits
// until the program made its calls and the recorder got to point at,
// SIGKILLs the recorder and waits for it to be gone.
func killRecorder(t *testing.T, mode OnRecorderExit, rings string, at killPoint) killed {
	t.Helper()
	const calls = 5000
	bins, _ := programs(t)
	out := filepath.Join(t.TempDir(), "out.cuprof")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CUPROF_TEST_RECORDER_OUT="+out,
		"CUPROF_TEST_RECORDER_ARGS="+filepath.Join(bins, "killme")+"\x1f"+strconv.Itoa(calls),
		"CUPROF_TEST_RECORDER_EXIT="+string(mode), "CUPROF_TMPDIR="+rings)
	if at == beforePoll {
		cmd.Env = append(cmd.Env, "CUPROF_TEST_RECORDER_NOPOLL=1")
	}
	if at == spilledUnmarked {
		cmd.Env = append(cmd.Env, "CUPROF_TEST_RECORDER_DIE_SPILLED="+strconv.Itoa(calls))
	}
	// A pipe of our own, not StdoutPipe: the program inherits its write end
	// and can still say something after the recorder is gone.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	cmd.Stdout, cmd.Stderr = pw, os.Stderr
	began := time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	stop := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf(format, args...)
	}
	k := killed{out: out, lines: lines}
	// Deadlines that are failures, not hangs: far beyond what a loaded
	// machine takes.
	deadline := time.After(2 * time.Minute)
	for k.pid == 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				stop("the recorder's output ended before the program said it was ready")
			}
			if f := strings.Fields(l); len(f) == 2 && f[0] == "ready" {
				k.pid, _ = strconv.Atoi(f[1])
			}
		case <-deadline:
			stop("the program never said it was ready")
		}
	}
	k.ready = time.Since(began)
	t.Cleanup(func() { syscall.Kill(k.pid, syscall.SIGKILL) })
	if at == spilledUnmarked {
		waited := make(chan struct{})
		go func() { cmd.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-deadline:
			stop("the recorder did not kill itself once it spilled %d calls", calls)
		}
		if st := cmd.ProcessState; st == nil || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the recorder ended with %v, not killed by itself at its spill", st)
		}
		return k
	}
	// The spill file the recorder makes when it first polls the ring.
	for at >= afterOpen && !spillFileMade(out) {
		select {
		case <-deadline:
			stop("the recorder never opened the program's ring beside %s", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for n := 0; at == afterSpill && n < calls; {
		select {
		case <-deadline:
			stop("%d of %d calls spilled beside %s after 2 minutes", n, calls, out)
		case <-time.After(10 * time.Millisecond):
		}
		n = spilledCalls(t, out, trace.APICtxGetCurrent)
	}
	if at == beforePoll && spillFileMade(out) {
		stop("the recorder polled the program's ring, although it polls every hour")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	return k
}

// spillFileMade says whether a recorder writing out has made a spill file
// whose header is whole.
func spillFileMade(out string) bool {
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".cuprof-spill-*", "*.spill"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if _, _, err := parseSpillHeader(b); err == nil {
			return true
		}
	}
	return false
}

// spilledCalls counts the calls of api in the spill files beside out, up to
// each file's last whole batch (a recorder may be writing them).
func spilledCalls(t *testing.T, out string, api trace.API) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".cuprof-spill-*", "*.spill"))
	n := 0
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		st, err := f.Stat()
		head := make([]byte, maxSpillHeader)
		hn, _ := f.ReadAt(head, 0)
		_, off, herr := parseSpillHeader(head[:hn])
		if err == nil && herr == nil {
			size := st.Size() - int64(off)
			if tf, err := trace.NewFile(io.NewSectionReader(f, int64(off), size), size); err == nil {
				for e, err := range tf.Events() {
					if err != nil {
						break
					}
					if e.Kind == trace.KindCall && e.API == api {
						n++
					}
				}
			}
		}
		f.Close()
	}
	return n
}

// spillDirOf returns the spill directory a killed recorder left beside out.
func spillDirOf(t *testing.T, out string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".cuprof-spill-*"))
	if len(dirs) != 1 {
		t.Fatalf("spill directories beside the output: %v, want one", dirs)
	}
	return dirs[0]
}

// TestRecorderKilledStopsProgramAndRecovers is SIGKILL of cuprof itself,
// as soon as the program has made its calls: before the recorder's first
// poll of the program's ring, after it (before most calls were drained),
// and in the poll that spilled the last call, between its spill and the
// ring's read marks (where recover used to read that poll's records
// twice: 9,095 calls of 5,000 once under load). The program is told (SIGTERM, by default); its ring stays in
// the recording's working directory, which the next recording reports, and
// `cuprof recover` turns the spill directory and the ring into a trace
// holding every call the program made (it used to get 35-60 %: only what
// was drained; and nothing when no poll had found the ring, which no spill
// file then named), then removes the ring.
func TestRecorderKilledStopsProgramAndRecovers(t *testing.T) {
	for _, c := range []struct {
		name string
		at   killPoint
	}{{"before the first poll", beforePoll}, {"after the first poll", afterOpen},
		{"between a spill and its read marks", spilledUnmarked}} {
		t.Run(c.name, func(t *testing.T) { testRecorderKilled(t, c.at) })
	}
}

func testRecorderKilled(t *testing.T, at killPoint) {
	rings := t.TempDir()
	k := killRecorder(t, RecorderExitStop, rings, at)
	pid, out := k.pid, k.out
	deadline := time.Now().Add(time.Minute)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the program (pid %d) still runs a minute after its recorder was killed", pid)
	}
	left, _ := filepath.Glob(filepath.Join(rings, "*", "*", "rings", "*.ring"))
	if len(left) != 1 {
		t.Errorf("ring files left after the recorder was killed: %v, want the program's", left)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an output exists although the recorder was killed: %v", err)
	}
	// The next recording says where the leftover is.
	var next strings.Builder
	t.Setenv("CUPROF_TMPDIR", rings)
	parent, err := cbuild.UserDir(ringBase())
	if err != nil {
		t.Fatal(err)
	}
	leftovers(parent, &next)
	spill := spillDirOf(t, out)
	if !strings.Contains(next.String(), "cuprof recover "+spill) {
		t.Errorf("the next recording did not report the killed one's rings: %q", next.String())
	}
	if _, err := Recover(spill, filepath.Join(spill, "ring-0.spill"), io.Discard); err == nil {
		t.Errorf("recover -o one of its own inputs: no error")
	}
	var notes strings.Builder
	rec := filepath.Join(t.TempDir(), "recovered.cuprof")
	res, err := Recover(spill, rec, &notes)
	if err != nil {
		t.Fatalf("Recover: %v\n%s", err, notes.String())
	}
	tr, err := trace.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := callCounts(tr)["cuCtxGetCurrent"]; n != 5000 || res.Events != len(tr.Events) {
		t.Errorf("recovered %d cuCtxGetCurrent (result says %d events), want 5000", n, res.Events)
	}
	if len(tr.Processes) != 1 || tr.Processes[0].PID != uint32(pid) || !strings.HasSuffix(tr.Processes[0].Exe, "killme") {
		t.Errorf("processes %+v", tr.Processes)
	}
	if err := tr.Validate(); err != nil {
		t.Errorf("recovered trace: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(rings, "*", "*")); len(left) != 0 {
		t.Errorf("left after recover: %v, want the working directory removed", left)
	}
	// The calls were made between the recorder's start and the program's
	// "ready": a recovered clock that stretches them beyond that is off.
	start, end := tr.Events[0].Start, tr.Events[len(tr.Events)-1].End
	if span := time.Duration(end - start); span <= 0 || span > k.ready {
		t.Errorf("recovered events span %v, the program made them within %v: the clock is off", span, k.ready)
	}
}

// TestRecorderKilledContinue: with --on-recorder-exit=continue the program
// runs on when its recorder dies: asked to (SIGUSR1) after its recorder is
// gone, it makes its calls again and says so.
func TestRecorderKilledContinue(t *testing.T) {
	k := killRecorder(t, RecorderExitContinue, t.TempDir(), afterSpill)
	if err := syscall.Kill(k.pid, syscall.SIGUSR1); err != nil {
		t.Fatalf("the program (pid %d) is gone after its recorder was killed: %v", k.pid, err)
	}
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-k.lines:
			if !ok {
				t.Fatalf("the program stopped after its recorder was killed, although it was to continue")
			}
			if l == "again 5000" {
				return
			}
		case <-deadline:
			t.Fatalf("the program did not answer in 2 minutes after its recorder was killed")
		}
	}
}

// TestRecoverErrors: a directory without spill files, and files that are not spills.
func TestRecoverErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Recover(dir, filepath.Join(dir, "o.cuprof"), io.Discard); err == nil || !strings.Contains(err.Error(), "no spill files or rings") {
		t.Errorf("empty dir: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "ring-0.spill"), []byte("junk"), 0o600)
	var notes strings.Builder
	if _, err := Recover(dir, filepath.Join(dir, "o.cuprof"), &notes); err == nil || !strings.Contains(notes.String(), "skipping") {
		t.Errorf("junk spill: %v, notes %q", err, notes.String())
	}
}

// TestRecoverChecksTheWorkingDirectory: recover reads the rings of the
// working directory its spill directory's note names only when that is a
// private directory of the user's naming the spill directory back; else it
// says why and reads none of them.
func TestRecoverChecksTheWorkingDirectory(t *testing.T) {
	for _, c := range []struct {
		name     string
		setup    func(spill, work string)
		err      string // Recover's error
		notice   string // in its notices
		readable bool
	}{
		{"its own", func(spill, work string) {}, "no readable spill file or ring", "", true},
		{"open to others", func(spill, work string) { os.Chmod(work, 0o755) }, "no spill files or rings", "is open to others", false},
		{"another recording's", func(spill, work string) {
			os.WriteFile(filepath.Join(work, spillNote), []byte("/elsewhere\n"), 0o600)
		}, "no spill files or rings", "is another recording's", false},
		{"a link", func(spill, work string) {
			link := filepath.Join(t.TempDir(), "link")
			os.Symlink(work, link)
			os.WriteFile(filepath.Join(spill, recordingNote), appendRecordingNote(nil, link, ""), 0o600)
		}, "no spill files or rings", "is not a directory", false},
		{"a relative path", func(spill, work string) {
			os.WriteFile(filepath.Join(spill, recordingNote), []byte("work rings\n"), 0o600)
		}, "no spill files or rings", "not a clean absolute path", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			spill, work := t.TempDir(), t.TempDir()
			os.Chmod(work, 0o700) // a second TempDir is 0777 less the umask
			if err := os.Mkdir(filepath.Join(work, "rings"), 0o700); err != nil {
				t.Fatal(err)
			}
			// Not a ring yet (no magic): listed, then skipped.
			os.WriteFile(filepath.Join(work, "rings", "1-2-0.ring"), make([]byte, 64), 0o600)
			if err := noteSpill(work, spill); err != nil {
				t.Fatal(err)
			}
			c.setup(spill, work)
			var notes strings.Builder
			_, err := Recover(spill, filepath.Join(t.TempDir(), "out.cuprof"), &notes)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Recover: %v, want %q", err, c.err)
			}
			if !strings.Contains(notes.String(), c.notice) {
				t.Errorf("notices %q, want %q", notes.String(), c.notice)
			}
			if _, err := os.Stat(filepath.Join(work, "rings", "1-2-0.ring")); err != nil {
				t.Errorf("the ring that is not one was removed: %v", err)
			}
		})
	}
}

// TestRecordingNote: the note reads back what was written; what is not a
// note is refused with the reason.
func TestRecordingNote(t *testing.T) {
	work, boot, err := parseRecordingNote(appendRecordingNote(nil, "/dev/shm/cuprof-0/record-1", "b00t"))
	if err != nil || work != "/dev/shm/cuprof-0/record-1" || boot != "b00t" {
		t.Errorf("round trip: %q %q %v", work, boot, err)
	}
	for in, want := range map[string]string{
		"":                        "not a clean absolute path",
		"work a/b\n":              "not a clean absolute path",
		"work /a/../b\n":          "not a clean absolute path",
		"work /a\nother x\n":      "unknown line",
		strings.Repeat("x", 9000): "longer than 8 KiB",
	} {
		if _, _, err := parseRecordingNote([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want %q", in, err, want)
		}
	}
}

// FuzzRecordingNote: any bytes parse or fail without a panic, and what
// parses is a clean absolute path that round-trips.
func FuzzRecordingNote(f *testing.F) {
	f.Add(appendRecordingNote(nil, "/dev/shm/cuprof-0/record-123", "6f3c0b1e-2d4a-4c55-9b1a-1f2e3d4c5b6a"))
	f.Add([]byte("work /tmp/x\n"))
	f.Add([]byte("boot only\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		work, boot, err := parseRecordingNote(b)
		if err != nil {
			return
		}
		if !filepath.IsAbs(work) || filepath.Clean(work) != work {
			t.Fatalf("accepted working directory %q", work)
		}
		if strings.ContainsRune(work, '\n') || strings.ContainsRune(boot, '\n') {
			return // cannot be written back on one line
		}
		w2, b2, err := parseRecordingNote(appendRecordingNote(nil, work, boot))
		if err != nil || w2 != work || b2 != boot {
			t.Fatalf("round trip of %q %q: %q %q %v", work, boot, w2, b2, err)
		}
	})
}

// TestLeftoverNoteFollowsNotices: the note about a killed recording's
// working directory is one of cuprof's own lines: it goes where
// WithNotices says (io.Discard under cuprof record -q), not to the
// program's standard error.
func TestLeftoverNoteFollowsNotices(t *testing.T) {
	base := t.TempDir()
	t.Setenv("CUPROF_TMPDIR", base)
	parent, err := cbuild.UserDir(base)
	if err != nil {
		t.Fatal(err)
	}
	// A killed recording: its lock file nobody holds, its spill directory there.
	left := filepath.Join(parent, "record-left")
	if err := os.MkdirAll(filepath.Join(left, "rings"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "rings", lockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := noteSpill(left, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for _, quiet := range []bool{false, true} {
		var stderr, notes strings.Builder
		opts := []Option{WithStdio(nil, io.Discard, &stderr)}
		if quiet {
			opts = append(opts, WithNotices(&notes))
		}
		record(t, []string{"true"}, opts...)
		got := &stderr
		if quiet {
			got = &notes
			if strings.Contains(stderr.String(), "holds the rings") {
				t.Errorf("with notices elsewhere, the program's stderr got %q", stderr.String())
			}
		}
		if !strings.Contains(got.String(), left+" holds the rings") {
			t.Errorf("quiet %v: no note about %s in %q", quiet, left, got.String())
		}
	}
}

// TestRecoverRefusesARunningRecording: recover on the spill directory of a
// recording whose cuprof still runs wrote a partial trace without a word;
// it refuses, saying the recording runs, and leaves it alone.
func TestRecoverRefusesARunningRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("records a program")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "run.cuprof")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, []string{"sleep", "600"}, WithSim(true), WithOutput(out), WithStdio(nil, io.Discard, io.Discard))
		done <- err
	}()
	var spill string
	for deadline := time.Now().Add(2 * time.Minute); spill == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(dir, ".cuprof-spill-*", recordingNote))
		if len(m) == 1 {
			spill = filepath.Dir(m[0])
		}
	}
	if spill == "" {
		cancel()
		<-done
		t.Fatal("no spill directory with its recording note appeared")
	}
	_, err := Recover(spill, filepath.Join(dir, "recovered.cuprof"), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is still running") {
		t.Errorf("Recover of a running recording: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "recovered.cuprof")); err == nil {
		t.Error("a partial trace was written")
	}
	cancel()
	<-done
	// once its cuprof is gone, the lock no longer stops recover
	if _, err := Recover(spill, filepath.Join(dir, "recovered.cuprof"), io.Discard); err != nil && strings.Contains(err.Error(), "is still running") {
		t.Errorf("Recover after the recording ended: %v", err)
	}
}
