package trace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"slices"
)

// File is a trace opened for reading as a stream: its tables are loaded,
// its events are read from the file in SortEvents order each time Events or
// NewEventReader is called, so a trace of any length is read in memory
// bounded independent of its number of events (docs/format.md, "Reading as
// a stream", states the bound).
//
//	f, err := trace.Open("run.cuprof")
//	...
//	defer f.Close()
//	t := f.Tables()               // Meta, Strings, Processes, ..., Loss
//	for e, err := range f.Events() {
//		if err != nil { ... }       // damage found while reading
//		use(t, e)                   // e is valid until the next event
//	}
//
// A File of the text twin reads it as it comes into the binary form
// (spoolText), so it holds no events either. A File is safe for concurrent use: each
// EventReader has its own state. The file must not change while it is open.
type File struct {
	tables *Trace
	bin    *binaryIndex // binary form
	src    source
	text   []Event // text form: all events
	closer io.Closer
}

// Open opens the trace at path, binary or text, and loads its tables. A
// binary file is read with positioned reads, never all at once.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		// A pipe or device: read it through once (OpenReader refuses one
		// that does not start like a trace, such as /dev/zero).
		tf, err := OpenReader(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return tf, nil
	}
	tf, err := NewFile(f, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tf.closer = f
	return tf, nil
}

// NewFile reads the tables of the trace (binary or text) of size bytes in r.
// Events are read from r as they are iterated; r must stay readable until
// the File is no longer used.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	head := make([]byte, len(binaryMagic))
	n, _ := r.ReadAt(head, 0)
	if n == len(head) && string(head) == binaryMagic {
		src := &fileSource{r: r, n: size}
		f, err := newBinaryFile(src)
		src.win = nil // the scan's read-ahead window is not needed any more
		return f, err
	}
	return OpenReader(io.NewSectionReader(r, 0, size))
}

// OpenReader reads a trace (binary or text) from r, for input that cannot
// be read at positions, such as standard input or a pipe. The first bytes
// decide: input that starts like neither form is refused before more is
// read. A binary trace is copied into a temporary file (private, removed at
// once, in os.TempDir) and read from there as a stream, so its events are
// never all in memory; where no temporary file can be made it is held in
// memory in its encoded form (about 8 bytes per event). The text form is
// parsed as it comes and each event written to such a file in the binary
// form (spoolText), so its events are never all in memory either.
func OpenReader(r io.Reader) (*File, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(binaryMagic))
	if bytes.Equal(head, []byte(binaryMagic)) {
		return spoolBinary(br)
	}
	if !looksLikeText(br) {
		return nil, notTrace(head)
	}
	return spoolText(br)
}

// spoolBinary copies the binary trace r into an unlinked temporary file and
// opens it from there; without a temporary file, it reads r into memory.
func spoolBinary(r io.Reader) (*File, error) {
	tmp, err := os.CreateTemp("", ".cuprof-stdin-*")
	if err != nil {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		return newBinaryFile(memSource(data))
	}
	os.Remove(tmp.Name()) // nobody else opens it; it goes when closed
	n, err := io.Copy(tmp, r)
	if err != nil {
		tmp.Close()
		return nil, fmt.Errorf("copy the trace to a temporary file in %s: %w (set TMPDIR to a directory with room)", os.TempDir(), err)
	}
	f, err := NewFile(tmp, n)
	if err != nil {
		tmp.Close()
		return nil, err
	}
	f.closer = tmp
	return f, nil
}

func newBinaryFile(src source) (*File, error) {
	ix, err := scanBinary(src, true)
	if err != nil {
		return nil, err
	}
	return &File{tables: ix.tables, bin: ix, src: src}, nil
}

// Tables returns the trace without its events: Meta, Strings, Processes,
// Threads, Mappings, Symbols, Drops, Code, and Loss when the file was cut
// short (what precedes the cut is read). Its Events is nil. The caller must
// not modify it.
func (f *File) Tables() *Trace { return f.tables }

// NumEvents returns the number of events the file holds.
func (f *File) NumEvents() int64 {
	if f.bin != nil {
		return f.bin.events
	}
	return int64(len(f.text))
}

// Events returns the events in SortEvents order. The *Event of each step is
// the reader's and valid until the next step; the caller may modify it (for
// example fill in its device). An error (damage inside a batch, a failed
// read) ends the iteration.
func (f *File) Events() iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		r := f.NewEventReader()
		for e := range r.All() {
			if !yield(e, nil) {
				return
			}
		}
		if err := r.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// ReadAll reads the whole trace, events included, into memory. The tables
// are copies: the caller may modify the result.
func (f *File) ReadAll() (*Trace, error) {
	t := *f.tables
	t.Meta.GPUs = slices.Clone(t.Meta.GPUs)
	t.Strings, t.Processes, t.Threads = slices.Clone(t.Strings), slices.Clone(t.Processes), slices.Clone(t.Threads)
	t.Mappings, t.Symbols, t.Drops = slices.Clone(t.Mappings), slices.Clone(t.Symbols), slices.Clone(t.Drops)
	t.Code = slices.Clone(t.Code)
	if t.Loss != nil {
		l := *t.Loss
		t.Loss = &l
	}
	if f.bin != nil {
		t.Events = make([]Event, f.bin.events)
		_, inMemory := f.src.(memSource)
		if err := newEventMerger(f.src, f.bin, !inMemory).collect(t.Events); err != nil {
			return nil, err
		}
		return &t, nil
	}
	t.Events = make([]Event, 0, f.NumEvents())
	r := f.NewEventReader()
	for {
		e, err := r.Next()
		if err == io.EOF {
			return &t, nil
		}
		if err != nil {
			return nil, err
		}
		t.Events = append(t.Events, *e)
	}
}

// Close closes the file Open opened; it does nothing for other Files.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	c := f.closer
	f.closer = nil
	return c.Close()
}

// EventReader reads a File's events one at a time, in SortEvents order.
type EventReader struct {
	m    *eventMerger
	n    int64   // events of the trace
	run  []Event // events not yet returned: of m, a block, or (text form) all
	i    int
	copy Event // text form: the copy of its event the caller may modify
	err  error // what ended All

	// All's pipeline (pipeline.go): the producer while one runs, the
	// blocks it merged that were not handed out when it was stopped, its
	// empty blocks, whether run is one of them, and whether the merge has
	// ended.
	pipeMin int64 // usePipeline
	pipe    *pipeline
	pending [][]Event
	spare   [][]Event
	inBlock bool
	merged  bool
}

// NewEventReader returns a reader positioned at the first event.
func (f *File) NewEventReader(opts ...ReadOption) *EventReader {
	if f.bin != nil {
		var c readConfig
		for _, o := range opts {
			o.apply(&c)
		}
		_, inMemory := f.src.(memSource) // checked by the scan, cannot change
		r := &EventReader{m: newEventMerger(f.src, f.bin, !inMemory), n: f.bin.events, pipeMin: pipeMinEvents}
		if c.sequential {
			r.pipeMin = math.MaxInt64
		}
		return r
	}
	return &EventReader{run: f.text}
}

// ReadOption configures an EventReader.
type ReadOption struct{ apply func(*readConfig) }

type readConfig struct{ sequential bool }

// Sequential makes All merge the events on the consumer's goroutine. By
// default, for a trace of 2^16 events or more and with GOMAXPROCS above 1,
// All reads and merges them on a goroutine of its own, ahead of the
// consumer: a gain where a core would be idle, a loss for a consumer that
// keeps every core busy itself (cuprof timeline, whose output is encoded and
// compressed on a goroutine of its own).
func Sequential() ReadOption {
	return ReadOption{func(c *readConfig) { c.sequential = true }}
}

// Next returns the next event, or io.EOF after the last. The event is valid
// until the next call; the caller may modify it. After an error other than
// io.EOF, Next returns that error again.
func (r *EventReader) Next() (*Event, error) {
	if r.i == len(r.run) {
		if r.m == nil {
			return nil, io.EOF
		}
		run, err := r.advance(false)
		if err != nil {
			return nil, err
		}
		if len(run) == 0 {
			return nil, io.EOF
		}
		r.run, r.i = run, 0
	}
	e := &r.run[r.i]
	r.i++
	if r.m == nil {
		r.copy = *e
		e = &r.copy
	}
	return e, nil
}

// All returns the rest of the events as an iter.Seq, for consumers that take
// one (analysis.Run): the sequence ends at the last event or at an error,
// which Err then returns.
//
//	r := f.NewEventReader()
//	a := analysis.Run(f.Tables(), r.All())
//	if err := r.Err(); err != nil { ... }
func (r *EventReader) All() iter.Seq[*Event] {
	return func(yield func(*Event) bool) {
		if r.m != nil {
			r.allRuns(yield)
			return
		}
		for {
			e, err := r.Next()
			if err != nil {
				if err != io.EOF {
					r.err = err
				}
				return
			}
			if !yield(e) {
				return
			}
		}
	}
}

// allRuns is All for the binary form: the events of each run of the merge
// are handed out in a loop of their own, without a call of Next per event
// (r.i follows, so that Next goes on after an early stop). For a large
// trace the merge runs ahead on a goroutine of its own (pipeline.go), which
// ends before allRuns returns.
func (r *EventReader) allRuns(yield func(*Event) bool) {
	pipe := r.usePipeline()
	if pipe {
		defer r.stopPipeline()
	}
	for {
		for r.i < len(r.run) {
			e := &r.run[r.i]
			r.i++
			if !yield(e) {
				return
			}
		}
		run, err := r.advance(pipe)
		if err != nil {
			r.err = err
			return
		}
		if len(run) == 0 {
			return
		}
		r.run, r.i = run, 0
	}
}

// Err returns the error that ended All's sequence, or nil.
func (r *EventReader) Err() error { return r.err }

// OpenBatches returns the most event batches the reader has held open at
// once so far: what its memory depends on besides the tables (each open
// batch holds its payload and 64 decoded events). It is one per thread for
// batches written in time order, plus one per event written long after it
// started (docs/format.md, "Reading as a stream"); 0 for the text form.
func (r *EventReader) OpenBatches() int {
	if r.m == nil {
		return 0
	}
	return int(r.m.maxOpen.Load())
}
