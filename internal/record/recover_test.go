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

	"github.com/cuprof/cuprof/trace"
)

// recorderProcess runs Run as the test binary's only job, for tests that
// kill the recorder: the program and its arguments in
// CUPROF_TEST_RECORDER_ARGS (separated by \x1f), the mode in
// CUPROF_TEST_RECORDER_EXIT.
func recorderProcess(out string) {
	argv := strings.Split(os.Getenv("CUPROF_TEST_RECORDER_ARGS"), "\x1f")
	mode, _ := ParseOnRecorderExit(os.Getenv("CUPROF_TEST_RECORDER_EXIT"))
	_, err := Run(context.Background(), argv, WithSim(true), WithOutput(out),
		WithStdio(nil, os.Stdout, os.Stderr), WithOnRecorderExit(mode))
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

// killRecorder starts a recorder of killme in a process of its own, waits
// until the program made its calls and they were drained, SIGKILLs the
// recorder and returns the program's pid and the output path.
func killRecorder(t *testing.T, mode OnRecorderExit, rings string) (pid int, out string) {
	t.Helper()
	bins, _ := programs(t)
	out = filepath.Join(t.TempDir(), "out.cuprof")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CUPROF_TEST_RECORDER_OUT="+out,
		"CUPROF_TEST_RECORDER_ARGS="+filepath.Join(bins, "killme")+"\x1f5000",
		"CUPROF_TEST_RECORDER_EXIT="+string(mode), "CUPROF_TMPDIR="+rings)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "ready" {
			pid, _ = strconv.Atoi(f[1])
			break
		}
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the program never said it was ready")
	}
	go io.Copy(io.Discard, stdout)
	time.Sleep(300 * time.Millisecond) // several polls: everything is drained
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid, out
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

// TestRecorderKilledStopsProgramAndRecovers is issue 14's SIGKILL of cuprof
// itself: the program is told (SIGTERM, by default), the rings' memory is
// the kernel's to free (no ring file is left), and `cuprof recover` turns
// the spill directory into a trace holding every call drained before.
func TestRecorderKilledStopsProgramAndRecovers(t *testing.T) {
	rings := t.TempDir()
	pid, out := killRecorder(t, RecorderExitStop, rings)
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the program (pid %d) still runs after its recorder was killed", pid)
	}
	left, _ := filepath.Glob(filepath.Join(rings, "*", "*", "*.ring"))
	if len(left) > 0 {
		t.Errorf("ring files left after the recorder was killed: %v", left)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an output exists although the recorder was killed: %v", err)
	}
	var notes strings.Builder
	rec := filepath.Join(t.TempDir(), "recovered.cuprof")
	res, err := Recover(spillDirOf(t, out), rec, &notes)
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
	start, end := tr.Events[0].Start, tr.Events[len(tr.Events)-1].End
	if span := time.Duration(end - start); span <= 0 || span > 2*time.Second {
		t.Errorf("recovered events span %v: the clock is off", span)
	}
}

// TestRecorderKilledContinue: with --on-recorder-exit=continue the program
// runs on when its recorder dies.
func TestRecorderKilledContinue(t *testing.T) {
	pid, _ := killRecorder(t, RecorderExitContinue, t.TempDir())
	time.Sleep(500 * time.Millisecond)
	if !alive(pid) {
		t.Errorf("the program stopped although it was to continue")
	}
}

// TestRecoverErrors: a directory without spill files, and files that are not spills.
func TestRecoverErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Recover(dir, filepath.Join(dir, "o.cuprof"), io.Discard); err == nil || !strings.Contains(err.Error(), "no spill files") {
		t.Errorf("empty dir: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "ring-0.spill"), []byte("junk"), 0o600)
	var notes strings.Builder
	if _, err := Recover(dir, filepath.Join(dir, "o.cuprof"), &notes); err == nil || !strings.Contains(notes.String(), "skipping") {
		t.Errorf("junk spill: %v, notes %q", err, notes.String())
	}
}
