package perfetto

import (
	"encoding/binary"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/trace"
)

// ChromeTrace is the Chrome trace event JSON object format.
type ChromeTrace struct {
	TraceEvents     []ChromeEvent `json:"traceEvents"`
	DisplayTimeUnit string        `json:"displayTimeUnit"`
}

// ChromeEvent is one event of the Chrome trace event format: complete
// slices ("X"), slice begins and ends ("B", "E"), counters ("C"), flow
// starts and ends ("s", "f"), instants ("i") and process and thread names
// ("M").
type ChromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // microseconds
	Dur  *float64       `json:"dur,omitempty"`
	PID  uint32         `json:"pid"`
	TID  uint64         `json:"tid"`
	ID   string         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// LargeJSON is the size past which Chrome JSON loads badly (about 100 MB):
// callers warn when Writer.Estimate says a timeline will be larger.
const LargeJSON = 100 << 20

// WriteChromeJSON writes t in the Chrome trace event JSON format, analysing
// it once (package analysis) as it writes. Calls, lifetimes and start/end
// ranges are complete events ("X"); push/pop ranges, spans and Python
// frames, whose ends come later, are begin and end events ("B", "E") in
// time order per thread. Lanes of lifetimes and counters appear as extra
// named threads of their process. Events must be in trace.SortEvents
// order.
func WriteChromeJSON(w io.Writer, t *trace.Trace) error {
	tw := NewChromeJSONWriter(w, t)
	analysis.Of(t, tw.Options()...)
	return tw.Close()
}

// NewChromeJSONWriter returns a Writer of the Chrome JSON timeline of a
// trace with the tables of t (Meta, Strings, Processes, Threads, Code;
// t.Events is not read) to w.
func NewChromeJSONWriter(w io.Writer, t *trace.Trace) *Writer {
	jw := &jsonWriter{apiName: make([][]byte, len(trace.APIs())+1),
		apiOpen: make([][]byte, len(trace.APIs())+1), apiCat: make([]category, len(trace.APIs())+1),
		strName: make([][]byte, len(t.Strings)), codeName: make([][]byte, len(t.Code))}
	jw.w, jw.buf = newBlockWriter(w, blockSize+1<<16)
	jw.buf = append(jw.buf, `{"displayTimeUnit":"ns","traceEvents":[`...)
	tw := newWriter(t, jw)
	tw.callEnds = false // jsonWriter.end writes nothing for them
	return tw
}

// jsonWriter renders the timeline as Chrome trace events, one a line.
type jsonWriter struct {
	w           *blockWriter
	buf         []byte
	first       bool // an event was written
	err         error
	n           int64
	keys        []int     // argument order scratch
	counterName [][]byte  // by track: a counter's name as JSON
	ms          uint64    // the milliseconds of the last time written, msText its digits
	msText      [2]uint64 // (msLen of them, little-endian)
	msLen       int
	idText      [][]byte // by track: its records' pid and tid (2 uuid), a counter's (2 uuid + 1)
	scratch     []byte

	// names as JSON strings, by what they stand for
	apiName, strName, codeName [][]byte
	// by API: the start of its calls' complete events, up to their
	// time, made for the category in apiCat
	apiOpen [][]byte
	apiCat  []category
	cats    [256][]byte
}

// keyJSON are the annotation names as JSON strings followed by the colon,
// keyRank their order by name (the order encoding/json writes a map's keys
// in).
var keyJSON, keyRank = func() (j [numKeys][]byte, r [numKeys]int) {
	for k := argKey(0); k < numKeys; k++ {
		j[k] = append(appendJSONString(nil, k.String()), ':')
		for o := argKey(0); o < numKeys; o++ {
			if o.String() < k.String() {
				r[k]++
			}
		}
	}
	return
}()

// nameJSON returns n as a JSON string, kept for names of the trace's tables.
func (jw *jsonWriter) nameJSON(n sliceName) []byte {
	var slot *[]byte
	switch n.kind {
	case nameObject:
		return appendJSONString(jw.scratch[:0], n.b)
	case nameAPI:
		if int(n.id) < len(jw.apiName) {
			slot = &jw.apiName[n.id]
		}
	case nameString:
		if int(n.id) < len(jw.strName) {
			slot = &jw.strName[n.id]
		}
	case nameCode:
		if int(n.id) < len(jw.codeName) {
			slot = &jw.codeName[n.id]
		}
	}
	if slot == nil {
		return appendJSONString(jw.scratch[:0], n.s)
	}
	if *slot == nil {
		*slot = appendJSONString(nil, n.s)
	}
	return *slot
}

var _ sink = (*jsonWriter)(nil)

// open starts an event: its name (text), no category, its phase.
func (jw *jsonWriter) open(name, ph string) {
	nb := appendJSONString(jw.scratch[:0], name)
	jw.openJSON(nb, nil, ph)
	jw.scratch = nb[:0]
}

// openName starts an event of a slice's name and category.
func (jw *jsonWriter) openName(n sliceName, c category, ph string) {
	nb := jw.nameJSON(n)
	jw.openJSON(nb, jw.catJSON(c), ph)
	if n.kind == nameObject || n.kind == nameText {
		jw.scratch = nb[:0]
	}
}

// openJSON starts an event of a name and category written as JSON (no
// category when empty).
func (jw *jsonWriter) openJSON(name, cat []byte, ph string) {
	b := jw.buf
	if jw.first {
		b = append(b, ',')
	}
	jw.first = true
	b = append(b, "\n{\"name\":"...)
	b = append(b, name...)
	if len(cat) > 0 {
		b = append(b, `,"cat":`...)
		b = append(b, cat...)
	}
	b = append(b, `,"ph":"`...)
	b = append(b, ph...)
	jw.buf = append(b, '"')
}

// catJSON returns a category's name as a JSON string, empty for none.
func (jw *jsonWriter) catJSON(c category) []byte {
	if jw.cats[c] == nil {
		jw.cats[c] = []byte{}
		if name := c.String(); name != "" {
			jw.cats[c] = appendJSONString(nil, name)
		}
	}
	return jw.cats[c]
}

// The names of the events that name no slice, as JSON.
var (
	noNameJSON   = []byte(`""`)
	flowNameJSON = appendJSONString(nil, "alloc-free")
	flowCatJSON  = appendJSONString(nil, "flow")
)

// openCall starts the complete event of a call, up to its time, in one
// append: what openName and ts's key would write.
func (jw *jsonWriter) openCall(n *sliceName, c category) {
	o := jw.apiOpen[n.id]
	if o == nil || jw.apiCat[n.id] != c {
		b, first := jw.buf, jw.first
		jw.buf, jw.first = nil, true // made with its comma
		jw.openName(*n, c, "X")
		o = append(jw.buf, `,"ts":`...)
		jw.buf, jw.first = b, first
		jw.apiOpen[n.id], jw.apiCat[n.id] = o, c
	}
	if !jw.first {
		o = o[1:]
	}
	jw.first = true
	jw.buf = append(jw.buf, o...)
}

// ts writes key and ns as microseconds: the integer part, and the
// nanoseconds as a fraction without its trailing zeros.
func (jw *jsonWriter) ts(key string, ns int64) {
	jw.buf = append(jw.buf, key...)
	jw.tsValue(ns)
}

// tsValue writes ns as ts does, without a key: into room made once, each
// piece in one store of a word (the milliseconds' digits, kept from the
// last time, in two), where appending them byte by byte took a tenth of
// the Chrome JSON timeline's instructions.
func (jw *jsonWriter) tsValue(ns int64) {
	u := uint64(ns)
	if ns < 0 {
		u = uint64(-ns)
	}
	us := u / 1000
	ms := us / 1000
	if ms != 0 && (ms != jw.ms || jw.msLen == 0) {
		// the milliseconds' digits are those of the last time more
		// often than not (durations, under a millisecond, have none):
		// made once for them
		var d [24]byte
		t := strconv.AppendUint(d[:0], ms, 10)
		jw.ms, jw.msLen = ms, len(t)
		jw.msText[0], jw.msText[1] = binary.LittleEndian.Uint64(d[0:]), binary.LittleEndian.Uint64(d[8:])
	}
	b := jw.buf
	n := len(b)
	if cap(b)-n < tsRoom {
		b = slices.Grow(b, tsRoom)
	}
	h := b[n : n+tsRoom]
	i := 0
	if ns < 0 {
		h[0], i = '-', 1
	}
	if ms == 0 {
		binary.LittleEndian.PutUint32(h[i:], tsNumber[us])
		i += int(tsNumberLen[us])
	} else {
		binary.LittleEndian.PutUint64(h[i:], jw.msText[0])
		binary.LittleEndian.PutUint64(h[i+8:], jw.msText[1])
		i += jw.msLen
		binary.LittleEndian.PutUint32(h[i:], tsDigits[us%1000])
		i += 3
	}
	if f := u % 1000; f != 0 {
		binary.LittleEndian.PutUint32(h[i:], tsFraction[f])
		i += int(tsFractionLen[f])
	}
	jw.buf = b[:n+i]
}

// tsRoom is room for a time's text (a sign, 20 digits, a dot and three)
// and the rest of the word written last.
const tsRoom = 32

// The texts of 0 to 999 as words (little-endian) for tsValue: three digits
// (the microseconds after the milliseconds), the number (a time under a
// millisecond), and a fraction: a dot and the digits without trailing
// zeros; with their lengths.
var tsDigits, tsNumber, tsFraction, tsNumberLen, tsFractionLen = func() (d, num, frac [1000]uint32, numLen, fracLen [1000]uint8) {
	word := func(t []byte) uint32 {
		var w [4]byte
		copy(w[:], t)
		return binary.LittleEndian.Uint32(w[:])
	}
	for v := range 1000 {
		t := []byte{byte('0' + v/100), byte('0' + v/10%10), byte('0' + v%10)}
		d[v] = word(t)
		n := strconv.AppendInt(nil, int64(v), 10)
		num[v], numLen[v] = word(n), uint8(len(n))
		f := append([]byte{'.'}, t...)
		for len(f) > 1 && f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		frac[v], fracLen[v] = word(f), uint8(len(f))
	}
	return
}()

// trackIDs writes the pid and tid of tr's records (tid 0 for a counter's),
// made once per track: tracks are numbered 1, 2, ...
func (jw *jsonWriter) trackIDs(tr *track, counter bool) {
	i := 2 * int(tr.uuid)
	if counter {
		i++
	}
	if i >= len(jw.idText) {
		jw.idText = append(jw.idText, make([][]byte, i+1-len(jw.idText))...)
	}
	if jw.idText[i] == nil {
		tid := tr.jsonID
		if counter {
			tid = 0
		}
		b := jw.buf
		jw.buf = nil
		jw.ids(tr.pid, tid)
		jw.idText[i] = jw.buf
		jw.buf = b
	}
	jw.buf = append(jw.buf, jw.idText[i]...)
}

func (jw *jsonWriter) ids(pid uint32, tid uint64) {
	jw.buf = append(jw.buf, `,"pid":`...)
	jw.buf = strconv.AppendUint(jw.buf, uint64(pid), 10)
	jw.buf = append(jw.buf, `,"tid":`...)
	jw.buf = strconv.AppendUint(jw.buf, tid, 10)
}

// args writes the arguments, by key as encoding/json writes a map: the
// keys of one record are each other's once (the Writer adds each once), so
// they go in the order of their ranks, a bit each, with no sort; a record
// with a key twice is sorted, stably, as before.
func (jw *jsonWriter) args(args []arg) {
	if len(args) == 0 {
		return
	}
	var ranks uint32 // bit r: the key of rank r is present, at args[at[r]]
	var at [numKeys]uint8
	for i := range args {
		r := keyRank[args[i].key]
		if ranks&(1<<r) != 0 {
			jw.sortedArgs(args)
			return
		}
		ranks |= 1 << r
		at[r] = uint8(i)
	}
	b := append(jw.buf, `,"args":{`...)
	for m := ranks; m != 0; m &= m - 1 {
		if m != ranks {
			b = append(b, ',')
		}
		b = appendArg(b, &args[at[bits.TrailingZeros32(m)]])
	}
	jw.buf = append(b, '}')
}

// sortedArgs writes args with a key more than once: sorted by key, those
// of one key in their order.
func (jw *jsonWriter) sortedArgs(args []arg) {
	k := jw.keys[:0]
	for i := range args {
		j := len(k)
		k = append(k, i)
		for ; j > 0 && keyRank[args[k[j-1]].key] > keyRank[args[i].key]; j-- {
			k[j] = k[j-1]
		}
		k[j] = i
	}
	jw.keys = k
	jw.buf = append(jw.buf, `,"args":{`...)
	for n, i := range k {
		if n > 0 {
			jw.buf = append(jw.buf, ',')
		}
		jw.buf = appendArg(jw.buf, &args[i])
	}
	jw.buf = append(jw.buf, '}')
}

// appendArg appends an argument's key and value.
func appendArg(b []byte, a *arg) []byte {
	b = append(b, keyJSON[a.key]...)
	switch a.kind {
	case argInt:
		return appendInt(b, a.num)
	case argHex:
		return append(appendHexText(append(b, '"'), uint64(a.num)), '"')
	}
	return appendJSONString(b, a.str)
}

// appendInt appends v in decimal, as strconv.AppendInt does; the small
// values that are most of a timeline's (devices, line numbers, a call's
// microseconds, sizes of a page) without its call.
func appendInt(b []byte, v int64) []byte {
	switch {
	case v < 0 || v >= 10000:
		return strconv.AppendInt(b, v, 10)
	case v >= 1000:
		return append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	case v < 10:
		return append(b, byte('0'+v))
	case v < 100:
		return append(b, byte('0'+v/10), byte('0'+v%10))
	}
	return append(b, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
}

// close ends the event and writes out what is buffered past blockSize.
func (jw *jsonWriter) close() {
	jw.buf = append(jw.buf, '}')
	if len(jw.buf) >= blockSize {
		jw.flush()
	}
}

func (jw *jsonWriter) flush() {
	n := len(jw.buf)
	var err error
	jw.buf, err = jw.w.write(jw.buf)
	jw.n += int64(n - len(jw.buf))
	if jw.err == nil {
		jw.err = err
	}
}

func (jw *jsonWriter) size() int64 { return jw.n + int64(len(jw.buf)) }

func (jw *jsonWriter) finish() error {
	jw.buf = append(jw.buf, "\n]}\n"...)
	jw.w.close() // its error is the last write's
	jw.flush()
	return jw.err
}

// declare names processes, threads and lanes (every non-process track is
// a thread of its process: thread tracks keep their TID, lanes get numbers
// past any TID).
func (jw *jsonWriter) declare(tr *track) {
	var ph string
	switch tr.kind {
	case trackProcess:
		ph = "process_name"
	case trackThread, trackLane:
		ph = "thread_name"
	default:
		return
	}
	jw.open(ph, "M")
	jw.buf = append(jw.buf, `,"ts":0`...)
	jw.trackIDs(tr, false)
	jw.buf = append(jw.buf, `,"args":{"name":`...)
	jw.buf = appendJSONString(jw.buf, tr.name)
	jw.buf = append(jw.buf, '}')
	jw.close()
}

func (jw *jsonWriter) begin(t int64, tr *track, n sliceName, c category, args []arg, flowOut, flowIn uint64, dur int64) {
	if dur < 0 {
		jw.openName(n, c, "B")
		jw.ts(`,"ts":`, t)
		jw.trackIDs(tr, false)
		jw.args(args)
		jw.close()
		return
	}
	jw.openComplete(t, tr, &n, c, dur)
	jw.args(args)
	jw.close()
	jw.flows(t, tr, flowOut, flowIn)
}

// openComplete opens a complete event ("X") of name n and category c at t
// lasting dur on tr, up to its arguments.
func (jw *jsonWriter) openComplete(t int64, tr *track, n *sliceName, c category, dur int64) {
	if n.kind == nameAPI && int(n.id) < len(jw.apiOpen) {
		jw.openCall(n, c)
		jw.tsValue(t)
	} else {
		jw.openName(*n, c, "X")
		jw.ts(`,"ts":`, t)
	}
	jw.ts(`,"dur":`, dur)
	jw.trackIDs(tr, false)
}

// flows writes the flow events that leave (flowOut) and reach (flowIn) an
// event at t on tr, 0 for none.
func (jw *jsonWriter) flows(t int64, tr *track, flowOut, flowIn uint64) {
	if flowOut != 0 {
		jw.flow("s", t, tr, flowOut)
	}
	if flowIn != 0 {
		jw.flow("f", t, tr, flowIn)
	}
}

// call is begin of a call: a complete event, its arguments written from
// its fields in the order of their keys' names (args' order): bytes,
// caller, device, handle, result, stream.
func (jw *jsonWriter) call(t int64, tr *track, n *sliceName, cat category, c *callFields, flowOut, flowIn uint64, dur int64) {
	jw.openComplete(t, tr, n, cat, dur)
	b, sep := jw.buf, byte('{')
	if c.size != 0 {
		b = jsonKey(b, sep, keyBytes)
		b, sep = appendInt(b, int64(c.size)), ','
	}
	if c.caller != "" {
		b = jsonKey(b, sep, keyCaller)
		b, sep = appendJSONString(b, c.caller), ','
	}
	if c.device != trace.NoDevice {
		b = jsonKey(b, sep, keyDevice)
		b, sep = appendInt(b, int64(c.device)), ','
	}
	if c.handle != 0 {
		b = jsonKey(b, sep, keyHandle)
		b, sep = append(appendHexText(append(b, '"'), c.handle), '"'), ','
	}
	if !c.result.OK() {
		b = jsonKey(b, sep, keyResult)
		b, sep = appendJSONString(b, c.result.String()), ','
	}
	if c.stream != 0 {
		b = jsonKey(b, sep, keyStream)
		b, sep = append(appendHexText(append(b, '"'), c.stream), '"'), ','
	}
	if sep == ',' {
		b = append(b, '}')
	}
	jw.buf = b
	jw.close()
	jw.flows(t, tr, flowOut, flowIn)
}

// jsonKey appends an argument's key after sep: '{' (then the arguments'
// start) for the first, ',' for the others.
func jsonKey(b []byte, sep byte, k argKey) []byte {
	if sep == '{' {
		b = append(b, `,"args":{`...)
	} else {
		b = append(b, ',')
	}
	return append(b, keyJSON[k]...)
}

func (jw *jsonWriter) flow(ph string, t int64, tr *track, id uint64) {
	jw.openJSON(flowNameJSON, flowCatJSON, ph)
	jw.ts(`,"ts":`, t)
	jw.trackIDs(tr, false)
	jw.buf = append(jw.buf, `,"id":"`...)
	jw.buf = appendHex(jw.buf, id)
	jw.buf = append(jw.buf, '"')
	if ph == "f" {
		jw.buf = append(jw.buf, `,"bp":"e"`...)
	}
	jw.close()
}

func (jw *jsonWriter) end(t int64, tr *track, args []arg, call bool) {
	if call {
		return // a complete event
	}
	jw.openJSON(noNameJSON, nil, "E")
	jw.ts(`,"ts":`, t)
	jw.trackIDs(tr, false)
	jw.args(args)
	jw.close()
}

func (jw *jsonWriter) complete(tr *track, start, end int64, name sliceName, cat category, args []arg) {
	jw.begin(start, tr, name, cat, args, 0, 0, end-start)
}

func (jw *jsonWriter) instant(t int64, tr *track, name string) {
	jw.open(name, "i")
	jw.ts(`,"ts":`, t)
	jw.trackIDs(tr, false)
	jw.buf = append(jw.buf, `,"s":"t"`...)
	jw.close()
}

func (jw *jsonWriter) counter(t int64, tr *track, v int64) {
	i := int(tr.uuid)
	if i >= len(jw.counterName) {
		jw.counterName = append(jw.counterName, make([][]byte, i+1-len(jw.counterName))...)
	}
	if jw.counterName[i] == nil {
		jw.counterName[i] = appendJSONString(nil, tr.name)
	}
	jw.openJSON(jw.counterName[i], nil, "C")
	jw.ts(`,"ts":`, t)
	jw.trackIDs(tr, true)
	jw.buf = append(jw.buf, `,"args":{"bytes":`...)
	jw.buf = appendInt(jw.buf, v)
	jw.buf = append(jw.buf, '}')
	jw.close()
}

const hexDigits = "0123456789abcdef"

// appendHex appends the lowercase hex digits of v, as strconv.AppendUint
// with base 16 does.
func appendHex(b []byte, v uint64) []byte {
	var d [16]byte
	i := len(d)
	for {
		i--
		d[i] = hexDigits[v&0xf]
		if v >>= 4; v == 0 {
			return append(b, d[i:]...)
		}
	}
}

// jsonSafe says which bytes appendJSONString copies as they are: ASCII
// but control characters, quotes, backslashes, <, > and &.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return
}()

// appendJSONString appends s as a JSON string the way encoding/json does:
// control characters, quotes, backslashes, <, > and & escaped, invalid
// UTF-8 replaced by U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := decodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func decodeRune[S string | []byte](s S) (rune, int) {
	switch s := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(s)
	case []byte:
		return utf8.DecodeRune(s)
	}
	return utf8.RuneError, 1
}
