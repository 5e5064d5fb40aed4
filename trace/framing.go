package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// Framing: finding the sections of a file before any is decoded.
//
// A version-2 section header is
//
//	marker "\xc5SEC" | kind u8 | payload length u32 LE | CRC-32C of the 9 bytes before it, u32 LE
//
// followed by the payload and its CRC-32C. A header whose check holds gives
// a length that can be trusted, so a damaged payload costs that section
// only; a damaged header is found by its check, and the reader looks for the
// next marker whose header checks out.

// appendSectionHeader appends a version-2 section header for a payload of n
// bytes.
func appendSectionHeader(b []byte, kind sectionKind, n int) []byte {
	at := len(b)
	b = append(b, sectionMarker...)
	b = append(b, byte(kind))
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[at:], castagnoli))
}

// parseSectionHeader reads a version-2 section header from the first
// sectionHeaderLen bytes of h. ok is false when the marker or (with
// checkCRC) the header's check does not hold: the header is damaged and its
// length means nothing.
func parseSectionHeader(h []byte, checkCRC bool) (kind sectionKind, n uint32, ok bool) {
	if len(h) < sectionHeaderLen || string(h[:len(sectionMarker)]) != sectionMarker {
		return 0, 0, false
	}
	const m = len(sectionMarker)
	if checkCRC && crc32.Checksum(h[:m+5], castagnoli) != binary.LittleEndian.Uint32(h[m+5:]) {
		return 0, 0, false
	}
	return sectionKind(h[m]), binary.LittleEndian.Uint32(h[m+1:]), true
}

// damage is a stretch of a file the reader could not use.
type damage struct {
	offset, bytes int
	reason        string
}

// frameResult is what framing found: whole sections, in file order, and
// what it had to skip.
type frameResult struct {
	secs    []section
	damaged []damage // in file order; the last may be a truncated tail
	footer  bool     // a footer section was found
}

// lostBytes is the number of bytes framing skipped so far.
func (fr *frameResult) lostBytes() int {
	n := 0
	for _, d := range fr.damaged {
		n += d.bytes
	}
	return n
}

// loss summarises fr's damage, or is nil when there was none. lostEvents
// is the number of events known to be lost (from the footer), or -1.
func (fr *frameResult) loss(lostEvents int64) *Loss {
	if len(fr.damaged) == 0 {
		return nil
	}
	l := &Loss{Offset: int64(fr.damaged[0].offset), Bytes: int64(fr.lostBytes())}
	if lostEvents > 0 {
		l.Events = lostEvents
	}
	if len(fr.damaged) == 1 {
		l.Reason = fr.damaged[0].reason
		return l
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d damaged stretches skipped:", len(fr.damaged))
	for i, d := range fr.damaged {
		if i == 4 {
			fmt.Fprintf(&b, " and %d more", len(fr.damaged)-i)
			break
		}
		if i > 0 {
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, " %d bytes at %d (%s)", d.bytes, d.offset, d.reason)
	}
	l.Reason = b.String()
	return l
}

// checkSection checks a framed section's kind and, for event batches, its
// header; it returns the section or a reason it is corrupt.
func checkSection(data []byte, s section) (section, string, int) {
	switch {
	case s.kind == secEvents:
		_, _, count, at, reason := batchHeader(data[s.start:s.end])
		if reason != "" {
			return s, reason, s.start + at
		}
		s.count = count
	case s.kind == secFooter, s.kind >= 0x80:
	case s.kind < secStrings || s.kind > secDrop:
		return s, fmt.Sprintf("unknown section kind %#x (written by a newer cuprof?)", byte(s.kind)), s.offset
	}
	return s, "", 0
}

// frameV2 frames the sections of a version-2 file. Damage costs the
// damaged section: a section whose payload fails its check is skipped by
// its (checked) length; a damaged header is skipped up to the next header
// that checks out. A cut file ends with a damage entry for its tail. It
// returns a *CorruptError only for sections whose checks hold but whose
// content is impossible (a writer bug or a crafted file).
func frameV2(data []byte, checkCRC bool) (frameResult, error) {
	var fr frameResult
	off := headerLen
	for off < len(data) {
		if rest := data[off:]; len(rest) < sectionHeaderLen {
			reason := "damaged bytes at the end of the file"
			if m := min(len(rest), len(sectionMarker)); string(rest[:m]) == sectionMarker[:m] {
				reason = "file ends inside a section header"
			}
			fr.damaged = append(fr.damaged, damage{off, len(rest), reason})
			break
		}
		kind, n, ok := parseSectionHeader(data[off:], checkCRC)
		if !ok {
			next := nextSectionHeader(data, off+1, len(data), checkCRC)
			fr.damaged = append(fr.damaged, damage{off, next - off, "damaged section header"})
			off = next
			continue
		}
		if n > maxSectionLen {
			return fr, &CorruptError{Offset: int64(off), Reason: fmt.Sprintf("section length %d out of range", n)}
		}
		start := off + sectionHeaderLen
		end := start + int(n)
		// A payload that fails its check, or runs past the end of the file,
		// may have lost or gained bytes: the next section can start inside
		// it.
		if end+4 > len(data) {
			next := nextSectionHeader(data, start, len(data), checkCRC)
			if next == len(data) {
				fr.damaged = append(fr.damaged, damage{off, len(data) - off,
					fmt.Sprintf("file ends inside a %d-byte section", sectionHeaderLen+int(n)+4)})
				break
			}
			fr.damaged = append(fr.damaged, damage{off, next - off,
				fmt.Sprintf("a %s section shorter than its length", kind)})
			off = next
			continue
		}
		if checkCRC && crc32.Checksum(data[start:end], castagnoli) != binary.LittleEndian.Uint32(data[end:]) {
			next := nextSectionHeader(data, start, end+4, checkCRC)
			fr.damaged = append(fr.damaged, damage{off, next - off,
				fmt.Sprintf("checksum mismatch in a %s section", kind)})
			off = next
			continue
		}
		s, reason, at := checkSection(data, section{kind: kind, offset: off, start: start, end: end, lostBefore: fr.lostBytes()})
		if reason != "" {
			return fr, &CorruptError{Offset: int64(at), Reason: reason}
		}
		off = end + 4
		if kind >= 0x80 {
			continue // optional section of a newer writer
		}
		fr.secs = append(fr.secs, s)
		if kind == secFooter {
			fr.footer = true
			if off != len(data) {
				return fr, &CorruptError{Offset: int64(off), Reason: fmt.Sprintf("%d bytes after the footer", len(data)-off)}
			}
			break
		}
	}
	return fr, nil
}

// nextSectionHeader returns the offset of the first section header in
// data that starts in [off, limit) and checks out, or limit. Each candidate costs a header
// check, so the search is linear in the bytes skipped.
func nextSectionHeader(data []byte, off, limit int, checkCRC bool) int {
	window := min(len(data), limit+len(sectionMarker)-1) // markers starting before limit
	for off < limit {
		i := bytes.Index(data[off:window], []byte(sectionMarker))
		if i < 0 {
			return limit
		}
		off += i
		if _, _, ok := parseSectionHeader(data[off:], checkCRC); ok {
			return off
		}
		if len(data)-off < sectionHeaderLen {
			// A marker too close to the end for a header: the file was
			// cut inside the header of the section after the damage.
			return off
		}
		off++
	}
	return limit
}

// frameV1 frames the sections of a version-1 file: kind u8, payload length
// uvarint, payload, CRC-32C(payload). Version 1 cannot resynchronise: any
// damage is a *CorruptError, a cut file a damage entry for its tail.
func frameV1(data []byte, checkCRC bool) (frameResult, error) {
	var fr frameResult
	corrupt := func(off int, format string, args ...any) error {
		return &CorruptError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	off := headerLen
	for off < len(data) {
		kind := sectionKind(data[off])
		l, n := binary.Uvarint(data[off+1:])
		if n == 0 {
			fr.damaged = append(fr.damaged, damage{off, len(data) - off, "file ends inside a section header"})
			break
		}
		if n < 0 || l > maxSectionLen {
			return fr, corrupt(off+1, "section length out of range")
		}
		start := off + 1 + n
		end := start + int(l)
		if end+4 > len(data) {
			fr.damaged = append(fr.damaged, damage{off, len(data) - off,
				fmt.Sprintf("file ends inside a %d-byte section", l+uint64(n)+5)})
			break
		}
		if checkCRC && crc32.Checksum(data[start:end], castagnoli) != binary.LittleEndian.Uint32(data[end:]) {
			return fr, corrupt(off, "section checksum mismatch")
		}
		s, reason, at := checkSection(data, section{kind: kind, offset: off, start: start, end: end})
		if reason != "" {
			return fr, corrupt(at, "%s", reason)
		}
		off = end + 4
		if kind >= 0x80 {
			continue // optional section of a newer writer
		}
		fr.secs = append(fr.secs, s)
		if kind == secFooter {
			fr.footer = true
			if off != len(data) {
				return fr, corrupt(off, "%d bytes after the footer", len(data)-off)
			}
			break
		}
	}
	return fr, nil
}

// String names a section kind, for messages.
func (k sectionKind) String() string {
	switch k {
	case secStrings:
		return "strings"
	case secMeta:
		return "metadata"
	case secGPU:
		return "GPU"
	case secProcess:
		return "process"
	case secThread:
		return "thread"
	case secMapping:
		return "mapping"
	case secSymbol:
		return "symbol"
	case secDrop:
		return "drop"
	case secEvents:
		return "event batch"
	case secFooter:
		return "footer"
	}
	return fmt.Sprintf("kind-%#x", byte(k))
}
