package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A spill file starts with a header of its own, then holds a .cuprof trace
// (package trace's binary form) of the records the drainer read:
//
//	magic    8 bytes  "CUPSPILL"
//	version  uint32   spillVersion
//	length   uint32   bytes of the header after this field
//	pid      uint32   the ring's process
//	clock    uint32   the ring's clock (CUPROF_CLOCK_*)
//	tick0    uint64   the ring's clock anchor: one instant on its clock,
//	mono0    uint64   CLOCK_MONOTONIC
//	wall0    uint64   and CLOCK_REALTIME
//	boot     uvarint length + bytes: the boot the ring's TSC counts in
//	ring     uvarint length + bytes: the ring file's path
//
// all little-endian. A reader skips bytes of the header it does not know
// (a later version's fields come after these).

const (
	spillMagic   = "CUPSPILL"
	spillVersion = 1
	// maxSpillHeader bounds the header: the ring's path is at most a
	// PATH_MAX, the boot id 36 bytes.
	maxSpillHeader = 8 << 10
)

// spillHeader is what a spill file says of its ring.
type spillHeader struct {
	pid, clock          uint32
	tick0, mono0, wall0 uint64
	boot, ring          string
}

// errNotSpill says a file is not a spill file.
var errNotSpill = errors.New("not a cuprof spill file")

// appendSpillHeader appends h's encoding to b.
func appendSpillHeader(b []byte, h spillHeader) []byte {
	var body []byte
	body = binary.LittleEndian.AppendUint32(body, h.pid)
	body = binary.LittleEndian.AppendUint32(body, h.clock)
	body = binary.LittleEndian.AppendUint64(body, h.tick0)
	body = binary.LittleEndian.AppendUint64(body, h.mono0)
	body = binary.LittleEndian.AppendUint64(body, h.wall0)
	for _, s := range []string{h.boot, h.ring} {
		body = binary.AppendUvarint(body, uint64(len(s)))
		body = append(body, s...)
	}
	b = append(b, spillMagic...)
	b = binary.LittleEndian.AppendUint32(b, spillVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
	return append(b, body...)
}

// parseSpillHeader reads the header at the start of b and returns it with
// the header's length (where the trace starts). b holds at least the
// whole header (at most maxSpillHeader bytes), or the file's every byte.
func parseSpillHeader(b []byte) (spillHeader, int, error) {
	var h spillHeader
	if len(b) < 16 || string(b[:8]) != spillMagic {
		return h, 0, errNotSpill
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != spillVersion {
		return h, 0, fmt.Errorf("spill file version %d: this cuprof reads version %d (recover with the cuprof that recorded)", v, spillVersion)
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if n > maxSpillHeader-16 || int(n) > len(b)-16 {
		return h, 0, fmt.Errorf("spill header of %d bytes: cut short or corrupt", n)
	}
	body := b[16 : 16+n]
	const fixed = 4 + 4 + 8 + 8 + 8
	if len(body) < fixed {
		return h, 0, fmt.Errorf("spill header of %d bytes: want at least %d", len(body), fixed)
	}
	h.pid = binary.LittleEndian.Uint32(body)
	h.clock = binary.LittleEndian.Uint32(body[4:])
	h.tick0 = binary.LittleEndian.Uint64(body[8:])
	h.mono0 = binary.LittleEndian.Uint64(body[16:])
	h.wall0 = binary.LittleEndian.Uint64(body[24:])
	rest := body[fixed:]
	for _, s := range []*string{&h.boot, &h.ring} {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return h, 0, errors.New("spill header: a string runs past its end")
		}
		*s = string(rest[k : k+int(l)])
		rest = rest[k+int(l):]
	}
	return h, 16 + int(n), nil
}
