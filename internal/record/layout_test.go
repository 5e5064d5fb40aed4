package record

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// TestRingLayoutMatchesC compiles a program printing the size and offset of
// every field of cuprof_ring.h and checks them against the Go constants
// ringgen laid out (ring_gen.go): the generator's layout rules against the
// compiler's.
func TestRingLayoutMatchesC(t *testing.T) {
	cc, err := exec.LookPath(testCC())
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	src := `#include <stddef.h>
#include <stdio.h>
#include "cuprof_ring.h"
#define P(s, f) printf("%s.%s %zu\n", #s, #f, offsetof(struct s, f));
int main(void) {
	printf("sizeof cuprof_thread_slot %zu\n", sizeof(struct cuprof_thread_slot));
	printf("sizeof cuprof_chunk_hdr %zu\n", sizeof(struct cuprof_chunk_hdr));
	printf("sizeof cuprof_rec %zu\n", sizeof(struct cuprof_rec));
	printf("sizeof cuprof_rec_args %zu\n", sizeof(struct cuprof_rec_args));
	printf("sizeof cuprof_rec_detail %zu\n", sizeof(struct cuprof_rec_detail));
	printf("sizeof cuprof_ring_seg %zu\n", sizeof(struct cuprof_ring_seg));
	printf("sizeof cuprof_ring_hdr %zu\n", sizeof(struct cuprof_ring_hdr));
	printf("const CUPROF_HDR_SIZE %d\n", CUPROF_HDR_SIZE);
	printf("const CUPROF_RING_MAGIC %llu\n", (unsigned long long)CUPROF_RING_MAGIC);
	printf("const CUPROF_RING_VERSION %d\n", CUPROF_RING_VERSION);
	printf("const CUPROF_EXE_MAX %d\n", CUPROF_EXE_MAX);
	printf("const CUPROF_CMDLINE_MAX %d\n", CUPROF_CMDLINE_MAX);
	printf("const CUPROF_ENV_MAX %d\n", CUPROF_ENV_MAX);
	printf("const CUPROF_PY_STATUS_MAX %d\n", CUPROF_PY_STATUS_MAX);
	printf("const CUPROF_REC_FRAME %d\n", CUPROF_REC_FRAME);
	printf("const CUPROF_FRAME_UNWOUND %d\n", CUPROF_FRAME_UNWOUND);
	printf("const CUPROF_FRAME_YIELDED %d\n", CUPROF_FRAME_YIELDED);
	printf("const CUPROF_FRAME_OPEN %d\n", CUPROF_FRAME_OPEN);
	printf("const CUPROF_CODE_PYTHON %d\n", CUPROF_CODE_PYTHON - '0');
	printf("const CUPROF_CODE_NATIVE %d\n", CUPROF_CODE_NATIVE - '0');
	CUPROF_RING_LAYOUT(P)
	return 0;
}
`
	if err := os.WriteFile(filepath.Join(dir, "layout.c"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	shim, _ := filepath.Abs("../../cudawrap/shim")
	bin := filepath.Join(dir, "layout")
	if out, err := exec.Command(cc, "-I", shim, "-o", bin, filepath.Join(dir, "layout.c")).CombinedOutput(); err != nil {
		t.Fatalf("compile: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]uint64{
		"CUPROF_HDR_SIZE": hdrSize, "CUPROF_RING_MAGIC": ringMagic, "CUPROF_RING_VERSION": ringVersion,
		"CUPROF_EXE_MAX": exeMax, "CUPROF_CMDLINE_MAX": cmdlineMax, "CUPROF_ENV_MAX": envMax,
		"CUPROF_PY_STATUS_MAX": pyStatusMax, "CUPROF_REC_FRAME": uint64(trace.KindFrame),
		"CUPROF_FRAME_UNWOUND": trace.FrameUnwound, "CUPROF_FRAME_YIELDED": trace.FrameYielded,
		"CUPROF_FRAME_OPEN": trace.FrameOpen, "CUPROF_CODE_PYTHON": uint64(trace.CodePython),
		"CUPROF_CODE_NATIVE": uint64(trace.CodeNative),
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		v, _ := strconv.ParseUint(f[len(f)-1], 10, 64)
		switch {
		case f[0] == "const":
			if consts[f[1]] != v {
				t.Errorf("%s: C %d, Go %d", f[1], v, consts[f[1]])
			}
		default:
			if f[0] == "sizeof" && f[1] == "cuprof_ring_hdr" && v > hdrSize {
				t.Errorf("struct cuprof_ring_hdr is %d bytes, more than the %d reserved", v, hdrSize)
			}
			name := strings.Join(f[:len(f)-1], " ")
			seen[name] = true
			goOff, ok := ringLayout[name]
			if !ok {
				t.Errorf("%s (C %d) has no Go constant in ringLayout", name, v)
			} else if uint64(goOff) != v {
				t.Errorf("%s: C offset %d, Go %d", name, v, goOff)
			}
		}
	}
	for name := range ringLayout {
		if !seen[name] {
			t.Errorf("ringLayout has %s, which the C header does not list", name)
		}
	}
}

// TestRecordKindsAreTraceKinds: the ring's record kinds are package trace's
// event kinds, number for number (the recorder copies the byte).
func TestRecordKindsAreTraceKinds(t *testing.T) {
	if len(ringRecKinds) == 0 {
		t.Fatal("no CUPROF_REC_* kinds generated")
	}
	// The trace names a capture range's kind capture-range (capture alone
	// is an object kind: a stream's capture state).
	textName := map[string]string{"capture": "capture-range"}
	for _, rk := range ringRecKinds {
		name := rk.name
		if n, ok := textName[name]; ok {
			name = n
		}
		k, ok := trace.ParseKind(name)
		if !ok {
			t.Errorf("CUPROF_REC_%s has no trace.Kind named %q", strings.ToUpper(rk.name), name)
		} else if uint8(k) != rk.kind {
			t.Errorf("CUPROF_REC_%s is %d, trace.Kind %s is %d", strings.ToUpper(rk.name), rk.kind, k, k)
		}
	}
}
