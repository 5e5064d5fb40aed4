// Package tracetest reads trace fixtures and builds synthetic traces for the
// tests and benchmarks of the analysis packages. It is for tests only.
package tracetest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// ReadText reads the text-form trace at path; any error is fatal.
func ReadText(t testing.TB, path string) *trace.Trace {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadText(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}

// ReadFile reads the trace at path in either form (trace.ReadFile); any
// error is fatal.
func ReadFile(t testing.TB, path string) *trace.Trace {
	t.Helper()
	tr, err := trace.ReadFile(path)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return tr
}

// AddTextSeeds adds every file matching pattern, except golden files
// (*.golden.txt), to f's seed corpus.
func AddTextSeeds(f *testing.F, pattern string) {
	f.Helper()
	names, err := filepath.Glob(pattern)
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".golden.txt") {
			continue
		}
		data, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}
