package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary be cuprof itself (CUPROF_TEST_AS_CUPROF=1),
// for tests that need cuprof as a process of its own: in a new session, in
// a process group a test can signal.
func TestMain(m *testing.M) {
	if os.Getenv("CUPROF_TEST_AS_CUPROF") == "1" {
		// A host of its own (job_test.go): the test made a UTS namespace.
		if h := os.Getenv("CUPROF_TEST_HOSTNAME"); h != "" {
			if err := syscall.Sethostname([]byte(h)); err != nil {
				fmt.Fprintln(os.Stderr, "sethostname:", err)
				os.Exit(3)
			}
			// A host's own shell (job_test.go): its script runs cuprof
			// (this binary) for each rank of the host.
			if script := os.Getenv("CUPROF_TEST_HOST_SCRIPT"); script != "" {
				sh, _ := exec.LookPath("sh")
				env := []string{}
				for _, kv := range os.Environ() {
					if !strings.HasPrefix(kv, "CUPROF_TEST_HOST_SCRIPT=") {
						env = append(env, kv)
					}
				}
				err := syscall.Exec(sh, []string{"sh", "-c", script}, env)
				fmt.Fprintln(os.Stderr, "exec sh:", err)
				os.Exit(3)
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sigcount counts the SIGINTs it handles, appending "int N" to its file at
// each, and prints the count when SIGTERM ends it.
const sigcount = `#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t ints, term;
static void onint(int s) { (void)s; ints++; }
static void onterm(int s) { (void)s; term = 1; }
int main(int argc, char **argv) {
	struct sigaction sa = {0};
	sa.sa_handler = onint;
	sigaction(SIGINT, &sa, 0);
	sa.sa_handler = onterm;
	sigaction(SIGTERM, &sa, 0);
	int seen = 0;
	FILE *f = fopen(argv[1], "w");
	fprintf(f, "pid %d\nready\n", (int)getpid());
	fflush(f);
	while (!term) {
		if (ints != seen) {
			seen = ints;
			fprintf(f, "int %d\n", seen);
			fflush(f);
		}
		usleep(1000);
	}
	printf("ints=%d\n", (int)ints);
	return 0;
}
`

// waitFor polls path until it contains want, or fails at the deadline.
func waitFor(t *testing.T, path, want string, deadline time.Duration) {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%s never said %q (it has %q)", path, want, b)
}

// waitForOrExit polls path until it contains want (true), or until the
// command reports its end on done (false, the end put back on done), or
// fails at the deadline after kill.
func waitForOrExit(t *testing.T, path, want string, done chan error, deadline time.Duration, kill func()) bool {
	t.Helper()
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return true
		}
		select {
		case err := <-done:
			if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
				done <- err
				return true
			}
			done <- err
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	kill()
	b, _ := os.ReadFile(path)
	t.Fatalf("%s never said %q (it has %q)", path, want, b)
	return false
}

// TestGroupSIGINTWithoutTerminalReachesTheProgramOnce: cuprof record in a
// session of its own (setsid: no controlling terminal), and a SIGINT sent
// to its whole process group, as a supervisor or kill -INT -PGID sends it:
// the program handles it once, not once from the sender and once more
// forwarded by cuprof.
func TestGroupSIGINTWithoutTerminalReachesTheProgramOnce(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "sigcount.c")
	prog := filepath.Join(dir, "sigcount")
	os.WriteFile(src, []byte(sigcount), 0o600)
	if out, err := exec.Command("cc", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	cmd := exec.Command(setsid, self, "record", "--sim", "-q", "--python", "off", "-o", filepath.Join(dir, "t.cuprof"), "--", prog, state)
	cmd.Env = append(os.Environ(), "CUPROF_TEST_AS_CUPROF=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()
	waitFor(t, state, "ready", 2*time.Minute)
	pgid, err := syscall.Getpgid(cmd.Process.Pid)
	if err != nil || pgid != cmd.Process.Pid {
		t.Fatalf("cuprof is not its own process group's leader (pgid %d, %v): setsid did not make a session", pgid, err)
	}
	// The program leads a group of its own, so nothing sent to cuprof's
	// group reaches it but what cuprof forwards.
	var child int
	b, _ := os.ReadFile(state)
	fmt.Sscanf(string(b), "pid %d", &child)
	if cpg, err := syscall.Getpgid(child); err != nil || cpg == pgid || cpg != child {
		t.Errorf("the program (pid %d) is in process group %d (%v), want a group of its own, not cuprof's %d", child, cpg, err, pgid)
	}
	// Several rounds: a duplicate can merge with the original while both
	// are pending; over five rounds that hides none.
	const rounds = 5
	for i := 1; i <= rounds; i++ {
		// cuprof takes a signal repeated within record's echo window
		// (50 ms) for the group's echo of the one before: space them.
		time.Sleep(100 * time.Millisecond)
		if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		waitFor(t, state, fmt.Sprintf("int %d\n", i), time.Minute)
	}
	// A second copy of the SIGINT, had cuprof forwarded one on top of the
	// group's, would be delivered before this SIGTERM (cuprof forwards in
	// order, and a pending SIGINT is delivered before a pending SIGTERM).
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cuprof record: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("cuprof record did not end after SIGTERM")
	}
	if got, want := strings.TrimSpace(stdout.String()), fmt.Sprintf("ints=%d", rounds); got != want {
		t.Errorf("the program handled %q SIGINTs after %d group-wide ones, want %s (stderr %q)", got, rounds, want, stderr.String())
	}
}

// TestRecordMissingProgramSaysNothingElse: 127 and one line, before the
// "recording" line or any work.
func TestRecordMissingProgramSaysNothingElse(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.cuprof")
	var so, se bytes.Buffer
	err := run([]string{"record", "-o", out, "--", "cuprof-no-such-program"}, nil, &so, &se)
	if code, msg := exitStatus(err); code != exitNotFound || !strings.Contains(msg, "no such program") {
		t.Errorf("exit %d %q, want 127", code, msg)
	}
	if se.Len() != 0 || so.Len() != 0 {
		t.Errorf("said more than its error: stdout %q stderr %q", so.String(), se.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
}

// TestTimeoutSIGINTReachesTheProgramOnce: timeout -s INT signals cuprof and
// then its own process group, cuprof included: two copies a few
// microseconds apart, which cuprof forwards as one.
func TestTimeoutSIGINTReachesTheProgramOnce(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	setsid, err1 := exec.LookPath("setsid")
	timeout, err2 := exec.LookPath("timeout")
	if err1 != nil || err2 != nil {
		t.Skip("no setsid or timeout")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "sigcount.c")
	prog := filepath.Join(dir, "sigcount")
	os.WriteFile(src, []byte(sigcount), 0o600)
	if out, err := exec.Command("cc", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	self, _ := os.Executable()
	// timeout signals after its delay, whatever the program is doing then.
	// On a loaded machine the delay can pass before cuprof has started the
	// program (its state file then never says "ready"): that run shows
	// nothing about forwarding, so it is made again with a longer delay.
	for i, delay := range []string{"1", "4", "16", "64"} {
		state := filepath.Join(dir, fmt.Sprintf("state%d", i))
		cmd := exec.Command(setsid, timeout, "-s", "INT", delay, self, "record", "--sim", "-q", "--python", "off",
			"-o", filepath.Join(dir, fmt.Sprintf("t%d.cuprof", i)), "--", prog, state)
		cmd.Env = append(os.Environ(), "CUPROF_TEST_AS_CUPROF=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if !waitForOrExit(t, state, "int 1\n", done, 2*time.Minute, kill) {
			if b, _ := os.ReadFile(state); strings.Contains(string(b), "ready") {
				t.Fatalf("the program was ready, yet the run ended without its SIGINT (state %q, stdout %q, stderr %q)", b, stdout.String(), stderr.String())
			}
			t.Logf("timeout -s INT %s fired before the program was ready; again with a longer delay", delay)
			continue
		}
		// SIGTERM to timeout ends the run (timeout passes it on); cuprof
		// forwards in order, so a duplicate SIGINT would reach the program
		// before it.
		syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(time.Minute):
			kill()
			t.Fatal("timeout cuprof record did not end after SIGTERM")
		}
		if got := strings.TrimSpace(stdout.String()); got != "ints=1" {
			t.Errorf("the program handled %q SIGINTs from timeout -s INT, want ints=1 (stderr %q)", got, stderr.String())
		}
		return
	}
	t.Fatal("timeout fired before the program was ready at every delay up to 64 s")
}
