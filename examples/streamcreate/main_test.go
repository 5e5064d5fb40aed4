package main

import (
	"bytes"
	"flag"
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
	simtest.Golden(t, "output.golden", simtest.Mask(out.Bytes(), lib), *update)
}

func TestOptionsValidation(t *testing.T) {
	p := 3
	if err := (&StreamOptions{Priority: &p}).validate(); err == nil {
		t.Error("priority 3 accepted")
	}
	p = -1
	if err := (&StreamOptions{Priority: &p}).validate(); err != nil {
		t.Error(err)
	}
}
