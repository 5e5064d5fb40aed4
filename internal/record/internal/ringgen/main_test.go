package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedFileFresh fails when internal/record/ring_gen.go no longer
// matches cuprof_ring.h: run `go generate ./internal/record`.
func TestGeneratedFileFresh(t *testing.T) {
	header, err := os.ReadFile("../../../../cudawrap/shim/cuprof_ring.h")
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(header)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../ring_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("internal/record/ring_gen.go is stale: run `go generate ./internal/record`")
	}
}

func TestParseHeader(t *testing.T) {
	defs, err := parseHeader([]byte(`#ifndef CUPROF_RING_H
#define CUPROF_RING_H
#define CUPROF_RING_MAGIC 0x31474e4952464f52ULL /* "ROFRING1" */
#define CUPROF_STRINGS_SIZE (1u << 20)
#define CUPROF_CLOCK_TSC 1       /* rdtsc ticks */
#define CUPROF_CODE_PYTHON '1'
#define CUPROF_RING_LAYOUT(X) X(a, b) \
	X(c, d)
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []define{
		{name: "RING_MAGIC", value: 0x31474e4952464f52, literal: "0x31474e4952464f52ULL", comment: `"ROFRING1"`},
		{name: "STRINGS_SIZE", value: 1 << 20, literal: "(1u << 20)"},
		{name: "CLOCK_TSC", value: 1, comment: "rdtsc ticks"},
		{name: "CODE_PYTHON", value: '1', literal: "'1'"},
	}
	if len(defs) != len(want) {
		t.Fatalf("got %+v", defs)
	}
	for i := range want {
		if defs[i] != want[i] {
			t.Errorf("define %d: %+v, want %+v", i, defs[i], want[i])
		}
	}
	for _, bad := range []string{"#define CUPROF_X foo(1)\n", "#define CUPROF_X 1\n#define CUPROF_X 2\n"} {
		if _, err := parseHeader([]byte(bad)); err == nil {
			t.Errorf("parseHeader(%q) accepted it", bad)
		}
	}
	for in, want := range map[string]string{"RING_MAGIC": "ringMagic", "CLOCK_TSC": "clockTSC",
		"HDR_SIZE": "hdrSize", "REC_NAME": "recName", "PY_STATUS_MAX": "pyStatusMax"} {
		if got := goName(in); got != want {
			t.Errorf("goName(%s) = %s, want %s", in, got, want)
		}
	}
}
