package main

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/cudawrap/shim"
	"github.com/cuprof/cuprof/cudawrap/sim"
	"github.com/cuprof/cuprof/internal/cbuild/cbuildtest"
)

// recordOnTerminal runs cuprof record with a pseudo-terminal as its stdout
// and stderr, and returns every byte the terminal received.
func recordOnTerminal(t *testing.T, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	m, sl, err := newPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer m.Close()
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&screen, m) // ends with EIO when sl closes
	}()
	out := filepath.Join(t.TempDir(), "t.cuprof")
	err = run(append([]string{"record", "--sim", "-o", out}, args...), nil, sl, sl)
	sl.Close()
	<-done
	if err != nil {
		t.Fatalf("record: %v\n%q", err, screen.String())
	}
	return screen.String()
}

// The program of the issue: a progress line redrawn with \r, a pause long
// enough for several status updates, then more output.
const progressProgram = `printf "epoch 50%%"; sleep 1; printf "\rdone\n"; sleep 1; echo more`

var statusRe = regexp.MustCompile(`\r\x1b\[Kcuprof: \d+ events \(`)

const compileNotice = "cuprof: compiling the capture shim"

// standInCompiler sets CC to a stand-in compiler whose builds are copies of
// the real shim, calibrator and simulated driver (built, or taken from the
// cache, with the real compiler first), and returns it.
func standInCompiler(t *testing.T) *cbuildtest.Compiler {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	ctx := context.Background()
	shimPath, err := shim.Library(ctx)
	if err != nil {
		t.Fatal(err)
	}
	simDir, err := sim.Driver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cc := cbuildtest.New(t, map[string]string{shim.LibraryName: shimPath,
		shim.CalibratorName: filepath.Join(filepath.Dir(shimPath), shim.CalibratorName),
		sim.Soname:          filepath.Join(simDir, sim.Soname)}, cbuildtest.Options{})
	t.Setenv("CC", cc.Path)
	return cc
}

func TestStatusNeverDrawsOverTheProgram(t *testing.T) {
	// A fresh cache: the first run builds the C parts and says so once,
	// on a terminal. The builds are the stand-in compiler's copies of the
	// real ones: what is tested is the notice, not the compiler.
	cc := standInCompiler(t)
	t.Setenv("CUPROF_CACHE_DIR", t.TempDir())
	screen := recordOnTerminal(t, "--", "sh", "-c", progressProgram)
	if n := strings.Count(screen, compileNotice); n != 1 || cc.Count(shim.LibraryName) != 1 {
		t.Errorf("compile notice %d times for builds %v:\n%q", n, cc.Builds(), screen)
	}
	built := len(cc.Builds())
	if again := recordOnTerminal(t, "--", "sh", "-c", "true"); strings.Contains(again, compileNotice) || len(cc.Builds()) != built {
		t.Errorf("compile notice or builds %v with a warm cache:\n%q", cc.Builds()[built:], again)
	}
	if !strings.Contains(screen, "epoch 50%\rdone\r\nmore\r\n") {
		t.Errorf("the program's output was changed:\n%q", screen)
	}
	if statusRe.MatchString(screen) {
		t.Errorf("a status line was drawn on the program's terminal:\n%q", screen)
	}
	// The start line comes once the recording can start: after the
	// compile notice on a fresh cache.
	start := screen
	if strings.HasPrefix(start, compileNotice) {
		_, start, _ = strings.Cut(start, "\n")
	}
	if !strings.HasPrefix(start, "cuprof: recording sh -c") || !strings.Contains(screen, "written to ") {
		t.Errorf("no start line or summary:\n%q", screen)
	}
}

func TestProgressDrawsOnlyBetweenTheProgramsLines(t *testing.T) {
	screen := recordOnTerminal(t, "--progress", "--", "sh", "-c", progressProgram)
	// With the status lines taken out, the program's bytes are unchanged.
	clean := statusRe.ReplaceAllString(screen, "\x00")
	clean = regexp.MustCompile("\x00[^\r\x00]*").ReplaceAllString(clean, "")
	clean = strings.ReplaceAll(clean, "\r\x1b[K", "")
	if !strings.Contains(clean, "epoch 50%\rdone\r\nmore\r\n") {
		t.Errorf("the program's output was changed:\n%q\nscreen %q", clean, screen)
	}
	locs := statusRe.FindAllStringIndex(screen, -1)
	if len(locs) == 0 {
		t.Fatalf("--progress drew no status:\n%q", screen)
	}
	for _, l := range locs {
		// Drawn at the start of a line: after the program's newline or
		// over the previous status.
		before := screen[:l[0]]
		if !strings.HasSuffix(before, "\n") && !regexp.MustCompile(`cuprof: \d+ events \([^\r]*$`).MatchString(before) {
			t.Errorf("status drawn mid-line at %d:\n%q", l[0], screen)
		}
	}
	// Cleared before the program's next output.
	if i := strings.Index(screen, "more"); i < 2 || screen[i-4:i] != "\r\x1b[K" {
		t.Errorf("status not cleared before the program wrote:\n%q", screen)
	}
}
