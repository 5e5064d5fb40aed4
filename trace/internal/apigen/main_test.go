package main

import (
	"bytes"
	"os"
	"testing"
)

// TestGeneratedFilesFresh fails when trace/apis_gen.go or the shim's header
// no longer match spec/driver_apis.txt: run `go generate ./trace`.
func TestGeneratedFilesFresh(t *testing.T) {
	spec, err := os.ReadFile("../../spec/driver_apis.txt")
	if err != nil {
		t.Fatal(err)
	}
	goSrc, cSrc, err := generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{"../../apis_gen.go", goSrc}, {"../../../cudawrap/shim/cuprof_apis.h", cSrc}} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s is stale: run `go generate ./trace`", f.path)
		}
	}
}

func TestParseSpecRejectsBadRows(t *testing.T) {
	const x = "1 | cuX | init | - | - | cuX | void | - | - | - | - | - | -\n"
	for _, bad := range []string{
		"1 | cuX | init | - | - | cuX | void | - | - | - | - | -", // 12 fields
		"cuX | init | - | - | cuX | void | - | - | - | - | - | -", // no id
		x + x, // dup symbol
		x + "2 | cuY | init | - | - | cuY | void | - | - | - | - | - | -\n1 | cuX | init | - | - | cuX_v2 | void | - | - | - | - | - | -", // not contiguous
		x + "1 | cuY | init | - | - | cuY | void | - | - | - | - | - | -",                                                                 // id reused
		x + "3 | cuY | init | - | - | cuY | void | - | - | - | - | - | -",                                                                 // gap
		x + "2 | cuX | init | - | - | cuX_v2 | void | - | - | - | - | - | -",                                                              // two ids for one api
		"0 | cuX | init | - | - | cuX | void | - | - | - | - | - | -",
	} {
		if _, err := parseSpec([]byte(bad)); err == nil {
			t.Errorf("parseSpec(%q) accepted a bad table", bad)
		}
	}
}

// TestIDsNotFileOrder: ids are explicit, so a new api's rows can go in its
// category block; the tables follow the ids.
func TestIDsNotFileOrder(t *testing.T) {
	s, err := parseSpec([]byte("2 | cuB | init | - | - | cuB | void | - | - | - | - | - | -\n" +
		"1 | cuA | init | - | - | cuA | void | - | - | - | - | - | -\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.apis) != 2 || s.apis[0] != "cuA" || s.apis[1] != "cuB" {
		t.Errorf("apis by id: %v", s.apis)
	}
}

func TestArgs(t *testing.T) {
	for in, want := range map[string]string{
		"void":                            "",
		"CUcontext *pctx, unsigned int f": "pctx, f",
		"const char **pStr":               "pStr",
	} {
		if got := args(in); got != want {
			t.Errorf("args(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOutGuard(t *testing.T) {
	for in, want := range map[string]string{
		"(pctx ? *pctx : 0)": "CUPROF_OUT((pctx ? *pctx : 0), 0)",
		"(N * 4)":            "(N * 4)",
		"hStream":            "hStream",
		"(value ? ((int)attr >= 4 ? *(const unsigned long long *)value : 0) : 0)": "CUPROF_OUT((value ? ((int)attr >= 4 ? *(const unsigned long long *)value : 0) : 0), 0)",
	} {
		if got := outGuard(in, "0"); got != want {
			t.Errorf("outGuard(%q) = %q, want %q", in, got, want)
		}
	}
}
