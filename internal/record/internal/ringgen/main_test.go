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

// TestParseStructs: members are laid out by the C rules (each aligned to its
// size, the struct padded to its widest member), arrays take literal or
// CUPROF_ lengths, and what ringgen cannot lay out is refused.
func TestParseStructs(t *testing.T) {
	hdr := []byte(`#define CUPROF_NAME_MAX 5
struct cuprof_rec {
	uint8_t kind;    /* a comment */
	uint64_t start;
	/* a comment
	 * over lines */
	uint16_t api;
	char name[CUPROF_NAME_MAX];
	uint32_t pad0;
	int32_t dur;
};
`)
	defs, err := parseHeader(hdr)
	if err != nil {
		t.Fatal(err)
	}
	structs, err := parseStructs(hdr, defs)
	if err != nil {
		t.Fatal(err)
	}
	if len(structs) != 1 {
		t.Fatalf("got %+v", structs)
	}
	s := structs[0]
	want := map[string]int{"kind": 0, "start": 8, "api": 16, "name": 18, "pad0": 24, "dur": 28}
	for _, f := range s.fields {
		if want[f.name] != f.off {
			t.Errorf("%s at %d, want %d", f.name, f.off, want[f.name])
		}
		delete(want, f.name)
	}
	if len(want) != 0 || s.size != 32 {
		t.Errorf("missing %v, size %d (want 32)", want, s.size)
	}
	var b bytes.Buffer
	writeStructs(&b, structs)
	out := b.String()
	for _, line := range []string{"rOffName = 18", "sizeRec = 32", `"cuprof_rec.api": rOffAPI`, `"sizeof cuprof_rec": sizeRec`} {
		if !bytes.Contains([]byte(out), []byte(line)) {
			t.Errorf("generated code lacks %q:\n%s", line, out)
		}
	}
	if bytes.Contains([]byte(out), []byte("Pad0")) {
		t.Errorf("padding got a constant:\n%s", out)
	}
	for _, bad := range []string{
		"struct cuprof_rec {\n\tfloat x;\n};\n",
		"struct cuprof_rec {\n\tuint8_t x[CUPROF_NOPE];\n};\n",
		"struct cuprof_other {\n\tuint8_t x;\n};\n",
		"struct cuprof_rec {\n\tuint8_t x;\n} __attribute__((packed));\n",
		"struct cuprof_rec {\n\tuint8_t x, y;\n};\n",
	} {
		if _, err := parseStructs([]byte(bad), nil); err == nil {
			t.Errorf("parseStructs(%q) accepted it", bad)
		}
	}
}

// FuzzParseHeader feeds arbitrary header text to ringgen's readers of
// cuprof_ring.h (its #define constants, then its structs, then the Go file
// made of them): they refuse what they cannot read, with an error, and
// never panic.
func FuzzParseHeader(f *testing.F) {
	if b, err := os.ReadFile("../../../../cudawrap/shim/cuprof_ring.h"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("#define CUPROF_A 1\n#define CUPROF_B (1u << 4) /* b */\n#define CUPROF_S \"x\"\n" +
		"struct cuprof_x {\n\tuint32_t a;\n\tuint64_t b[CUPROF_A];\n};\n"))
	f.Add([]byte("#define CUPROF_A 1\n#define CUPROF_A 2\n"))
	f.Add([]byte("#define CUPROF_C (1 << 99)\nstruct cuprof_y { char c[CUPROF_NOPE]; };\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if defs, err := parseHeader(data); err == nil {
			parseStructs(data, defs)
		}
		generate(data)
	})
}
