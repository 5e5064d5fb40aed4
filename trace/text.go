package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextHeader is the first line of the text twin of a trace.
const TextHeader = "cuprof-text 1"

// maxTextLine bounds one line of the text form.
const maxTextLine = 16 << 20

// TextError is a syntax error in the text form of a trace.
type TextError struct {
	Line int    // 1-based line number
	Msg  string // what is wrong
}

func (e *TextError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// ReadText parses the text twin of a trace (see docs/format.md). Events are
// returned in SortEvents order. Errors are *TextError values naming the line.
func ReadText(r io.Reader) (*Trace, error) {
	p := textParser{
		st: NewStringTable(),
		t:  &Trace{},
	}
	if err := p.read(r); err != nil {
		return nil, err
	}
	p.t.Strings = p.st.Strings
	SortEvents(p.t.Events)
	return p.t, nil
}

// read parses the lines of r: tables into p.t, events into p.t.Events or,
// when p.event is set, to it.
func (p *textParser) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxTextLine)
	sawHeader := false
	for sc.Scan() {
		p.line++
		s := strings.TrimRight(sc.Text(), " \t\r")
		s = strings.TrimLeft(s, " \t")
		if s == "" || s[0] == '#' {
			continue
		}
		if !sawHeader {
			if s != TextHeader {
				if strings.HasPrefix(s, "cuprof-text ") {
					return p.errf("unsupported text version %q (this cuprof reads %q)", s, TextHeader)
				}
				return p.errf("not a cuprof text trace: first line must be %q", TextHeader)
			}
			sawHeader = true
			continue
		}
		if err := p.parseLine(s); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &TextError{p.line + 1, fmt.Sprintf("line longer than %d bytes", maxTextLine)}
		}
		return fmt.Errorf("line %d: %w", p.line+1, err)
	}
	if !sawHeader {
		return &TextError{1, fmt.Sprintf("empty input: missing %q header", TextHeader)}
	}
	return nil
}

type textParser struct {
	line    int
	st      *StringTable
	t       *Trace
	sawMeta bool
	// event, when set, takes each event as it is parsed (the stream of
	// textSpool), instead of p.t.Events
	event func(*Event) error
}

func (p *textParser) errf(format string, args ...any) error {
	return &TextError{p.line, fmt.Sprintf(format, args...)}
}

// token is one key=value pair of a line.
type token struct {
	key, val string
}

// splitTokens splits s into its first word and the key=value tokens after it.
func (p *textParser) splitTokens(s string) (string, []token, error) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, nil, nil
	}
	word, rest := s[:i], s[i:]
	var toks []token
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			return word, toks, nil
		}
		eq := strings.IndexByte(rest, '=')
		sp := strings.IndexAny(rest, " \t")
		if eq < 0 || (sp >= 0 && sp < eq) {
			end := sp
			if end < 0 {
				end = len(rest)
			}
			return "", nil, p.errf("expected key=value, got %q", rest[:end])
		}
		key := rest[:eq]
		if key == "" {
			return "", nil, p.errf("empty key before '='")
		}
		if strings.ContainsAny(key, "\"\\") {
			return "", nil, p.errf("bad key %q: keys are bare words", key)
		}
		rest = rest[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return "", nil, p.errf("bad quoted value for %s: %v", key, err)
			}
			val, _ = strconv.Unquote(q) // QuotedPrefix validated it
			rest = rest[len(q):]
			if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
				return "", nil, p.errf("expected a space after the quoted value of %s", key)
			}
		} else {
			end := strings.IndexAny(rest, " \t")
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		for _, t := range toks {
			if t.key == key {
				return "", nil, p.errf("duplicate key %s", key)
			}
		}
		toks = append(toks, token{key, val})
	}
}

func (p *textParser) parseLine(s string) error {
	word := s
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		word = s[:i]
	}
	if k, ok := ParseKind(word); ok {
		return p.parseEvent(k, s)
	}
	word, toks, err := p.splitTokens(s)
	if err != nil {
		return err
	}
	switch word {
	case "meta":
		return p.parseMeta(toks)
	case "gpu":
		return p.parseGPU(toks)
	case "process":
		return p.parseProcess(toks)
	case "thread":
		return p.parseThread(toks)
	case "mapping":
		return p.parseMapping(toks)
	case "symbol":
		return p.parseSymbol(toks)
	case "drop":
		return p.parseDrop(toks)
	case "code":
		return p.parseCode(toks)
	}
	return p.errf("unknown line kind %q (want meta, gpu, process, thread, mapping, symbol, drop, code or an event kind: call, push, pop, start, end, span, mark, name, frame)", word)
}

// fieldSetter parses one value into its destination.
type fieldSetter func(val string) error

func (p *textParser) apply(what string, toks []token, setters map[string]fieldSetter, dynamic func(key, val string) (bool, error)) error {
	for _, t := range toks {
		set, ok := setters[t.key]
		if !ok {
			if dynamic != nil {
				handled, err := dynamic(t.key, t.val)
				if err != nil {
					return p.errf("%s %s: %v", what, t.key, err)
				}
				if handled {
					continue
				}
			}
			return p.errf("unknown key %q on a %s line (known: %s)", t.key, what, knownKeys(setters))
		}
		if err := set(t.val); err != nil {
			return p.errf("%s %s=%q: %v", what, t.key, t.val, err)
		}
	}
	return nil
}

func knownKeys(m map[string]fieldSetter) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

func setString(dst *string) fieldSetter {
	return func(v string) error { *dst = v; return nil }
}

func setArgs(dst *[]string) fieldSetter {
	return func(v string) error {
		args, err := splitArgs(v)
		*dst = args
		return err
	}
}

func setInt64(dst *int64) fieldSetter {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		*dst = n
		return err
	}
}

func setInt32(dst *int32) fieldSetter {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		*dst = int32(n)
		return err
	}
}

func setUint32(dst *uint32) fieldSetter {
	return func(v string) error {
		n, err := parseUint(v, 32)
		*dst = uint32(n)
		return err
	}
}

func setUint8(dst *uint8) fieldSetter {
	return func(v string) error {
		n, err := parseUint(v, 8)
		*dst = uint8(n)
		return err
	}
}

func setUint64(dst *uint64) fieldSetter {
	return func(v string) error {
		n, err := parseUint(v, 64)
		*dst = n
		return err
	}
}

func setFloat(dst *float64) fieldSetter {
	return func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		*dst = f
		return err
	}
}

// parseUint parses decimal or 0x-prefixed hexadecimal.
func parseUint(s string, bits int) (uint64, error) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return strconv.ParseUint(s[2:], 16, bits)
	}
	return strconv.ParseUint(s, 10, bits)
}

func (p *textParser) parseMeta(toks []token) error {
	if p.sawMeta {
		return p.errf("second meta line (a trace has one)")
	}
	p.sawMeta = true
	m := &p.t.Meta
	return p.apply("meta", toks, map[string]fieldSetter{
		"host":           setString(&m.Host),
		"capture":        setString(&m.Capture),
		"driver":         setInt32(&m.DriverVersion),
		"cuprof":         setString(&m.CuprofVersion),
		"clock":          setString(&m.Clock.Source),
		"tsc_hz":         setFloat(&m.Clock.TSCHz),
		"inside_ns":      setFloat(&m.Overhead.InsideNs),
		"added_ns":       setFloat(&m.Overhead.AddedNs),
		"py_event_ns":    setFloat(&m.Overhead.PyEventNs),
		"inplace_ns":     setFloat(&m.Overhead.InPlaceNs),
		"inplace_calls":  setInt64(&m.Overhead.InPlaceCalls),
		"wall_start":     setInt64(&m.WallStart),
		"mono_start":     setInt64(&m.MonoStart),
		"cmd":            setArgs(&m.Command),
		"when_full":      setString(&m.WhenFull),
		"full_waits":     setUint64(&m.FullWaits),
		"full_wait_ns":   setInt64(&m.FullWaitNs),
		"capture_range":  setString(&m.CaptureRange),
		"clock_sync":     setUint8(&m.Sync.State),
		"est_error_ns":   setInt64(&m.Sync.EstErrorNs),
		"max_error_ns":   setInt64(&m.Sync.MaxErrorNs),
		"wall_end":       setInt64(&m.Sync.WallEnd),
		"mono_end":       setInt64(&m.Sync.MonoEnd),
		"py_c_event_ns":  setFloat(&m.Overhead.PyCEventNs),
		"py_inside_ns":   setFloat(&m.Overhead.PyInsideNs),
		"py_c_inside_ns": setFloat(&m.Overhead.PyCInsideNs),
		"py_hidden_ns":   setFloat(&m.Overhead.PyHiddenNs),
		"py_c_hidden_ns": setFloat(&m.Overhead.PyCHiddenNs),
		"py_lone_ns":     setFloat(&m.Overhead.PyLoneNs),
	}, nil)
}

func (p *textParser) parseGPU(toks []token) error {
	var g GPU
	if err := p.apply("gpu", toks, map[string]fieldSetter{
		"ordinal": setInt32(&g.Ordinal),
		"name":    setString(&g.Name),
		"uuid":    setString(&g.UUID),
	}, nil); err != nil {
		return err
	}
	p.t.Meta.GPUs = append(p.t.Meta.GPUs, g)
	return nil
}

func (p *textParser) parseProcess(toks []token) error {
	var pr Process
	if err := p.apply("process", toks, map[string]fieldSetter{
		"pid":        setUint32(&pr.PID),
		"ppid":       setUint32(&pr.PPID),
		"exe":        setString(&pr.Exe),
		"cmd":        setArgs(&pr.Cmdline),
		"start":      setInt64(&pr.Start),
		"end":        setInt64(&pr.End),
		"exit":       setInt32(&pr.ExitCode),
		"signal":     setInt32(&pr.Signal),
		"python":     setString(&pr.Python),
		"host":       setString(&pr.Host),
		"boot_id":    setString(&pr.BootID),
		"machine_id": setString(&pr.MachineID),
		"host_ns":    setString(&pr.HostNS),
		"container":  setString(&pr.Container),
		"os_pid":     setUint32(&pr.OSPID),
	}, func(key, val string) (bool, error) {
		name, ok := strings.CutPrefix(key, "env.")
		if !ok {
			return false, nil
		}
		if name == "" {
			return true, errors.New("empty environment variable name")
		}
		if pr.Env == nil {
			pr.Env = map[string]string{}
		}
		pr.Env[name] = val
		return true, nil
	}); err != nil {
		return err
	}
	p.t.Processes = append(p.t.Processes, pr)
	return nil
}

func (p *textParser) parseThread(toks []token) error {
	var th Thread
	if err := p.apply("thread", toks, map[string]fieldSetter{
		"pid":  setUint32(&th.PID),
		"tid":  setUint32(&th.TID),
		"name": setString(&th.Name),
	}, nil); err != nil {
		return err
	}
	p.t.Threads = append(p.t.Threads, th)
	return nil
}

func (p *textParser) parseMapping(toks []token) error {
	var m Mapping
	if err := p.apply("mapping", toks, map[string]fieldSetter{
		"pid":     setUint32(&m.PID),
		"start":   setUint64(&m.Start),
		"limit":   setUint64(&m.Limit),
		"offset":  setUint64(&m.Offset),
		"file":    setString(&m.File),
		"buildid": setString(&m.BuildID),
	}, nil); err != nil {
		return err
	}
	p.t.Mappings = append(p.t.Mappings, m)
	return nil
}

func (p *textParser) parseSymbol(toks []token) error {
	var s Symbol
	if err := p.apply("symbol", toks, map[string]fieldSetter{
		"pid":  setUint32(&s.PID),
		"addr": setUint64(&s.Addr),
		"size": setUint64(&s.Size),
		"name": setString(&s.Name),
	}, nil); err != nil {
		return err
	}
	p.t.Symbols = append(p.t.Symbols, s)
	return nil
}

func (p *textParser) parseDrop(toks []token) error {
	var d Drop
	if err := p.apply("drop", toks, map[string]fieldSetter{
		"pid":    setUint32(&d.PID),
		"tid":    setUint32(&d.TID),
		"events": setUint64(&d.Events),
		"reason": setString(&d.Reason),
	}, nil); err != nil {
		return err
	}
	p.t.Drops = append(p.t.Drops, d)
	return nil
}

// parseCode parses "code id=N kind=python|native name=... module=... file=... line=N".
// IDs start at 1 and follow each other, so that a code line's ID is its index
// in Trace.Code; an event may only name a code line above it.
func (p *textParser) parseCode(toks []token) error {
	var c Code
	var id uint32
	var name, module, file string
	if err := p.apply("code", toks, map[string]fieldSetter{
		"id": setUint32(&id),
		"kind": func(v string) error {
			k, ok := ParseCodeKind(v)
			if !ok {
				n, err := strconv.ParseUint(v, 10, 8)
				if err != nil {
					return errors.New("want python, native or a number")
				}
				k = CodeKind(n)
			}
			c.Kind = k
			return nil
		},
		"name":   setString(&name),
		"module": setString(&module),
		"file":   setString(&file),
		"line":   setUint32(&c.Line),
	}, nil); err != nil {
		return err
	}
	if len(p.t.Code) == 0 {
		p.t.Code = []Code{{}}
	}
	if want := uint32(len(p.t.Code)); id != want {
		return p.errf("code id=%d: want id=%d (code lines are numbered 1, 2, ... in order)", id, want)
	}
	c.Name, c.Module, c.File = p.st.ID(name), p.st.ID(module), p.st.ID(file)
	p.t.Code = append(p.t.Code, c)
	return nil
}

// parseEvent parses "KIND PID/TID t=START key=value...".
func (p *textParser) parseEvent(k Kind, s string) error {
	// The PID/TID word has no '=' and so is not a token: take it by hand.
	rest := strings.TrimLeft(s[len(k.String()):], " \t")
	end := strings.IndexAny(rest, " \t")
	if end < 0 {
		end = len(rest)
	}
	pidtid := rest[:end]
	if strings.Contains(pidtid, "=") || pidtid == "" {
		return p.errf("%s: expected PID/TID after the kind, got %q", k, pidtid)
	}
	_, toks, err := p.splitTokens("x " + rest[end:])
	if err != nil {
		return err
	}
	ps, ts, ok := strings.Cut(pidtid, "/")
	if !ok {
		return p.errf("%s: expected PID/TID, got %q", k, pidtid)
	}
	pid, err1 := parseUint(ps, 32)
	tid, err2 := parseUint(ts, 32)
	if err1 != nil || err2 != nil {
		return p.errf("%s: bad PID/TID %q: want two decimal numbers", k, pidtid)
	}
	e := Event{Kind: k, PID: uint32(pid), TID: uint32(tid), Device: NoDevice}
	if len(toks) == 0 || toks[0].key != "t" {
		return p.errf("%s: expected t=START after PID/TID", k)
	}
	if e.Start, err = strconv.ParseInt(toks[0].val, 10, 64); err != nil {
		return p.errf("%s t=%q: want a decimal time in ns", k, toks[0].val)
	}
	e.End = e.Start
	for _, t := range toks[1:] {
		f, ok := fieldByKey[t.key]
		if !ok {
			return p.errf("unknown key %q on a %s event (known: t %s)", t.key, k, eventKeys())
		}
		if err := p.setEventField(&e, f, t.val); err != nil {
			return p.errf("%s %s=%q: %v", k, t.key, t.val, err)
		}
	}
	if e.End < e.Start {
		return p.errf("%s t=%d end=%d: the event ends before it starts (end must be at least t)", k, e.Start, e.End)
	}
	if p.event != nil {
		if err := p.event(&e); err != nil {
			return p.errf("%s: %v", k, err)
		}
		return nil
	}
	p.t.Events = append(p.t.Events, e)
	return nil
}

func eventKeys() string {
	var b strings.Builder
	for f := field(0); f < fieldCount; f++ {
		if f > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(eventFields[f].key)
	}
	return b.String()
}

// resultByName maps driver result names to results.
var resultByName = func() map[string]Result {
	m := make(map[string]Result, len(resultNames))
	for r, n := range resultNames {
		m[n] = r
	}
	return m
}()

func (p *textParser) setEventField(e *Event, f field, v string) error {
	spec := &eventFields[f]
	switch spec.syntax {
	case syntaxInt:
		bits := 64
		if f == fieldDevice {
			bits = 32
		}
		n, err := strconv.ParseInt(v, 10, bits)
		if err != nil {
			return errors.New("want a signed decimal number")
		}
		e.setFieldBits(f, uint64(n))
	case syntaxUint, syntaxHex:
		n, err := parseUint(v, 64)
		if err != nil || n > fieldLimits[f] {
			return fmt.Errorf("want a number up to %#x (decimal or 0x hex)", fieldLimits[f])
		}
		e.setFieldBits(f, n)
	case syntaxAPI:
		if a, ok := LookupAPI(v); ok {
			e.API = a
			return nil
		}
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return errors.New("unknown driver API (want a base name from trace/spec/driver_apis.txt or a number)")
		}
		e.API = API(n)
	case syntaxResult:
		if r, ok := resultByName[v]; ok {
			e.Result = r
			return nil
		}
		r, err := ParseResult(v)
		if err != nil {
			return errors.New("want a CUresult name such as CUDA_ERROR_INVALID_VALUE, CUresult(N) or a number")
		}
		e.Result = r
	case syntaxObject:
		if o, ok := ParseObject(v); ok {
			e.Object = o
			return nil
		}
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil {
			return errors.New("unknown object kind (want stream, event, context, allocation, pool, ... or a number)")
		}
		e.Object = Object(n)
	case syntaxString:
		e.setFieldBits(f, uint64(p.st.ID(v)))
	case syntaxCode:
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return errors.New("want the id of a code line")
		}
		if n >= uint64(len(p.t.Code)) && n != 0 {
			return fmt.Errorf("no code line with id=%d above this event", n)
		}
		e.Code = CodeID(n)
	}
	return nil
}

// splitArgs splits a command line written by joinArgs: arguments separated by
// spaces, each either bare or Go-quoted.
func splitArgs(s string) ([]string, error) {
	var args []string
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return args, nil
		}
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("bad quoted argument: %v", err)
			}
			a, _ := strconv.Unquote(q)
			args = append(args, a)
			s = s[len(q):]
			if s != "" && s[0] != ' ' {
				return nil, errors.New("expected a space after a quoted argument")
			}
			continue
		}
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			i = len(s)
		}
		args = append(args, s[:i])
		s = s[i:]
	}
}

// joinArgs writes a command line so that splitArgs gives it back.
func joinArgs(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if needsQuote(a) {
			b.WriteString(strconv.Quote(a))
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

// needsQuote reports whether s must be Go-quoted to survive as a value.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == '"' || s[0] == '#' {
		return true
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f {
			return true
		}
	}
	if ascii {
		return false // printable ASCII but the bytes above: as the rune loop says
	}
	for _, r := range s {
		if r == utf8.RuneError || r <= ' ' || r == '"' || r == '=' || r == '\\' || r == 0x7f || !unicode.IsPrint(r) {
			return true
		}
	}
	return !utf8.ValidString(s)
}

// WriteText writes t in the text form. The output is deterministic and
// ReadText gives back an equal trace (strings re-interned in order of first
// use, events in SortEvents order).
func WriteText(w io.Writer, t *Trace) error {
	tw, err := NewTextWriter(w, t)
	if err != nil {
		return err
	}
	for i := range t.Events {
		if err := tw.WriteEvent(&t.Events[i]); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// TextWriter writes the text form as a stream, for events read as one
// (File.Events): the header and tables first, then one event at a time.
// WriteText(w, t) is NewTextWriter(w, t), WriteEvent for each of t.Events,
// Flush.
type TextWriter struct {
	tw textWriter
}

// NewTextWriter writes the header and the tables of t (its Events are not
// read) to w, buffered, and returns a writer for the events, whose names
// refer to t.Strings.
func NewTextWriter(w io.Writer, t *Trace) (*TextWriter, error) {
	tw := &TextWriter{textWriter{w: bufio.NewWriterSize(w, 64<<10), t: t}}
	if err := tw.tw.tables(); err != nil {
		return nil, err
	}
	return tw, nil
}

// WriteEvent writes one event line. Events should come in SortEvents order
// for the text to read back to the same trace order.
func (w *TextWriter) WriteEvent(e *Event) error { return w.tw.event(e) }

// Flush writes what is buffered and returns the first write error.
func (w *TextWriter) Flush() error { return w.tw.w.Flush() }

type textWriter struct {
	w   *bufio.Writer
	t   *Trace
	buf []byte
}

func (tw *textWriter) line() {
	tw.buf = append(tw.buf, '\n')
	tw.w.Write(tw.buf)
	tw.buf = tw.buf[:0]
}

func (tw *textWriter) word(s string) {
	tw.buf = append(tw.buf, s...)
}

func (tw *textWriter) str(key, v string) {
	tw.buf = append(tw.buf, ' ')
	tw.buf = append(tw.buf, key...)
	tw.buf = append(tw.buf, '=')
	if needsQuote(v) {
		tw.buf = strconv.AppendQuote(tw.buf, v)
	} else {
		tw.buf = append(tw.buf, v...)
	}
}

func (tw *textWriter) optStr(key, v string) {
	if v != "" {
		tw.str(key, v)
	}
}

func (tw *textWriter) args(key string, v []string) {
	if len(v) > 0 {
		tw.str(key, joinArgs(v))
	}
}

func (tw *textWriter) int(key string, v int64) {
	tw.buf = append(tw.buf, ' ')
	tw.buf = append(tw.buf, key...)
	tw.buf = append(tw.buf, '=')
	tw.buf = strconv.AppendInt(tw.buf, v, 10)
}

func (tw *textWriter) optInt(key string, v int64) {
	if v != 0 {
		tw.int(key, v)
	}
}

func (tw *textWriter) optUint(key string, v uint64) {
	if v != 0 {
		tw.buf = append(tw.buf, ' ')
		tw.buf = append(tw.buf, key...)
		tw.buf = append(tw.buf, '=')
		tw.buf = strconv.AppendUint(tw.buf, v, 10)
	}
}

func (tw *textWriter) hex(key string, v uint64) {
	tw.buf = append(tw.buf, ' ')
	tw.buf = append(tw.buf, key...)
	tw.buf = append(tw.buf, "=0x"...)
	tw.buf = strconv.AppendUint(tw.buf, v, 16)
}

func (tw *textWriter) optHex(key string, v uint64) {
	if v != 0 {
		tw.hex(key, v)
	}
}

func (tw *textWriter) optFloat(key string, v float64) {
	if v != 0 || math.Signbit(v) {
		tw.buf = append(tw.buf, ' ')
		tw.buf = append(tw.buf, key...)
		tw.buf = append(tw.buf, '=')
		tw.buf = strconv.AppendFloat(tw.buf, v, 'g', -1, 64)
	}
}

// tables writes the header and table lines.
func (tw *textWriter) tables() error {
	t := tw.t
	tw.word(TextHeader)
	tw.line()
	m := &t.Meta
	tw.word("meta")
	tw.optStr("host", m.Host)
	tw.optStr("capture", m.Capture)
	tw.optInt("driver", int64(m.DriverVersion))
	tw.optStr("cuprof", m.CuprofVersion)
	tw.optStr("clock", m.Clock.Source)
	tw.optFloat("tsc_hz", m.Clock.TSCHz)
	tw.optFloat("inside_ns", m.Overhead.InsideNs)
	tw.optFloat("added_ns", m.Overhead.AddedNs)
	tw.optFloat("py_event_ns", m.Overhead.PyEventNs)
	tw.optFloat("inplace_ns", m.Overhead.InPlaceNs)
	tw.optInt("inplace_calls", m.Overhead.InPlaceCalls)
	tw.optFloat("py_c_event_ns", m.Overhead.PyCEventNs)
	tw.optFloat("py_inside_ns", m.Overhead.PyInsideNs)
	tw.optFloat("py_c_inside_ns", m.Overhead.PyCInsideNs)
	tw.optFloat("py_hidden_ns", m.Overhead.PyHiddenNs)
	tw.optFloat("py_c_hidden_ns", m.Overhead.PyCHiddenNs)
	tw.optFloat("py_lone_ns", m.Overhead.PyLoneNs)
	tw.optInt("wall_start", m.WallStart)
	tw.optInt("mono_start", m.MonoStart)
	tw.args("cmd", m.Command)
	tw.optStr("when_full", m.WhenFull)
	tw.optUint("full_waits", m.FullWaits)
	tw.optInt("full_wait_ns", m.FullWaitNs)
	tw.optStr("capture_range", m.CaptureRange)
	tw.optInt("clock_sync", int64(m.Sync.State))
	tw.optInt("est_error_ns", m.Sync.EstErrorNs)
	tw.optInt("max_error_ns", m.Sync.MaxErrorNs)
	tw.optInt("wall_end", m.Sync.WallEnd)
	tw.optInt("mono_end", m.Sync.MonoEnd)
	tw.line()
	for _, g := range m.GPUs {
		tw.word("gpu")
		tw.int("ordinal", int64(g.Ordinal))
		tw.optStr("name", g.Name)
		tw.optStr("uuid", g.UUID)
		tw.line()
	}
	for i := range t.Processes {
		p := &t.Processes[i]
		tw.word("process")
		tw.int("pid", int64(p.PID))
		tw.optInt("ppid", int64(p.PPID))
		tw.optStr("exe", p.Exe)
		tw.args("cmd", p.Cmdline)
		tw.optInt("start", p.Start)
		tw.optInt("end", p.End)
		tw.optInt("exit", int64(p.ExitCode))
		tw.optInt("signal", int64(p.Signal))
		tw.optStr("python", p.Python)
		tw.optStr("host", p.Host)
		tw.optStr("boot_id", p.BootID)
		tw.optStr("machine_id", p.MachineID)
		tw.optStr("host_ns", p.HostNS)
		tw.optStr("container", p.Container)
		tw.optInt("os_pid", int64(p.OSPID))
		keys := make([]string, 0, len(p.Env))
		for k := range p.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "" || strings.ContainsAny(k, " \t\n=\"\\") {
				return fmt.Errorf("write text: process %d: environment variable name %q cannot be written", p.PID, k)
			}
			tw.str("env."+k, p.Env[k])
		}
		tw.line()
	}
	for _, th := range t.Threads {
		tw.word("thread")
		tw.int("pid", int64(th.PID))
		tw.int("tid", int64(th.TID))
		tw.optStr("name", th.Name)
		tw.line()
	}
	for _, mp := range t.Mappings {
		tw.word("mapping")
		tw.int("pid", int64(mp.PID))
		tw.hex("start", mp.Start)
		tw.hex("limit", mp.Limit)
		tw.optHex("offset", mp.Offset)
		tw.optStr("file", mp.File)
		tw.optStr("buildid", mp.BuildID)
		tw.line()
	}
	for _, s := range t.Symbols {
		tw.word("symbol")
		tw.int("pid", int64(s.PID))
		tw.hex("addr", s.Addr)
		tw.optHex("size", s.Size)
		tw.optStr("name", s.Name)
		tw.line()
	}
	for _, d := range t.Drops {
		tw.word("drop")
		tw.int("pid", int64(d.PID))
		tw.int("tid", int64(d.TID))
		tw.optUint("events", d.Events)
		tw.optStr("reason", d.Reason)
		tw.line()
	}
	for i, c := range t.Code {
		if i == 0 {
			if c != (Code{}) {
				return errors.New("write text: Code[0] must be the zero entry")
			}
			continue
		}
		if max(c.Name, c.Module, c.File) >= StringID(len(t.Strings)) {
			return fmt.Errorf("write text: code %d: string ID out of range (%d strings)", i, len(t.Strings))
		}
		tw.word("code")
		tw.int("id", int64(i))
		if c.Kind.Valid() {
			tw.str("kind", c.Kind.String())
		} else {
			tw.optUint("kind", uint64(c.Kind))
		}
		tw.optStr("name", t.Strings[c.Name])
		tw.optStr("module", t.Strings[c.Module])
		tw.optStr("file", t.Strings[c.File])
		tw.optUint("line", uint64(c.Line))
		tw.line()
	}
	return nil
}

func (tw *textWriter) event(e *Event) error {
	if !e.Kind.Valid() {
		return fmt.Errorf("write text: event with invalid kind %d", e.Kind)
	}
	tw.word(e.Kind.String())
	tw.buf = append(tw.buf, ' ')
	tw.buf = strconv.AppendUint(tw.buf, uint64(e.PID), 10)
	tw.buf = append(tw.buf, '/')
	tw.buf = strconv.AppendUint(tw.buf, uint64(e.TID), 10)
	tw.int("t", e.Start)
	for f := field(0); f < fieldCount; f++ {
		if !e.present(f) {
			continue
		}
		spec := &eventFields[f]
		switch spec.syntax {
		case syntaxInt:
			tw.int(spec.key, int64(e.fieldBits(f)))
		case syntaxUint:
			tw.optUint(spec.key, e.fieldBits(f))
		case syntaxHex:
			tw.hex(spec.key, e.fieldBits(f))
		case syntaxAPI:
			if e.API.Valid() {
				tw.str(spec.key, e.API.String())
			} else {
				tw.optUint(spec.key, uint64(e.API))
			}
		case syntaxResult:
			tw.str(spec.key, e.Result.String())
		case syntaxObject:
			if e.Object < objectLimit {
				tw.str(spec.key, e.Object.String())
			} else {
				tw.optUint(spec.key, uint64(e.Object))
			}
		case syntaxString:
			id := StringID(e.fieldBits(f))
			if int(id) >= len(tw.t.Strings) {
				return fmt.Errorf("write text: %s event at t=%d: %s string ID %d out of range (%d strings)",
					e.Kind, e.Start, spec.key, id, len(tw.t.Strings))
			}
			tw.str(spec.key, tw.t.Strings[id])
		case syntaxCode:
			if int(e.Code) >= len(tw.t.Code) {
				return fmt.Errorf("write text: %s event at t=%d: code ID %d out of range (%d code entries)",
					e.Kind, e.Start, e.Code, len(tw.t.Code))
			}
			tw.optUint(spec.key, uint64(e.Code))
		}
	}
	tw.line()
	return nil
}
