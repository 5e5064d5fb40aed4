package trace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// spoolText reads the text form from r as a stream: each event goes, as it
// is parsed, to a binary trace in an unlinked temporary file (private, in
// os.TempDir; in memory, in its encoded form, where none can be made),
// which is then opened like any binary trace. Memory is the tables and one
// batch per thread, never the events: an endless text stream on standard
// input does not grow the reader. Events come out in SortEvents order, at
// equal Start, End and kind in thread order (by PID, then TID), then in the
// order of the text, as the binary form's do (ReadText keeps the text's
// order at such ties).
func spoolText(r io.Reader) (*File, error) {
	var out io.Writer
	var mem *bytes.Buffer
	tmp, err := os.CreateTemp("", ".cuprof-stdin-*")
	if err != nil {
		mem = new(bytes.Buffer)
		out = mem
	} else {
		os.Remove(tmp.Name()) // nobody else opens it; it goes when closed
		out = tmp
	}
	fail := func(err error) (*File, error) {
		if tmp != nil {
			tmp.Close()
		}
		return nil, err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	sp := &textSpool{w: newHeaderWriter(bw)}
	sp.p = textParser{st: NewStringTable(), t: &Trace{}, event: sp.event}
	if err := sp.p.read(r); err != nil {
		return fail(err)
	}
	if err := sp.forward(); err != nil {
		return fail(err)
	}
	if err := sp.w.Close(); err != nil {
		return fail(spoolError(err))
	}
	if err := bw.Flush(); err != nil {
		return fail(spoolError(err))
	}
	if mem != nil {
		return newBinaryFile(memSource(mem.Bytes()))
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return fail(err)
	}
	f, err := NewFile(tmp, size)
	if err != nil {
		return fail(err)
	}
	f.closer = tmp
	return f, nil
}

func spoolError(err error) error {
	return fmt.Errorf("copy the trace to a temporary file in %s: %w (set TMPDIR to a directory with room)", os.TempDir(), err)
}

// textSpool hands what the text parser read to a binary Writer: the tables
// as their lines come (new rows only), each event as it is parsed.
type textSpool struct {
	p textParser
	w *Writer
	// rows of each table handed over so far
	strings, codes, gpus, procs, threads, mappings, symbols, drops int
	meta                                                           bool
}

func (sp *textSpool) event(e *Event) error {
	// its strings and code (and every table line before it) first: a
	// batch is written with the tables known when it is full
	if err := sp.forward(); err != nil {
		return err
	}
	return sp.w.WriteEvent(e)
}

// forward hands the writer the table rows parsed since the last call.
func (sp *textSpool) forward() error {
	t, w := sp.p.t, sp.w
	for ; sp.strings < len(sp.p.st.Strings); sp.strings++ {
		if id := w.String(sp.p.st.Strings[sp.strings]); int(id) != sp.strings {
			return fmt.Errorf("string %d became %d", sp.strings, id)
		}
	}
	if sp.p.sawMeta && !sp.meta {
		w.writeMeta(&t.Meta)
		sp.meta = true
	}
	if len(t.Meta.GPUs) > sp.gpus {
		w.writeGPUs(t.Meta.GPUs[sp.gpus:])
		sp.gpus = len(t.Meta.GPUs)
	}
	if sp.codes == 0 && len(t.Code) > 0 {
		sp.codes = 1 // the zero entry
	}
	for ; sp.codes < len(t.Code); sp.codes++ {
		if id := w.AddCode(t.Code[sp.codes]); int(id) != sp.codes {
			return fmt.Errorf("code %d became %d", sp.codes, id)
		}
	}
	for ; sp.procs < len(t.Processes); sp.procs++ {
		w.AddProcess(t.Processes[sp.procs])
	}
	for ; sp.threads < len(t.Threads); sp.threads++ {
		w.AddThread(t.Threads[sp.threads])
	}
	for ; sp.mappings < len(t.Mappings); sp.mappings++ {
		w.AddMapping(t.Mappings[sp.mappings])
	}
	for ; sp.symbols < len(t.Symbols); sp.symbols++ {
		w.AddSymbol(t.Symbols[sp.symbols])
	}
	for ; sp.drops < len(t.Drops); sp.drops++ {
		w.AddDrop(t.Drops[sp.drops])
	}
	return w.err
}
