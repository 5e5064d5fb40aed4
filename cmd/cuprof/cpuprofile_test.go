package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// TestCPUProfileEnv checks that CUPROF_CPUPROFILE writes a private, readable
// pprof profile, and that it refuses a file that exists (a planted link
// included) with a message on stderr, leaving the file as it was.
func TestCPUProfileEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cpu.prof")
	t.Setenv(cpuProfileEnv, path)
	var stderr bytes.Buffer
	stop := startCPUProfile(&stderr)
	stop()
	if stderr.Len() != 0 {
		t.Fatalf("stderr: %s", stderr.String())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("profile mode %v, want 0600", fi.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := profile.Parse(f); err != nil {
		t.Errorf("the profile does not parse: %v", err)
	}

	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.prof")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, link} {
		t.Setenv(cpuProfileEnv, p)
		stderr.Reset()
		startCPUProfile(&stderr)()
		if !strings.Contains(stderr.String(), cpuProfileEnv) {
			t.Errorf("%s: stderr %q does not name %s", p, stderr.String(), cpuProfileEnv)
		}
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Errorf("the link's target was written: %q", data)
	}
}
