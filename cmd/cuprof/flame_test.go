package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/flame"
	"github.com/cuprof/cuprof/internal/golden"
)

var updateFlame = golden.NewFlag("update-flame", "rewrite the flame/view/diff golden files under testdata/flame")

// flameFixture is a trace fixture of package flame.
func flameFixture(name string) string { return filepath.Join("..", "..", "flame", "testdata", name) }

// runFlameCLI runs cuprof with args and returns stdout, stderr and the error.
func runFlameCLI(args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// checkFlameGolden compares got with testdata/flame/name (-update-flame rewrites).
func checkFlameGolden(t *testing.T, name, got string) {
	t.Helper()
	updateFlame.Check(t, filepath.Join("testdata", "flame", name), []byte(got))
}

func readProfileFile(t *testing.T, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	return p
}

// scrub replaces a temporary directory in command output with $DIR.
func scrub(s, dir string) string { return strings.ReplaceAll(s, dir, "$DIR") }

func TestFlameCmd(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"nested.api", []string{flameFixture("nested.txt")}},
		{"nested.memory", []string{flameFixture("nested.txt"), "--view", "memory"}},
		{"memory.lifetime.bythread", []string{flameFixture("memory.txt"), "--view=lifetime", "--by-thread"}},
		{"nested.focus", []string{flameFixture("nested.txt"), "--focus", "my_alloc"}},
		{"unmatched.api", []string{flameFixture("unmatched.txt")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".pb.gz")
			stdout, stderr, err := runFlameCLI(append([]string{"flame", "-o", out}, tc.args...)...)
			if err != nil {
				t.Fatalf("flame: %v\n%s", err, stderr)
			}
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("profile mode = %v, want 0600", fi.Mode().Perm())
			}
			var text bytes.Buffer
			flame.WriteText(&text, readProfileFile(t, out))
			checkFlameGolden(t, tc.name+".golden", fmt.Sprintf("$ cuprof flame %s\n--- stdout\n%s--- stderr\n%s--- profile\n%s",
				strings.Join(tc.args, " "), scrub(stdout, dir), scrub(stderr, dir), text.String()))
		})
	}
}

func TestFlameCmdErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.pb.gz")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"flame", "-o", out, flameFixture("nested.txt"), "--focus", "^nothing-is-called-this$"}, "matches no frame"},
		{[]string{"flame", "-o", out, flameFixture("nested.txt"), "--view", "heap"}, "unknown view"},
		{[]string{"flame", "-o", out, flameFixture("nested.txt"), "--focus", "("}, "not a regular expression"},
		{[]string{"flame", "-o", out, filepath.Join(t.TempDir(), "missing.cuprof")}, "read trace"},
		{[]string{"flame", "-o", out}, "arg"},
		{[]string{"diff", flameFixture("nested.txt")}, "arg"},
	} {
		_, _, err := runFlameCLI(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cuprof %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestFlameGoToolPprof reads a cuprof profile with the real pprof (what
// go tool pprof runs).
func TestFlameGoToolPprof(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "nested.pb.gz")
	if _, stderr, err := runFlameCLI("flame", "-o", out, flameFixture("nested.txt")); err != nil {
		t.Fatalf("flame: %v\n%s", err, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// build the real pprof (cmd/pprof of the Go installation) once, rather
	// than have each "go tool pprof" check it is up to date
	pprofBin := filepath.Join(dir, "pprof")
	if b, err := exec.CommandContext(ctx, goBin, "build", "-o", pprofBin, "cmd/pprof").CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/pprof: %v\n%s", err, b)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-top"}, []string{"cuMemAllocAsync", "Buffer.alloc", "step", "my_alloc"}},
		{[]string{"-top", "-sample_index=calls"}, []string{"cuStreamSynchronize"}},
		// numeric labels with units: only the 1 MiB allocation is kept
		{[]string{"-top", "-tagfocus=bytes=1mb:"}, []string{"cuMemAllocAsync"}},
	} {
		cmd := exec.CommandContext(ctx, pprofBin, append(tc.args, out)...)
		cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+dir, "HOME="+dir)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pprof %v: %v\n%s", tc.args, err, b)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("pprof %v output lacks %q:\n%s", tc.args, w, b)
			}
		}
		if strings.Contains(strings.Join(tc.args, " "), "tagfocus") {
			if strings.Contains(string(b), "cuStreamSynchronize") || !strings.Contains(string(b), "988ns") {
				t.Errorf("-tagfocus=bytes=1mb: kept more than the 1 MiB allocation:\n%s", b)
			}
		}
	}
}
