package trace

// This file is the one declarative description of what an Event carries on
// the wire. The text twin (text.go) and the binary format (binary.go) both
// walk eventFields in order: the text writer prints a field as key=value when
// it differs from its default, the binary writer sets the field's bit in the
// record's presence bitmap, and both readers accept exactly these fields.

// field identifies one optional Event field of the wire formats. Kind, PID,
// TID and Start are always present and not fields in this sense. A field's
// number is its bit in the binary form's presence bitmap: it never changes,
// and a new field takes the next one (trace/testdata/wire_numbers.txt).
type field uint8

const (
	fieldEnd    field = 0
	fieldAPI    field = 1
	fieldResult field = 2
	fieldObject field = 3
	fieldHandle field = 4
	fieldStream field = 5
	fieldAux    field = 6
	fieldSize   field = 7
	fieldFlags  field = 8
	fieldDevice field = 9
	fieldCaller field = 10
	fieldID     field = 11
	fieldName   field = 12
	fieldDomain field = 13
	fieldCode   field = 14 // Python frames' code
	fieldCount        = fieldCode + 1
)

// fieldSyntax says how the text twin writes a field's value.
type fieldSyntax uint8

const (
	syntaxInt    fieldSyntax = iota // signed decimal
	syntaxUint                      // unsigned decimal (0x hex accepted)
	syntaxHex                       // 0x hex (decimal accepted)
	syntaxAPI                       // API base name, or its number when unknown
	syntaxResult                    // CUresult name (CUDA_ERROR_...), or CUresult(N)
	syntaxObject                    // object kind name, or its number when unknown
	syntaxString                    // interned string, Go-quoted when needed
	syntaxCode                      // CodeID: the number of a code line
)

// fieldCoding says how the binary format encodes a field's value.
type fieldCoding uint8

const (
	codeUvarint  fieldCoding = iota // uvarint of the value
	codeZigzag                      // zigzag uvarint of the signed value
	codeDuration                    // End: zigzag uvarint of End-Start
	codeCached                      // handle-like: index into a per-batch cache of recent values, or a literal
	codeString                      // uvarint StringID
	codeCode                        // uvarint CodeID
)

// fieldSpec describes one Event field.
type fieldSpec struct {
	key    string      // text key
	syntax fieldSyntax // text form of the value
	coding fieldCoding // binary form of the value
	doc    string      // what it holds, for docs/format.md
}

// eventFields is indexed by field; its order is the order of keys on a text
// line and of bits in a binary record's presence bitmap.
var eventFields = [fieldCount]fieldSpec{
	fieldEnd:    {"end", syntaxInt, codeDuration, "End, ns; default Start"},
	fieldAPI:    {"api", syntaxAPI, codeUvarint, "driver API (base name)"},
	fieldResult: {"result", syntaxResult, codeZigzag, "CUresult; default CUDA_SUCCESS"},
	fieldObject: {"object", syntaxObject, codeUvarint, "object kind of a name event"},
	fieldHandle: {"handle", syntaxHex, codeCached, "object handle"},
	fieldStream: {"stream", syntaxHex, codeCached, "stream argument"},
	fieldAux:    {"aux", syntaxHex, codeCached, "second object or pointer"},
	fieldSize:   {"size", syntaxUint, codeUvarint, "bytes"},
	fieldFlags:  {"flags", syntaxHex, codeUvarint, "flags, attribute or code argument"},
	fieldDevice: {"dev", syntaxInt, codeZigzag, "device ordinal; default -1 (unknown)"},
	fieldCaller: {"caller", syntaxHex, codeCached, "return address in the traced program"},
	fieldID:     {"id", syntaxUint, codeUvarint, "NVTX range ID"},
	fieldName:   {"name", syntaxString, codeString, "name string"},
	fieldDomain: {"domain", syntaxString, codeString, "NVTX domain string"},
	fieldCode:   {"code", syntaxCode, codeCode, "Python-level code of a frame (Trace.Code)"},
}

// fieldByKey maps text keys to fields.
var fieldByKey = func() map[string]field {
	m := make(map[string]field, fieldCount)
	for f := field(0); f < fieldCount; f++ {
		m[eventFields[f].key] = f
	}
	return m
}()

// present reports whether field f of e differs from its default and so must
// be written.
func (e *Event) present(f field) bool {
	switch f {
	case fieldEnd:
		return e.End != e.Start
	case fieldDevice:
		return e.Device != NoDevice
	default:
		return e.fieldBits(f) != 0
	}
}

// fieldBits returns field f of e as 64 bits (signed fields sign-extended;
// End as End itself, not the duration).
func (e *Event) fieldBits(f field) uint64 {
	switch f {
	case fieldEnd:
		return uint64(e.End)
	case fieldAPI:
		return uint64(e.API)
	case fieldResult:
		return uint64(int64(e.Result))
	case fieldObject:
		return uint64(e.Object)
	case fieldHandle:
		return e.Handle
	case fieldStream:
		return e.Stream
	case fieldAux:
		return e.Aux
	case fieldSize:
		return e.Size
	case fieldFlags:
		return e.Flags
	case fieldDevice:
		return uint64(int64(e.Device))
	case fieldCaller:
		return e.Caller
	case fieldID:
		return e.ID
	case fieldName:
		return uint64(e.Name)
	case fieldDomain:
		return uint64(e.Domain)
	case fieldCode:
		return uint64(e.Code)
	}
	return 0
}

// fieldLimits is the largest value each field can hold, for readers to reject
// out-of-range input instead of truncating it silently. Signed fields are
// checked separately.
var fieldLimits = [fieldCount]uint64{
	fieldAPI:    1<<16 - 1,
	fieldObject: 1<<8 - 1,
	fieldHandle: 1<<64 - 1,
	fieldStream: 1<<64 - 1,
	fieldAux:    1<<64 - 1,
	fieldSize:   1<<64 - 1,
	fieldFlags:  1<<64 - 1,
	fieldCaller: 1<<64 - 1,
	fieldID:     1<<64 - 1,
	fieldName:   1<<32 - 1,
	fieldDomain: 1<<32 - 1,
	fieldCode:   1<<32 - 1,
}

// setFieldBits stores v into field f of e (the inverse of fieldBits). The
// caller has checked v against the field's range.
func (e *Event) setFieldBits(f field, v uint64) {
	switch f {
	case fieldEnd:
		e.End = int64(v)
	case fieldAPI:
		e.API = API(v)
	case fieldResult:
		e.Result = Result(int32(int64(v)))
	case fieldObject:
		e.Object = Object(v)
	case fieldHandle:
		e.Handle = v
	case fieldStream:
		e.Stream = v
	case fieldAux:
		e.Aux = v
	case fieldSize:
		e.Size = v
	case fieldFlags:
		e.Flags = v
	case fieldDevice:
		e.Device = int32(int64(v))
	case fieldCaller:
		e.Caller = v
	case fieldID:
		e.ID = v
	case fieldName:
		e.Name = StringID(v)
	case fieldDomain:
		e.Domain = StringID(v)
	case fieldCode:
		e.Code = CodeID(v)
	}
}

// kindSpec describes one record kind: its text name and how it pairs with
// others. Name and Domain are the string-ID fields of every kind.
type kindSpec struct {
	// closes is the kind that closes ranges this kind opens (push→pop,
	// start→end), or 0; (*Trace).Ranges does the pairing.
	closes Kind
	// duration is set for kinds whose End is meaningful (call, span); the
	// others are instants with End == Start.
	duration bool
	// fields lists the fields that are meaningful for the kind; readers accept
	// every field on every kind so that nothing is lost, but Validate reports
	// the others.
	fields []field
}

var kindSpecs = [kindLimit]kindSpec{
	KindCall: {duration: true, fields: []field{fieldEnd, fieldAPI, fieldResult, fieldHandle,
		fieldStream, fieldAux, fieldSize, fieldFlags, fieldDevice, fieldCaller}},
	KindRangePush:  {closes: KindRangePop, fields: []field{fieldName, fieldDomain, fieldDevice}},
	KindRangePop:   {fields: []field{fieldDevice}},
	KindRangeStart: {closes: KindRangeEnd, fields: []field{fieldID, fieldName, fieldDomain, fieldDevice}},
	KindRangeEnd:   {fields: []field{fieldID, fieldDevice}},
	KindSpan:       {duration: true, fields: []field{fieldEnd, fieldName, fieldDomain, fieldDevice}},
	KindMark:       {fields: []field{fieldName, fieldDomain, fieldDevice}},
	KindObjectName: {fields: []field{fieldObject, fieldHandle, fieldName, fieldDomain, fieldDevice}},
	KindFrame:      {duration: true, fields: []field{fieldEnd, fieldCode, fieldFlags, fieldSize, fieldAux, fieldID}},
	KindCapture:    {duration: true, fields: []field{fieldEnd, fieldName}},
	KindCount:      {fields: []field{fieldName, fieldSize}},
}
