package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/examples/internal/simtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestRunOnSimulatedDriver(t *testing.T) {
	lib := simtest.Use(t)
	var out bytes.Buffer
	if err := run([]string{"-n", "5", "-warmup", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(out.String(), "\n"); rows != 11 {
		t.Errorf("%d lines:\n%s", rows, out.String())
	}
	simtest.Golden(t, "output.golden", simtest.Mask(out.Bytes(), lib), *update)
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-n", "x"}, &out); err == nil {
		t.Error("no error for -n x")
	}
}
