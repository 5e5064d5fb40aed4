package otlp

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Spans are written straight into their wire form (protowire appends), not
// built as generated messages and marshalled: a span then costs no
// allocation and no reflection. The fields are written in field-number
// order and left out at their zero value where proto3 leaves them out, as
// proto.Marshal writes them, so the bytes are those the generated messages
// would encode (encode_test.go checks the field numbers against the
// generated descriptors, and the spans against proto.Marshal's).

// Field numbers of the OTLP messages written here (opentelemetry-proto's
// trace/v1/trace.proto, common/v1/common.proto).
const (
	fieldRequestResourceSpans = 1 // ExportTraceServiceRequest (collector/trace/v1/trace_service.proto)

	fieldResourceSpansResource   = 1
	fieldResourceSpansScopeSpans = 2
	fieldResourceSpansSchemaURL  = 3

	fieldScopeSpansScope     = 1
	fieldScopeSpansSpans     = 2
	fieldScopeSpansSchemaURL = 3

	fieldSpanTraceID    = 1
	fieldSpanSpanID     = 2
	fieldSpanParentID   = 4
	fieldSpanName       = 5
	fieldSpanKind       = 6
	fieldSpanStart      = 7
	fieldSpanEnd        = 8
	fieldSpanAttributes = 9
	fieldSpanEvents     = 11
	fieldSpanLinks      = 13
	fieldSpanStatus     = 15

	fieldEventTime       = 1
	fieldEventName       = 2
	fieldEventAttributes = 3

	fieldLinkTraceID    = 1
	fieldLinkSpanID     = 2
	fieldLinkAttributes = 4

	fieldStatusMessage = 2
	fieldStatusCode    = 3

	fieldKeyValueKey   = 1
	fieldKeyValueValue = 2

	fieldAnyString = 1
	fieldAnyBool   = 2
	fieldAnyInt    = 3
)

// OTLP enum values written here.
const (
	spanKindInternal = 1
	spanKindClient   = 3
	statusCodeError  = 2
)

// tag is a field's tag in one byte (every field number written here is
// below 16).
func tag(num protowire.Number, typ protowire.Type) byte { return byte(protowire.EncodeTag(num, typ)) }

// Tags of the fields written most.
var (
	tagSpanAttributes = tag(fieldSpanAttributes, protowire.BytesType)
	tagEventAttrs     = tag(fieldEventAttributes, protowire.BytesType)
	tagLinkAttrs      = tag(fieldLinkAttributes, protowire.BytesType)
	tagAnyString      = tag(fieldAnyString, protowire.BytesType)
	tagAnyInt         = tag(fieldAnyInt, protowire.VarintType)
	tagAnyBool        = tag(fieldAnyBool, protowire.VarintType)
	tagKeyValueValue  = tag(fieldKeyValueValue, protowire.BytesType)
	tagScopeSpans     = tag(fieldScopeSpansSpans, protowire.BytesType)
	tagSpanID         = tag(fieldSpanSpanID, protowire.BytesType)
	tagParentID       = tag(fieldSpanParentID, protowire.BytesType)
	tagSpanStart      = tag(fieldSpanStart, protowire.Fixed64Type)
	tagSpanEnd        = tag(fieldSpanEnd, protowire.Fixed64Type)
)

// appendUvarint is protowire.AppendVarint, inlined for the values below
// 128 that most lengths and attribute values are.
func appendUvarint(b []byte, v uint64) []byte {
	if v < 1<<7 {
		return append(b, byte(v))
	}
	return appendUvarintLong(b, v)
}

func appendUvarintLong(b []byte, v uint64) []byte {
	if v < 1<<14 {
		return append(b, byte(v)|0x80, byte(v>>7))
	}
	return protowire.AppendVarint(b, v)
}

// attrKey is an attribute's key encoded. kv is the start of its KeyValue:
// the key field and the value field's tag. hex[n] is everything
// appendHexAttr writes of a span attribute (tagSpanAttributes) before its
// n hex digits (n 1 to 16), ints[n] everything appendIntAttr writes of one
// before its value's n varint bytes (n 1 to 10): one copy of a prefix made
// once instead of the tag, lengths, key and value's head appended one by
// one for every span.
type attrKey struct {
	kv   []byte
	hex  [17]piece
	ints [11]piece
}

func newAttrKey(k string) *attrKey {
	a := &attrKey{kv: append(appendLenField(nil, fieldKeyValueKey, len(k)), k...)}
	a.kv = append(a.kv, tagKeyValueValue)
	for n := 1; n < len(a.hex); n++ {
		a.hex[n] = newPiece(appendHexAttrHead(nil, tagSpanAttributes, a.kv, n))
	}
	for n := 1; n < len(a.ints); n++ {
		a.ints[n] = newPiece(appendIntAttrHead(nil, tagSpanAttributes, a.kv, n))
	}
	return a
}

// Keys of span and event attributes.
var (
	keyAPI         = newAttrKey(AttrAPI)
	keyCategory    = newAttrKey(AttrCategory)
	keyResult      = newAttrKey(AttrResult)
	keyResultCode  = newAttrKey(AttrResultCode)
	keyBytes       = newAttrKey(AttrBytes)
	keyStream      = newAttrKey(AttrStream)
	keyHandle      = newAttrKey(AttrHandle)
	keyAux         = newAttrKey(AttrAux)
	keyFlags       = newAttrKey(AttrFlags)
	keyDevice      = newAttrKey(AttrDevice)
	keyObjectKind  = newAttrKey(AttrObjectKind)
	keyObjectRole  = newAttrKey(AttrObjectRole)
	keyCaller      = newAttrKey(AttrCaller)
	keyThreadID    = newAttrKey(AttrThreadID)
	keyThreadName  = newAttrKey(AttrThreadName)
	keyCodeFunc    = newAttrKey(AttrCodeFunc)
	keyCodeFile    = newAttrKey(AttrCodeFile)
	keyCodeLine    = newAttrKey(AttrCodeLine)
	keyFrameKind   = newAttrKey(AttrFrameKind)
	keyFrameEnd    = newAttrKey(AttrFrameEnd)
	keyFrameSelf   = newAttrKey(AttrFrameSelf)
	keyFrameDriver = newAttrKey(AttrFrameDriver)
	keyRangeDomain = newAttrKey(AttrRangeDomain)
	keyRangeKind   = newAttrKey(AttrRangeKind)
	keyRangeUnterm = newAttrKey(AttrRangeUnterminated)
	keyObjectName  = newAttrKey(AttrObjectName)
	keyPool        = newAttrKey(AttrPool)
	keyLeaked      = newAttrKey(AttrObjectLeaked)
	keyObjectEnd   = newAttrKey(AttrObjectEnd)
	keyLinkRole    = newAttrKey(AttrLinkRole)
)

// piece is a few encoded bytes (at most pieceMax) in a block of fixed
// size: appending one copies the whole block, a few moves the compiler
// writes inline, where appending a slice of them is a call of memmove
// (for the small pieces spans are made of, a third of the encoding's
// time), and keeps n of it.
type piece struct {
	b [pieceMax]byte
	n int
}

const pieceMax = 48

func newPiece(p []byte) piece {
	if len(p) > pieceMax {
		panic("otlp: a piece of " + strconv.Itoa(len(p)) + " bytes") // keys are constants: a programming error
	}
	var x piece
	x.n = copy(x.b[:], p)
	return x
}

// appendPiece appends p's bytes.
func appendPiece(s []byte, p *piece) []byte {
	s = slices.Grow(s, pieceMax)
	*(*[pieceMax]byte)(s[len(s) : len(s)+pieceMax]) = p.b
	return s[:len(s)+p.n]
}

// appendLenField appends field num of wire type bytes holding n bytes, the
// tag and length only: the caller appends the n bytes.
func appendLenField(b []byte, num protowire.Number, n int) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(n))
}

// sizeLenField is the size of a field of wire type bytes holding n bytes.
func sizeLenField(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// appendBytes appends a bytes field, left out when empty.
func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return append(appendLenField(b, num, len(v)), v...)
}

// appendString appends a string field, left out when empty. Strings from
// the trace are made valid UTF-8 first (as protobuf requires of strings),
// each invalid byte replaced by U+FFFD.
func appendString(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	v = validUTF8(v)
	return append(appendLenField(b, num, len(v)), v...)
}

func validUTF8(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			if !utf8.ValidString(s[i:]) {
				return toValidUTF8(s)
			}
			break
		}
	}
	return s
}

// toValidUTF8 replaces each invalid byte of s by U+FFFD, as
// strings.ToValidUTF8 would replace each run.
func toValidUTF8(s string) string {
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, s[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed64Field(b []byte, num protowire.Number, v uint64) []byte {
	return appendFixed64(b, tag(num, protowire.Fixed64Type), v)
}

// appendFixed64 appends the fixed64 field of tag t, left out at 0.
func appendFixed64(b []byte, t byte, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(append(b, t), v)
}

// Attributes: a KeyValue (key, value) whose AnyValue holds one of a
// string, an int or a bool (a oneof: written even at its zero value), as
// field t (its tag) of the message.

// appendStrAttr appends attribute k=v.
func appendStrAttr(b []byte, t byte, k *attrKey, v string) []byte {
	v = validUTF8(v)
	anyLen := 1 + protowire.SizeBytes(len(v))
	b = append(b, t)
	b = appendUvarint(b, uint64(len(k.kv)+protowire.SizeVarint(uint64(anyLen))+anyLen))
	b = appendUvarint(append(b, k.kv...), uint64(anyLen))
	b = appendUvarint(append(b, tagAnyString), uint64(len(v)))
	return append(b, v...)
}

// appendHexAttr appends attribute k="0x<v in hex>".
func appendHexAttr(b []byte, t byte, k *attrKey, v uint64) []byte {
	if t != tagSpanAttributes {
		n := hexLen(v)
		return appendHex(appendHexAttrHead(b, t, k.kv, n), v, n)
	}
	return appendSpanHexAttr(b, k, v)
}

// appendSpanHexAttr is appendHexAttr of a span attribute (tagSpanAttributes).
func appendSpanHexAttr(b []byte, k *attrKey, v uint64) []byte {
	n := hexLen(v)
	return appendHex(appendPiece(b, &k.hex[n]), v, n)
}

// hexAttrs keeps the span attributes key="0x<v in hex>" (appendSpanHexAttr)
// of the values of one key seen last, encoded, in a table indexed by a hash
// of the value: a program's handles, streams and pools come back (a loop's
// streams and allocations, a caching allocator's blocks), and copying a
// piece made once takes a third of the instructions of writing it again.
type hexAttrs struct {
	key   *attrKey
	vals  [1 << hexAttrsBits]uint64
	attrs [1 << hexAttrsBits]piece // n 0: empty
}

// hexAttrsBits is the log2 of a hexAttrs' entries: 64, 4 KB a key.
const hexAttrsBits = 6

// append appends the attribute of value v, as appendSpanHexAttr(s, h.key, v).
func (h *hexAttrs) append(s []byte, v uint64) []byte {
	i := (v * 0x9e3779b97f4a7c15) >> (64 - hexAttrsBits) // Fibonacci hashing
	a := &h.attrs[i]
	if a.n == 0 || h.vals[i] != v {
		var buf [2 * pieceMax]byte
		p := appendSpanHexAttr(buf[:0], h.key, v)
		if len(p) > pieceMax { // no key is this long
			return append(s, p...)
		}
		h.vals[i] = v
		a.n = copy(a.b[:], p)
	}
	return appendPiece(s, a)
}

// hexLen is the number of hex digits of v, at least 1.
func hexLen(v uint64) int { return max(1, (bits.Len64(v)+3)/4) }

// appendHexAttrHead appends what attribute kv="0x..." of n hex digits has
// before its digits, as field t.
func appendHexAttrHead(b []byte, t byte, kv []byte, n int) []byte {
	n += 2          // "0x"
	anyLen := 2 + n // tag and length (n < 128), the string
	b = append(b, t)
	b = appendUvarint(b, uint64(len(kv)+1+anyLen))
	return append(append(b, kv...), byte(anyLen), tagAnyString, byte(n), '0', 'x')
}

// appendHex appends the n lowest hex digits of v (n 1 to 16), lower case:
// what strconv.AppendUint(b, v, 16) writes when n is their count, without
// its general formatting (a tenth of export's CPU profile was there) and
// without a loop: all 16 digits of v shifted up by 16-n of them are
// written, in two words, past the end of b, and b grows by the first n.
func appendHex(b []byte, v uint64, n int) []byte {
	b = slices.Grow(b, 16)
	v <<= 4 * uint(16-n)
	d := b[len(b) : len(b)+16]
	binary.BigEndian.PutUint64(d[:8], hexDigits8(uint32(v>>32)))
	binary.BigEndian.PutUint64(d[8:], hexDigits8(uint32(v)))
	return b[:len(b)+n]
}

// hexDigits8 is the 8 hex digits of x, lower case, as the bytes of a word
// from the most significant (x's first digit) down.
func hexDigits8(x uint32) uint64 {
	v := uint64(x)
	// each nibble of x into a byte of its own, in order
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	// 1 in the bytes of 10 to 15, which go to 'a'-'f' instead of on from '9'
	letters := (v + 0x0606060606060606) >> 4 & 0x0101010101010101
	return v + 0x3030303030303030 + letters*('a'-'0'-10)
}

// appendIntAttr appends attribute k=v.
func appendIntAttr(b []byte, t byte, k *attrKey, v int64) []byte {
	if t != tagSpanAttributes {
		return appendUvarint(appendIntAttrHead(b, t, k.kv, protowire.SizeVarint(uint64(v))), uint64(v))
	}
	return appendSpanIntAttr(b, k, v)
}

// appendSpanIntAttr is appendIntAttr of a span attribute (tagSpanAttributes).
func appendSpanIntAttr(b []byte, k *attrKey, v int64) []byte {
	return appendUvarint(appendPiece(b, &k.ints[protowire.SizeVarint(uint64(v))]), uint64(v))
}

// appendIntAttrHead appends what attribute kv=v, v of n varint bytes, has
// before v, as field t.
func appendIntAttrHead(b []byte, t byte, kv []byte, n int) []byte {
	anyLen := 1 + n
	b = append(b, t)
	b = appendUvarint(b, uint64(len(kv)+1+anyLen))
	return append(append(b, kv...), byte(anyLen), tagAnyInt)
}

// appendBoolAttr appends attribute k=v.
func appendBoolAttr(b []byte, t byte, k *attrKey, v bool) []byte {
	b = append(b, t)
	b = appendUvarint(b, uint64(len(k.kv)+1+2))
	return append(append(b, k.kv...), 2, tagAnyBool, byte(protowire.EncodeBool(v)))
}

// spanHead is the fields every span starts with.
type spanHead struct {
	traceID, spanID, parent []byte
	name                    string
	kind                    uint64
	start, end              uint64
}

// appendSpanHead appends the fields of h (fields 1 to 8) to a span.
func appendSpanHead(b []byte, h *spanHead) []byte {
	b = appendBytes(b, fieldSpanTraceID, h.traceID)
	b = appendBytes(b, fieldSpanSpanID, h.spanID)
	b = appendBytes(b, fieldSpanParentID, h.parent)
	b = appendString(b, fieldSpanName, h.name)
	b = appendVarintField(b, fieldSpanKind, h.kind)
	b = appendFixed64(b, tagSpanStart, h.start)
	return appendFixed64(b, tagSpanEnd, h.end)
}

// appendLinkHead appends what appendLink writes before the span ID's 8
// bytes, for a link to a span of trace traceID with attribute attr.
func appendLinkHead(b []byte, traceID []byte, attr []byte) []byte {
	n := sizeLenField(fieldLinkTraceID, len(traceID)) + sizeLenField(fieldLinkSpanID, 8) + len(attr)
	b = appendLenField(b, fieldSpanLinks, n)
	b = appendBytes(b, fieldLinkTraceID, traceID)
	return appendLenField(b, fieldLinkSpanID, 8)
}

// appendErrorStatus appends a status of code ERROR with message msg.
func appendErrorStatus(b []byte, msg string) []byte {
	msg = validUTF8(msg)
	n := 0
	if msg != "" {
		n += sizeLenField(fieldStatusMessage, len(msg))
	}
	n += protowire.SizeTag(fieldStatusCode) + protowire.SizeVarint(statusCodeError)
	b = appendLenField(b, fieldSpanStatus, n)
	b = appendString(b, fieldStatusMessage, msg)
	return appendVarintField(b, fieldStatusCode, statusCodeError)
}
