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
	// strings is whether the stretch may have held a strings or code
	// section (its kind is unknown, or known to be one of them): later
	// string and code IDs may then refer to what it held.
	strings bool
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

// lostStringBytes is the number of skipped bytes that may have held
// strings or code entries: each lost one took at least one of them.
func (fr *frameResult) lostStringBytes() int {
	n := 0
	for _, d := range fr.damaged {
		if d.strings {
			n += d.bytes
		}
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
// header (payload p); it returns the section or a reason it is corrupt.
func checkSection(p []byte, s section) (section, string, int) {
	switch {
	case s.kind == secEvents:
		_, _, count, at, reason := batchHeader(p)
		if reason != "" {
			return s, reason, s.start + at
		}
		s.count = count
	case s.kind == secFooter, s.kind >= 0x80:
	case s.kind < secStrings || s.kind > secCode:
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
func frameV2(src source, checkCRC bool) (frameResult, error) {
	var fr frameResult
	size := int(src.size())
	off := headerLen
	for off < size {
		h, err := src.bytes(int64(off), sectionHeaderLen)
		if err != nil {
			return fr, err
		}
		if len(h) < sectionHeaderLen {
			reason := "damaged bytes at the end of the file"
			if m := min(len(h), len(sectionMarker)); string(h[:m]) == sectionMarker[:m] {
				reason = "file ends inside a section header"
			}
			fr.damaged = append(fr.damaged, damage{off, len(h), reason, true})
			break
		}
		kind, n, ok := parseSectionHeader(h, checkCRC)
		if !ok {
			next, err := nextSectionHeader(src, off+1, size, checkCRC)
			if err != nil {
				return fr, err
			}
			fr.damaged = append(fr.damaged, damage{off, next - off, "damaged section header", true})
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
		if end+4 > size {
			next, err := nextSectionHeader(src, start, size, checkCRC)
			if err != nil {
				return fr, err
			}
			if next == size {
				fr.damaged = append(fr.damaged, damage{off, size - off,
					fmt.Sprintf("file ends inside a %d-byte section", sectionHeaderLen+int(n)+4), true})
				break
			}
			fr.damaged = append(fr.damaged, damage{off, next - off,
				fmt.Sprintf("a %s section shorter than its length", kind), kind == secStrings || kind == secCode})
			off = next
			continue
		}
		p, err := src.bytes(int64(start), int(n)+4)
		if err != nil {
			return fr, err
		}
		if checkCRC && crc32.Checksum(p[:n], castagnoli) != binary.LittleEndian.Uint32(p[n:]) {
			next, err := nextSectionHeader(src, start, end+4, checkCRC)
			if err != nil {
				return fr, err
			}
			fr.damaged = append(fr.damaged, damage{off, next - off,
				fmt.Sprintf("checksum mismatch in a %s section", kind), kind == secStrings || kind == secCode})
			off = next
			continue
		}
		s, reason, at := checkSection(p[:n], section{kind: kind, offset: off, start: start, end: end, lostBefore: fr.lostStringBytes()})
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
			if off != size {
				return fr, &CorruptError{Offset: int64(off), Reason: fmt.Sprintf("%d bytes after the footer", size-off)}
			}
			break
		}
	}
	return fr, nil
}

// nextSectionHeader returns the offset of the first section header in src
// that starts in [off, limit) and checks out, or limit. Each candidate costs
// a header check, so the search is linear in the bytes skipped.
func nextSectionHeader(src source, off, limit int, checkCRC bool) (int, error) {
	size := int(src.size())
	for off < limit {
		// markers starting before limit, a window at a time
		n := min(windowSize, limit-off) + len(sectionMarker) - 1
		w, err := src.bytes(int64(off), n)
		if err != nil {
			return 0, err
		}
		i := bytes.Index(w, []byte(sectionMarker))
		if i < 0 {
			off += max(1, len(w)-(len(sectionMarker)-1))
			continue
		}
		off += i
		if off >= limit {
			return limit, nil
		}
		h, err := src.bytes(int64(off), sectionHeaderLen)
		if err != nil {
			return 0, err
		}
		if _, _, ok := parseSectionHeader(h, checkCRC); ok {
			return off, nil
		}
		if size-off < sectionHeaderLen {
			// A marker too close to the end for a header: the file was
			// cut inside the header of the section after the damage.
			return off, nil
		}
		off++
	}
	return limit, nil
}

// frameV1 frames the sections of a version-1 file: kind u8, payload length
// uvarint, payload, CRC-32C(payload). Version 1 cannot resynchronise: any
// damage is a *CorruptError, a cut file a damage entry for its tail.
func frameV1(src source, checkCRC bool) (frameResult, error) {
	var fr frameResult
	corrupt := func(off int, format string, args ...any) error {
		return &CorruptError{Offset: int64(off), Reason: fmt.Sprintf(format, args...)}
	}
	size := int(src.size())
	off := headerLen
	for off < size {
		// kind, then a length of at most 10 bytes: 11 bytes after the kind
		// tell a length that is too long from one that is cut.
		h, err := src.bytes(int64(off), 12)
		if err != nil {
			return fr, err
		}
		kind := sectionKind(h[0])
		l, n := binary.Uvarint(h[1:])
		if n == 0 {
			fr.damaged = append(fr.damaged, damage{off, size - off, "file ends inside a section header", true})
			break
		}
		if n < 0 || l > maxSectionLen {
			return fr, corrupt(off+1, "section length out of range")
		}
		start := off + 1 + n
		end := start + int(l)
		if end+4 > size {
			fr.damaged = append(fr.damaged, damage{off, size - off,
				fmt.Sprintf("file ends inside a %d-byte section", l+uint64(n)+5), true})
			break
		}
		p, err := src.bytes(int64(start), int(l)+4)
		if err != nil {
			return fr, err
		}
		if checkCRC && crc32.Checksum(p[:l], castagnoli) != binary.LittleEndian.Uint32(p[l:]) {
			return fr, corrupt(off, "section checksum mismatch")
		}
		s, reason, at := checkSection(p[:l], section{kind: kind, offset: off, start: start, end: end})
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
			if off != size {
				return fr, corrupt(off, "%d bytes after the footer", size-off)
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
	case secCode:
		return "code"
	case secEvents:
		return "event batch"
	case secFooter:
		return "footer"
	}
	return fmt.Sprintf("kind-%#x", byte(k))
}
