package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// The binary .cuprof format (docs/format.md has it byte by byte):
//
//	header   magic "\x89cuprof\n", version u16 LE, reserved u16 LE
//	section* marker "\xc5SEC", kind u8, payload length u32 LE,
//	         CRC-32C(marker, kind, length) u32 LE, payload, CRC-32C(payload) u32 LE
//
// Every byte after the header is covered by a check. Sections are
// self-delimiting, so a reader can stop at the last whole one of a truncated
// file, and start with a marker and a checked header, so that after damage a
// reader finds the next whole section and loses only the damaged one. The
// last section of a finished file is the footer, whose counts the reader
// checks. Version 1 framed sections as kind u8, payload length uvarint,
// payload, CRC-32C(payload); it is still read.

// binaryMagic starts every binary .cuprof file.
const binaryMagic = "\x89cuprof\n"

// BinaryVersion is the version of the binary format this package writes. It
// reads this version and every earlier one.
const BinaryVersion = 2

// sectionMarker starts every section of a version-2 file.
const sectionMarker = "\xc5SEC"

// sectionHeaderLen is the size of a version-2 section header: marker, kind,
// payload length, header CRC.
const sectionHeaderLen = len(sectionMarker) + 1 + 4 + 4

const (
	headerLen = len(binaryMagic) + 4
	// maxSectionLen bounds one section's payload; the writer stays far
	// below it, and a reader rejects larger lengths without allocating.
	maxSectionLen = 64 << 20
	// maxBatchEvents is how many events the writer puts in one batch.
	maxBatchEvents = 4096
	// maxBatchCount bounds the event count a reader accepts for one batch.
	maxBatchCount = 1 << 20
	// stringChunk is the payload size after which the writer starts a new
	// strings section.
	stringChunk = 256 << 10
	// cacheSize is the number of recent values each handle-like field keeps
	// per batch; a value found there costs one byte.
	cacheSize = 16
)

// sectionKind says what a section holds. Kinds 0x80 and above are optional:
// a reader that does not know one skips it; an unknown kind below 0x80 is an
// error (a newer, incompatible writer).
type sectionKind uint8

const (
	secStrings sectionKind = 0x01 // uvarint first ID, uvarint count, count × (uvarint len, bytes)
	secMeta    sectionKind = 0x02 // one table record of metaTable
	secGPU     sectionKind = 0x03 // table records of gpuTable
	secProcess sectionKind = 0x04 // table records of processTable
	secThread  sectionKind = 0x05 // table records of threadTable
	secMapping sectionKind = 0x06 // table records of mappingTable
	secSymbol  sectionKind = 0x07 // table records of symbolTable
	secDrop    sectionKind = 0x08 // table records of dropTable
	secCode    sectionKind = 0x09 // table records of codeTable (version 2)
	secEvents  sectionKind = 0x10 // one event batch of one thread
	secFooter  sectionKind = 0x7f // uvarint events, batches, strings
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CorruptError reports input that is not a valid .cuprof file.
type CorruptError struct {
	Offset int64  // byte offset of the problem in the file
	Reason string // what is wrong
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt .cuprof file at byte offset %d: %s", e.Offset, e.Reason)
}

// ErrCorrupt is matched (errors.Is) by every *CorruptError.
var ErrCorrupt = errors.New("corrupt .cuprof file")

// Is makes errors.Is(err, ErrCorrupt) true for corrupt-file errors.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// ---- table records: metadata, processes, threads, mappings, symbols, drops ----

// A table record is a sequence of fields, each a key uvarint (tag<<3 |
// wire type) and a value: wire 0 a uvarint (zigzag for signed fields), wire 1
// eight bytes LE (float64 bits), wire 2 a uvarint length and bytes. Fields at
// their zero value are left out; unknown tags are skipped, so fields can be
// added without a version bump. []string fields repeat their tag once per
// element; map fields repeat it once per entry (uvarint key length, key,
// value).
type tableField[T any] struct {
	tag uint64
	ref func(*T) any // pointer to the field in a record
}

var metaTable = []tableField[Meta]{
	{1, func(m *Meta) any { return &m.Host }},
	{2, func(m *Meta) any { return &m.CuprofVersion }},
	{3, func(m *Meta) any { return &m.Capture }},
	{4, func(m *Meta) any { return &m.DriverVersion }},
	{5, func(m *Meta) any { return &m.Clock.Source }},
	{6, func(m *Meta) any { return &m.Clock.TSCHz }},
	{7, func(m *Meta) any { return &m.Overhead.InsideNs }},
	{8, func(m *Meta) any { return &m.Overhead.AddedNs }},
	{9, func(m *Meta) any { return &m.WallStart }},
	{10, func(m *Meta) any { return &m.MonoStart }},
	{11, func(m *Meta) any { return &m.Command }},
	{12, func(m *Meta) any { return &m.Overhead.PyEventNs }},
	// 13-15 are left to the Python capture's fields.
	{16, func(m *Meta) any { return &m.WhenFull }},
	{17, func(m *Meta) any { return &m.FullWaits }},
	{18, func(m *Meta) any { return &m.FullWaitNs }},
	{19, func(m *Meta) any { return &m.CaptureRange }},
	{20, func(m *Meta) any { return &m.Overhead.InPlaceNs }},
	{21, func(m *Meta) any { return &m.Overhead.InPlaceCalls }},
	// 22-26: the wall clock's sync (added with job identity).
	{22, func(m *Meta) any { return &m.Sync.State }},
	{23, func(m *Meta) any { return &m.Sync.EstErrorNs }},
	{24, func(m *Meta) any { return &m.Sync.MaxErrorNs }},
	{25, func(m *Meta) any { return &m.Sync.WallEnd }},
	{26, func(m *Meta) any { return &m.Sync.MonoEnd }},
	// 27-32: the rest of the Python hooks' calibration (issue 41).
	{27, func(m *Meta) any { return &m.Overhead.PyCEventNs }},
	{28, func(m *Meta) any { return &m.Overhead.PyInsideNs }},
	{29, func(m *Meta) any { return &m.Overhead.PyCInsideNs }},
	{30, func(m *Meta) any { return &m.Overhead.PyHiddenNs }},
	{31, func(m *Meta) any { return &m.Overhead.PyCHiddenNs }},
	{32, func(m *Meta) any { return &m.Overhead.PyLoneNs }},
}

var gpuTable = []tableField[GPU]{
	{1, func(g *GPU) any { return &g.Ordinal }},
	{2, func(g *GPU) any { return &g.Name }},
	{3, func(g *GPU) any { return &g.UUID }},
}

var processTable = []tableField[Process]{
	{1, func(p *Process) any { return &p.PID }},
	{2, func(p *Process) any { return &p.PPID }},
	{3, func(p *Process) any { return &p.Exe }},
	{4, func(p *Process) any { return &p.Cmdline }},
	{5, func(p *Process) any { return &p.Env }},
	{6, func(p *Process) any { return &p.Start }},
	{7, func(p *Process) any { return &p.End }},
	{8, func(p *Process) any { return &p.ExitCode }},
	{9, func(p *Process) any { return &p.Signal }},
	{10, func(p *Process) any { return &p.Python }},
	// 11-16: the process's host (added with job identity).
	{11, func(p *Process) any { return &p.Host }},
	{12, func(p *Process) any { return &p.BootID }},
	{13, func(p *Process) any { return &p.MachineID }},
	{14, func(p *Process) any { return &p.HostNS }},
	{15, func(p *Process) any { return &p.Container }},
	{16, func(p *Process) any { return &p.OSPID }},
}

var threadTable = []tableField[Thread]{
	{1, func(t *Thread) any { return &t.PID }},
	{2, func(t *Thread) any { return &t.TID }},
	{3, func(t *Thread) any { return &t.Name }},
}

var mappingTable = []tableField[Mapping]{
	{1, func(m *Mapping) any { return &m.PID }},
	{2, func(m *Mapping) any { return &m.Start }},
	{3, func(m *Mapping) any { return &m.Limit }},
	{4, func(m *Mapping) any { return &m.Offset }},
	{5, func(m *Mapping) any { return &m.File }},
	{6, func(m *Mapping) any { return &m.BuildID }},
}

var symbolTable = []tableField[Symbol]{
	{1, func(s *Symbol) any { return &s.PID }},
	{2, func(s *Symbol) any { return &s.Addr }},
	{3, func(s *Symbol) any { return &s.Size }},
	{4, func(s *Symbol) any { return &s.Name }},
}

// codeTable describes one Code entry. Code IDs are implicit: the records of
// all code sections in file order are IDs 1, 2, ...; ID 0 is the zero entry.
// The first record of each code section also carries its own ID as field
// codeFirstTag, so that after a lost code section the IDs of the next one
// are still known (files without it number on from the last entry read).
var codeTable = []tableField[Code]{
	{1, func(c *Code) any { return (*uint8)(&c.Kind) }},
	{2, func(c *Code) any { return (*uint32)(&c.Name) }},
	{3, func(c *Code) any { return (*uint32)(&c.Module) }},
	{4, func(c *Code) any { return (*uint32)(&c.File) }},
	{5, func(c *Code) any { return &c.Line }},
}

// codeFirstTag is the field of a code section's first record that holds
// its ID.
const codeFirstTag = 6

// codeFirst is the ID field of a code section's first record, decoded on
// its own.
type codeFirst struct{ ID uint32 }

var codeFirstTable = []tableField[codeFirst]{
	{codeFirstTag, func(c *codeFirst) any { return &c.ID }},
}

var dropTable = []tableField[Drop]{
	{1, func(d *Drop) any { return &d.PID }},
	{2, func(d *Drop) any { return &d.TID }},
	{3, func(d *Drop) any { return &d.Events }},
	{4, func(d *Drop) any { return &d.Reason }},
}

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
)

func appendKey(b []byte, tag uint64, wire uint64) []byte {
	return binary.AppendUvarint(b, tag<<3|wire)
}

func appendBytesField(b []byte, tag uint64, s string) []byte {
	b = appendKey(b, tag, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// appendTableRecord appends rec's non-zero fields.
func appendTableRecord[T any](b []byte, rec *T, fields []tableField[T]) []byte {
	for _, f := range fields {
		switch v := f.ref(rec).(type) {
		case *uint8:
			if *v != 0 {
				b = appendKey(b, f.tag, wireVarint)
				b = binary.AppendUvarint(b, uint64(*v))
			}
		case *uint32:
			if *v != 0 {
				b = appendKey(b, f.tag, wireVarint)
				b = binary.AppendUvarint(b, uint64(*v))
			}
		case *uint64:
			if *v != 0 {
				b = appendKey(b, f.tag, wireVarint)
				b = binary.AppendUvarint(b, *v)
			}
		case *int32:
			if *v != 0 {
				b = appendKey(b, f.tag, wireVarint)
				b = binary.AppendUvarint(b, zigzag(int64(*v)))
			}
		case *int64:
			if *v != 0 {
				b = appendKey(b, f.tag, wireVarint)
				b = binary.AppendUvarint(b, zigzag(*v))
			}
		case *float64:
			if *v != 0 || math.Signbit(*v) {
				b = appendKey(b, f.tag, wireFixed64)
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(*v))
			}
		case *string:
			if *v != "" {
				b = appendBytesField(b, f.tag, *v)
			}
		case *[]string:
			for _, s := range *v {
				b = appendBytesField(b, f.tag, s)
			}
		case *map[string]string:
			keys := make([]string, 0, len(*v))
			for k := range *v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				val := (*v)[k]
				b = appendKey(b, f.tag, wireBytes)
				n := len(binary.AppendUvarint(nil, uint64(len(k)))) + len(k) + len(val)
				b = binary.AppendUvarint(b, uint64(n))
				b = binary.AppendUvarint(b, uint64(len(k)))
				b = append(b, k...)
				b = append(b, val...)
			}
		default:
			panic(fmt.Sprintf("trace: table field of unsupported type %T", v))
		}
	}
	return b
}

// decodeTableRecord decodes one record from p into rec. It returns a reason
// and the position in p where decoding failed, or "".
func decodeTableRecord[T any](p []byte, rec *T, fields []tableField[T]) (string, int) {
	i := 0
	for i < len(p) {
		at := i
		key, n := binary.Uvarint(p[i:])
		if n <= 0 {
			return "bad field key", at
		}
		i += n
		tag, wire := key>>3, key&7
		var ref any
		for _, f := range fields {
			if f.tag == tag {
				ref = f.ref(rec)
				break
			}
		}
		var u uint64
		var bs []byte
		switch wire {
		case wireVarint:
			if u, n = binary.Uvarint(p[i:]); n <= 0 {
				return "bad varint value", i
			}
			i += n
		case wireFixed64:
			if len(p)-i < 8 {
				return "short fixed64 value", i
			}
			u = binary.LittleEndian.Uint64(p[i:])
			i += 8
		case wireBytes:
			l, n := binary.Uvarint(p[i:])
			if n <= 0 || l > uint64(len(p)-i-n) {
				return "bad length", i
			}
			i += n
			bs = p[i : i+int(l)]
			i += int(l)
		default:
			return fmt.Sprintf("unknown wire type %d", wire), at
		}
		if ref == nil {
			continue // a field from a newer writer
		}
		want := uint64(wireVarint)
		switch ref.(type) {
		case *float64:
			want = wireFixed64
		case *string, *[]string, *map[string]string:
			want = wireBytes
		}
		if wire != want {
			return fmt.Sprintf("field %d has wire type %d, want %d", tag, wire, want), at
		}
		switch v := ref.(type) {
		case *uint8:
			if u > math.MaxUint8 {
				return fmt.Sprintf("field %d out of range", tag), at
			}
			*v = uint8(u)
		case *uint32:
			if u > math.MaxUint32 {
				return fmt.Sprintf("field %d out of range", tag), at
			}
			*v = uint32(u)
		case *uint64:
			*v = u
		case *int32:
			s := unzigzag(u)
			if s < math.MinInt32 || s > math.MaxInt32 {
				return fmt.Sprintf("field %d out of range", tag), at
			}
			*v = int32(s)
		case *int64:
			*v = unzigzag(u)
		case *float64:
			*v = math.Float64frombits(u)
		case *string:
			*v = string(bs)
		case *[]string:
			*v = append(*v, string(bs))
		case *map[string]string:
			l, n := binary.Uvarint(bs)
			if n <= 0 || l > uint64(len(bs)-n) {
				return "bad map key length", at
			}
			if *v == nil {
				*v = map[string]string{}
			}
			(*v)[string(bs[n:n+int(l)])] = string(bs[n+int(l):])
		}
	}
	return "", 0
}

// ---- event batches ----

// An event batch holds events of one thread in SortEvents order:
//
//	uvarint pid, uvarint tid, uvarint count, zigzag varint base start
//	count × record
//
// A record starts with a shape code. Shapes (kind, presence bitmap, API,
// device) are numbered per batch in order of first use: code < len(shapes)
// reuses one; code == len(shapes) introduces the next, followed by uvarint
// kind, uvarint presence bitmap (bit i = field i of eventFields), then the
// API (uvarint) and device (zigzag) when their bits are set. Then come the
// start delta from the previous record's start (uvarint; the first record's
// is from the base), and each other present field in eventFields order, as
// its fieldCoding says. Cached fields are a uvarint c: c < cacheSize picks
// slot c of the field's cache of recent values; otherwise the value is the
// field's previous value plus unzigzag(c-cacheSize), and it replaces the
// cache's slots round-robin.

// shape is the part of a record that repeats from record to record.
type shape struct {
	kind     Kind
	presence uint16
	api      API
	device   int32
}

const (
	shapeBits    = 1<<fieldAPI | 1<<fieldDevice // fields carried by the shape
	presenceMask = 1<<fieldCount - 1
)

// valueCache is the per-batch cache of recent values of one handle-like field.
type valueCache struct {
	slot [cacheSize]uint64
	next uint8
	last uint64
}

// cachedFields lists the fields coded against a cache, in order.
var cachedFields = func() []field {
	var out []field
	for f := field(0); f < fieldCount; f++ {
		if eventFields[f].coding == codeCached {
			out = append(out, f)
		}
	}
	return out
}()

// batchEncoder encodes one batch at a time; it is reused across batches.
type batchEncoder struct {
	shapes shapeTable
	caches [4]valueCache
	buf    []byte
}

func newBatchEncoder() *batchEncoder { return &batchEncoder{} }

// shapeTable numbers a batch's shapes: an open-addressing hash table of
// packed shape keys, cleared per batch by bumping a generation.
type shapeTable struct {
	slots []shapeSlot
	n     int // shapes numbered in this batch
	gen   uint32
}

type shapeSlot struct {
	key  uint64
	gen  uint32
	code uint32
}

// shapeKey packs a shape into 64 bits: kind 4, presence 15, API 16, device
// 29 (zigzag; wider devices take the slow path).
func shapeKey(sh shape) (uint64, bool) {
	d := zigzag(int64(sh.device))
	if d >= 1<<29 {
		return 0, false
	}
	return uint64(sh.kind) | uint64(sh.presence)<<4 | uint64(sh.api)<<19 | d<<35, true
}

func (st *shapeTable) reset() {
	st.gen++
	st.n = 0
	if st.slots == nil || st.gen == 0 {
		st.slots = make([]shapeSlot, 256)
		st.gen = 1
	}
}

// code returns the shape's code and whether it is new (then numbered now).
func (st *shapeTable) code(key uint64) (uint32, bool) {
	if 2*(st.n+1) > len(st.slots) {
		st.grow()
	}
	mask := uint64(len(st.slots) - 1)
	h := (key * 0x9E3779B97F4A7C15) >> 32
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &st.slots[i]
		if sl.gen != st.gen {
			*sl = shapeSlot{key: key, gen: st.gen, code: uint32(st.n)}
			st.n++
			return sl.code, true
		}
		if sl.key == key {
			return sl.code, false
		}
	}
}

func (st *shapeTable) grow() {
	old := st.slots
	st.slots = make([]shapeSlot, 2*len(old))
	mask := uint64(len(st.slots) - 1)
	for _, sl := range old {
		if sl.gen != st.gen {
			continue
		}
		h := (sl.key * 0x9E3779B97F4A7C15) >> 32
		i := h & mask
		for st.slots[i].gen == st.gen {
			i = (i + 1) & mask
		}
		st.slots[i] = sl
	}
}

// presence returns e's presence bitmap: bit f set when field f differs from
// its default (the inline form of Event.present over all fields).
func presence(e *Event) uint16 {
	var p uint16
	if e.End != e.Start {
		p |= 1 << fieldEnd
	}
	if e.API != 0 {
		p |= 1 << fieldAPI
	}
	if e.Result != 0 {
		p |= 1 << fieldResult
	}
	if e.Object != 0 {
		p |= 1 << fieldObject
	}
	if e.Handle != 0 {
		p |= 1 << fieldHandle
	}
	if e.Stream != 0 {
		p |= 1 << fieldStream
	}
	if e.Aux != 0 {
		p |= 1 << fieldAux
	}
	if e.Size != 0 {
		p |= 1 << fieldSize
	}
	if e.Flags != 0 {
		p |= 1 << fieldFlags
	}
	if e.Device != NoDevice {
		p |= 1 << fieldDevice
	}
	if e.Caller != 0 {
		p |= 1 << fieldCaller
	}
	if e.ID != 0 {
		p |= 1 << fieldID
	}
	if e.Name != 0 {
		p |= 1 << fieldName
	}
	if e.Domain != 0 {
		p |= 1 << fieldDomain
	}
	if e.Code != 0 {
		p |= 1 << fieldCode
	}
	return p
}

// put appends the cache code of v.
func (c *valueCache) put(b []byte, v uint64) []byte {
	for s := range c.slot {
		if c.slot[s] == v {
			c.last = v
			return append(b, byte(s))
		}
	}
	b = binary.AppendUvarint(b, cacheSize+zigzag(int64(v-c.last)))
	c.slot[c.next] = v
	c.next = (c.next + 1) % cacheSize
	c.last = v
	return b
}

// encode appends the batch payload for events (sorted, all of pid/tid) to
// the encoder's buffer and returns it.
func (be *batchEncoder) encode(pid, tid uint32, events []Event) []byte {
	be.shapes.reset()
	be.caches = [4]valueCache{}
	// Shapes whose key does not pack (huge device numbers) are numbered in
	// this map; they share the code space with the table's.
	var wide map[shape]uint32
	b := be.buf[:0]
	b = binary.AppendUvarint(b, uint64(pid))
	b = binary.AppendUvarint(b, uint64(tid))
	b = binary.AppendUvarint(b, uint64(len(events)))
	var prev int64
	if len(events) > 0 {
		prev = events[0].Start
	}
	b = binary.AppendUvarint(b, zigzag(prev))
	for i := range events {
		e := &events[i]
		pres := presence(e)
		sh := shape{kind: e.Kind, presence: pres}
		if pres&(1<<fieldAPI) != 0 {
			sh.api = e.API
		}
		if pres&(1<<fieldDevice) != 0 {
			sh.device = e.Device
		}
		var code uint32
		var isNew bool
		if key, ok := shapeKey(sh); ok {
			code, isNew = be.shapes.code(key)
		} else {
			if wide == nil {
				wide = map[shape]uint32{}
			}
			c, found := wide[sh]
			if !found {
				c = uint32(be.shapes.n)
				be.shapes.n++
				wide[sh] = c
			}
			code, isNew = c, !found
		}
		b = binary.AppendUvarint(b, uint64(code))
		if isNew {
			b = binary.AppendUvarint(b, uint64(sh.kind))
			b = binary.AppendUvarint(b, uint64(pres))
			if pres&(1<<fieldAPI) != 0 {
				b = binary.AppendUvarint(b, uint64(sh.api))
			}
			if pres&(1<<fieldDevice) != 0 {
				b = binary.AppendUvarint(b, zigzag(int64(sh.device)))
			}
		}
		b = binary.AppendUvarint(b, uint64(e.Start-prev))
		prev = e.Start
		rest := pres &^ shapeBits
		for rest != 0 {
			f := field(bits.TrailingZeros16(rest))
			rest &= rest - 1
			switch f {
			case fieldEnd:
				b = binary.AppendUvarint(b, zigzag(e.End-e.Start))
			case fieldResult:
				b = binary.AppendUvarint(b, zigzag(int64(e.Result)))
			case fieldObject:
				b = binary.AppendUvarint(b, uint64(e.Object))
			case fieldHandle:
				b = be.caches[0].put(b, e.Handle)
			case fieldStream:
				b = be.caches[1].put(b, e.Stream)
			case fieldAux:
				b = be.caches[2].put(b, e.Aux)
			case fieldCaller:
				b = be.caches[3].put(b, e.Caller)
			case fieldSize:
				b = binary.AppendUvarint(b, e.Size)
			case fieldFlags:
				b = binary.AppendUvarint(b, e.Flags)
			case fieldID:
				b = binary.AppendUvarint(b, e.ID)
			case fieldName:
				b = binary.AppendUvarint(b, uint64(e.Name))
			case fieldDomain:
				b = binary.AppendUvarint(b, uint64(e.Domain))
			case fieldCode:
				b = binary.AppendUvarint(b, uint64(e.Code))
			}
		}
	}
	be.buf = b
	return b
}

// batchDecoder decodes one batch, a few events at a time, so that several
// threads' batches can be merged while they are decoded.
type batchDecoder struct {
	p        []byte
	i        int // position in p
	pid, tid uint32
	start    int64 // of the last decoded event
	left     int   // events not yet decoded
	strings  int   // number of strings known: string IDs must be below
	codes    int   // number of code entries known: code IDs must be below
	shapes   []shape
	caches   [4]valueCache
}

// batchHeader reads a batch's pid, tid and count and returns the position of
// the base start.
func batchHeader(p []byte) (pid, tid uint32, count int, at int, reason string) {
	i := 0
	var v [3]uint64
	for k := range v {
		u, n := binary.Uvarint(p[i:])
		if n <= 0 {
			return 0, 0, 0, i, "bad batch header"
		}
		v[k] = u
		i += n
	}
	if v[0] > math.MaxUint32 || v[1] > math.MaxUint32 {
		return 0, 0, 0, 0, "batch pid/tid out of range"
	}
	// Every record takes at least two bytes (shape code, start delta).
	if v[2] > maxBatchCount || v[2] > uint64(len(p)-i)/2 {
		return 0, 0, 0, 0, fmt.Sprintf("batch claims %d events in %d bytes", v[2], len(p))
	}
	return uint32(v[0]), uint32(v[1]), int(v[2]), i, ""
}

// uvarintAt reads a uvarint at p[i:], returning the value and the position
// after it, or -1 on error.
func uvarintAt(p []byte, i int) (uint64, int) {
	if i < len(p) && p[i] < 0x80 {
		return uint64(p[i]), i + 1
	}
	var x uint64
	var s uint
	for k := 0; k < binary.MaxVarintLen64; k++ {
		if i >= len(p) {
			return 0, -1
		}
		b := p[i]
		i++
		if b < 0x80 {
			if k == binary.MaxVarintLen64-1 && b > 1 {
				return 0, -1
			}
			return x | uint64(b)<<s, i
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, -1
}

// reset starts decoding batch payload p, whose events may refer to the
// first strings strings. On failure it returns a reason and the position in p.
func (bd *batchDecoder) reset(p []byte, strings, codes int) (string, int) {
	pid, tid, count, i, reason := batchHeader(p)
	if reason != "" {
		return reason, i
	}
	u, j := uvarintAt(p, i)
	if j < 0 {
		return "bad batch base time", i
	}
	*bd = batchDecoder{p: p, i: j, pid: pid, tid: tid, start: unzigzag(u), left: count,
		strings: strings, codes: codes, shapes: bd.shapes[:0]}
	return "", 0
}

// decode decodes the next len(out) events (at most bd.left) into out. On
// failure it returns a reason and the position in the payload.
func (bd *batchDecoder) decode(out []Event) (string, int) {
	p, i, start := bd.p, bd.i, bd.start
	pid, tid := bd.pid, bd.tid
	var vals [fieldCount]uint64
	var u uint64
	for r := range out {
		at := i
		// shape code, usually one byte
		var code uint64
		if i < len(p) && p[i] < 0x80 {
			code = uint64(p[i])
			i++
		} else if code, i = uvarintAt(p, i); i < 0 {
			return "bad shape code", at
		}
		var sh shape
		if code < uint64(len(bd.shapes)) {
			sh = bd.shapes[code]
		} else if code == uint64(len(bd.shapes)) {
			var k, pres uint64
			if k, i = uvarintAt(p, i); i < 0 || k == 0 || k >= uint64(kindLimit) {
				return "bad record kind", at
			}
			if pres, i = uvarintAt(p, i); i < 0 || pres > presenceMask {
				return "bad presence bitmap", at
			}
			sh.kind, sh.presence, sh.device = Kind(k), uint16(pres), NoDevice
			if pres&(1<<fieldAPI) != 0 {
				if u, i = uvarintAt(p, i); i < 0 || u > math.MaxUint16 {
					return "bad API", at
				}
				sh.api = API(u)
			}
			if pres&(1<<fieldDevice) != 0 {
				if u, i = uvarintAt(p, i); i < 0 {
					return "bad device", at
				}
				d := unzigzag(u)
				if d < math.MinInt32 || d > math.MaxInt32 {
					return "device out of range", at
				}
				sh.device = int32(d)
			}
			bd.shapes = append(bd.shapes, sh)
		} else {
			return fmt.Sprintf("shape code %d beyond the %d shapes defined", code, len(bd.shapes)), at
		}
		if i+1 < len(p) && p[i] < 0x80 {
			u = uint64(p[i])
			i++
		} else if i+1 < len(p) && p[i+1] < 0x80 {
			u = uint64(p[i]&0x7f) | uint64(p[i+1])<<7
			i += 2
		} else if u, i = uvarintAt(p, i); i < 0 {
			return "bad start delta", at
		}
		start += int64(u)
		e := &out[r]
		// Field by field: a composite literal is built on the stack and
		// copied, and that copy stalls on store forwarding.
		e.Kind, e.API, e.Result, e.Object = sh.kind, sh.api, 0, 0
		e.PID, e.TID, e.Device = pid, tid, sh.device
		e.Start, e.End = start, start
		e.Handle, e.Stream, e.Aux, e.Size, e.Flags, e.Caller, e.ID = 0, 0, 0, 0, 0, 0, 0
		e.Name, e.Domain, e.Code = 0, 0, 0
		pres := sh.presence
		if pres&^shapeBits == 0 {
			continue
		}
		// Read the fields' varints in one tight loop, then store them in bit
		// order, one predictable branch per field.
		n := bits.OnesCount16(pres &^ shapeBits)
		for k := 0; k < n; k++ {
			if i+1 < len(p) && p[i] < 0x80 {
				vals[k] = uint64(p[i])
				i++
			} else if i+1 < len(p) && p[i+1] < 0x80 {
				vals[k] = uint64(p[i]&0x7f) | uint64(p[i+1])<<7
				i += 2
			} else if vals[k], i = uvarintAt(p, i); i < 0 {
				return "malformed field value", at
			}
		}
		v := vals[:n]
		if pres&(1<<fieldEnd) != 0 {
			e.End = start + unzigzag(v[0])
			if e.End < start { // a negative duration, or one past the clock's range
				return "event ends before it starts", at
			}
			v = v[1:]
		}
		if pres&(1<<fieldResult) != 0 {
			s := unzigzag(v[0])
			if s < math.MinInt32 || s > math.MaxInt32 {
				return "result out of range", at
			}
			e.Result = Result(s)
			v = v[1:]
		}
		if pres&(1<<fieldObject) != 0 {
			if v[0] > math.MaxUint8 {
				return "object kind out of range", at
			}
			e.Object = Object(v[0])
			v = v[1:]
		}
		if pres&(1<<fieldHandle) != 0 {
			e.Handle = bd.caches[0].value(v[0])
			v = v[1:]
		}
		if pres&(1<<fieldStream) != 0 {
			e.Stream = bd.caches[1].value(v[0])
			v = v[1:]
		}
		if pres&(1<<fieldAux) != 0 {
			e.Aux = bd.caches[2].value(v[0])
			v = v[1:]
		}
		if pres&(1<<fieldSize) != 0 {
			e.Size = v[0]
			v = v[1:]
		}
		if pres&(1<<fieldFlags) != 0 {
			e.Flags = v[0]
			v = v[1:]
		}
		if pres&(1<<fieldCaller) != 0 {
			e.Caller = bd.caches[3].value(v[0])
			v = v[1:]
		}
		if pres&(1<<fieldID) != 0 {
			e.ID = v[0]
			v = v[1:]
		}
		if pres&(1<<fieldName) != 0 {
			if v[0] >= uint64(bd.strings) {
				return fmt.Sprintf("name string ID %d not defined before its batch (%d strings)", v[0], bd.strings), at
			}
			e.Name = StringID(v[0])
			v = v[1:]
		}
		if pres&(1<<fieldDomain) != 0 {
			if v[0] >= uint64(bd.strings) {
				return fmt.Sprintf("domain string ID %d not defined before its batch (%d strings)", v[0], bd.strings), at
			}
			e.Domain = StringID(v[0])
			v = v[1:]
		}
		if pres&(1<<fieldCode) != 0 {
			if v[0] >= uint64(bd.codes) {
				return fmt.Sprintf("code ID %d not defined before its batch (%d code entries)", v[0], bd.codes), at
			}
			e.Code = CodeID(v[0])
		}
	}
	bd.i, bd.start = i, start
	bd.left -= len(out)
	if bd.left == 0 && i != len(p) {
		return fmt.Sprintf("%d bytes left after the batch's last event", len(p)-i), i
	}
	return "", 0
}

// value decodes a cached field's code u.
func (c *valueCache) value(u uint64) uint64 {
	var v uint64
	if u < cacheSize {
		v = c.slot[u]
	} else {
		v = c.last + uint64(unzigzag(u-cacheSize))
		c.slot[c.next] = v
		c.next = (c.next + 1) % cacheSize
	}
	c.last = v
	return v
}

func init() {
	// batchDecoder.decode knows the cached fields by name.
	if !slices.Equal(cachedFields, []field{fieldHandle, fieldStream, fieldAux, fieldCaller}) {
		panic("trace: batchDecoder.decode does not match the cached fields of eventFields")
	}
}
