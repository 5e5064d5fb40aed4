package record

import (
	"errors"
	"testing"
)

func TestSpillHeaderRoundTrip(t *testing.T) {
	h := spillHeader{pid: 42, clock: clockTSC, tick0: 1 << 40, mono0: 123456789, wall0: 987654321,
		boot: "0f3c2a9e-1111-2222-3333-444455556666", ring: "/dev/shm/cuprof-0/record-1/rings/42-1-0.ring"}
	b := appendSpillHeader(nil, h)
	got, n, err := parseSpillHeader(append(b, "trace bytes"...))
	if err != nil || got != h || n != len(b) {
		t.Fatalf("parse: %+v, %d, %v; want %+v, %d", got, n, err, h, len(b))
	}
	if _, _, err := parseSpillHeader([]byte("CUPROF\x00\x01 not a spill")); !errors.Is(err, errNotSpill) {
		t.Errorf("a trace's start: %v, want errNotSpill", err)
	}
	for i := 0; i < len(b); i++ {
		if _, _, err := parseSpillHeader(b[:i]); err == nil {
			t.Errorf("header cut at %d of %d bytes parsed", i, len(b))
		}
	}
}

// FuzzSpillHeader: any bytes are a header or an error, never a panic, and
// a header read back encodes to what was read.
func FuzzSpillHeader(f *testing.F) {
	f.Add(appendSpillHeader(nil, spillHeader{pid: 1, clock: 2, boot: "b", ring: "/r"}))
	f.Add([]byte(spillMagic + "\x01\x00\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := parseSpillHeader(b)
		if err != nil {
			return
		}
		if n > len(b) || n > maxSpillHeader {
			t.Fatalf("header length %d of %d bytes", n, len(b))
		}
		again, m, err := parseSpillHeader(appendSpillHeader(nil, h))
		if err != nil || again != h || m > n {
			t.Fatalf("re-encoded %+v: %+v, %d, %v", h, again, m, err)
		}
	})
}
