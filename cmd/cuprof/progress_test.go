package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cuprof/cuprof/internal/tracetest"
)

// loopFile writes a LoopTrace of iterations iterations to a file.
func loopFile(t *testing.T, iterations int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "loop.cuprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := tracetest.WriteLoop(w, iterations); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

var progressRe = regexp.MustCompile(`\r\x1b\[Kcuprof: (report|lint|profile|dump|timeline): (pass \d+, )?\d+% of \d+ events \(`)

// TestProgressOnTerminal reads a trace of 180k events with stderr a
// pseudo-terminal and the delay before the line at zero: each command draws
// its progress line and clears it at the end; with stdout the same terminal
// a dump or timeline writing there draws none (it would land inside the
// output).
func TestProgressOnTerminal(t *testing.T) {
	defer func(d time.Duration) { progressAfter = d }(progressAfter)
	progressAfter = 0
	path := loopFile(t, 20_000)
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"report", path}, true},
		{[]string{"lint", path}, true},
		{[]string{"flame", path, "-o", filepath.Join(t.TempDir(), "f.pb.gz")}, true},
		{[]string{"dump", path, "-o", filepath.Join(t.TempDir(), "d.txt")}, true},
		{[]string{"dump", path}, false},
		{[]string{"timeline", path, "-o", filepath.Join(t.TempDir(), "t.pftrace")}, true},
		{[]string{"timeline", path, "-o", "-"}, false},
	} {
		m, sl, err := newPTY()
		if err != nil {
			t.Skipf("no pseudo-terminal: %v", err)
		}
		var screen bytes.Buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			io.Copy(&screen, m)
		}()
		var stdout io.Writer = io.Discard
		if !tc.want {
			stdout = sl // the dump (timeline) streams to the terminal
		}
		err = run(tc.args, strings.NewReader(""), stdout, sl)
		sl.Close()
		<-done
		m.Close()
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got := screen.String()
		if drawn := progressRe.MatchString(got); drawn != tc.want {
			t.Errorf("%v: progress line drawn %v, want %v; the terminal got %q", tc.args, drawn, tc.want, tail(got))
		}
		if last := strings.LastIndex(got, "\r\x1b[K"); tc.want && progressRe.MatchString(got[last:]) {
			t.Errorf("%v: the progress line was not cleared at the end: %q", tc.args, tail(got))
		}
	}
}

// TestNoProgressOffTerminal: with stderr not a terminal nothing is drawn.
func TestNoProgressOffTerminal(t *testing.T) {
	defer func(d time.Duration) { progressAfter = d }(progressAfter)
	progressAfter = 0
	path := loopFile(t, 20_000)
	var stderr bytes.Buffer
	if err := run([]string{"report", path}, strings.NewReader(""), io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "cuprof: report:") || strings.Contains(stderr.String(), "\x1b[K") {
		t.Fatalf("progress drawn on a stderr that is not a terminal: %q", stderr.String())
	}
}

func tail(s string) string {
	if len(s) > 300 {
		return "..." + s[len(s)-300:]
	}
	return s
}
