package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordSaysRecordingOnlyOnceStarted: "cuprof: recording X into Y" was
// printed before record's set-up, which could still refuse to start (here:
// no working directory can be made); it is printed right before the program
// starts, and a set-up that fails says only its error.
func TestRecordSaysRecordingOnlyOnceStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the shim")
	}
	dir := t.TempDir()
	t.Setenv("CUPROF_TMPDIR", filepath.Join(dir, "missing", "rings"))
	var stdout, stderr bytes.Buffer
	err := run([]string{"record", "--sim", "-o", filepath.Join(dir, "out.cuprof"), "--", "true"}, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "create working directory") {
		t.Fatalf("record with no room for its working directory: %v", err)
	}
	if strings.Contains(stderr.String(), "cuprof: recording") {
		t.Errorf("record said it was recording, then refused to start:\n%s", stderr.String())
	}

	t.Setenv("CUPROF_TMPDIR", dir)
	stderr.Reset()
	if err := run([]string{"record", "--sim", "-o", filepath.Join(dir, "out.cuprof"), "--", "true"}, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stderr.String(), "cuprof: recording true into "+filepath.Join(dir, "out.cuprof")) {
		t.Errorf("stderr does not start with the recording line:\n%s", stderr.String())
	}
}
