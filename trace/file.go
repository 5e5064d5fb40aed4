package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/cuprof/cuprof/internal/output"
)

// ErrNotTrace is returned (wrapped) for input that is neither a binary
// .cuprof file nor the text twin.
var ErrNotTrace = errors.New("not a cuprof trace")

// Read reads a trace in either form, binary or text, telling them apart by
// the first bytes. Events are returned in SortEvents order.
func Read(r io.Reader) (*Trace, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(len(binaryMagic))
	if bytes.Equal(head, []byte(binaryMagic)) {
		data, err := io.ReadAll(br)
		if err != nil {
			return nil, err
		}
		return ReadBinary(data)
	}
	if !looksLikeText(br) {
		return nil, notTrace(head)
	}
	return ReadText(br)
}

// looksLikeText reports whether the input starts like the text form: blank
// lines and comments, then the header line. Input whose first byte that is
// not white space cannot start a comment or the header is refused at once,
// so a stream of zeros or random bytes is never read further.
func looksLikeText(br *bufio.Reader) bool {
	if !textStart(br) {
		return false
	}
	for n := 512; ; n *= 2 {
		head, err := br.Peek(n)
		for len(head) > 0 {
			line := head
			i := bytes.IndexByte(head, '\n')
			if i >= 0 {
				line, head = head[:i], head[i+1:]
			} else if err == nil {
				break // need more to see the whole line
			} else {
				head = nil
			}
			line = bytes.TrimSpace(line)
			if len(line) == 0 || line[0] == '#' {
				continue
			}
			return bytes.HasPrefix(line, []byte("cuprof-text"))
		}
		if err != nil || n >= 1<<20 {
			return false
		}
	}
}

// textStart reports whether the first byte of br that is not white space is
// '#' or the first byte of TextHeader (or the input is all white space so
// far): the text form's first non-blank line is a comment or the header.
func textStart(br *bufio.Reader) bool {
	head, _ := br.Peek(512)
	for _, c := range head {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '#', TextHeader[0]:
			return true
		}
		return false
	}
	return len(head) > 0
}

// notTrace is the error for input that is neither form, naming what it
// starts with.
func notTrace(head []byte) error {
	switch {
	case len(head) == 0:
		return fmt.Errorf("%w: the input is empty", ErrNotTrace)
	case len(bytes.Trim(head, "\x00")) == 0:
		return fmt.Errorf("%w: the input starts with zero bytes, not the binary header or a %q line", ErrNotTrace, TextHeader)
	}
	return fmt.Errorf("%w: no binary header and no %q line", ErrNotTrace, TextHeader)
}

// ReadFile reads the trace at path, binary or text. A binary file is read
// with positioned reads through the streaming reader (Open), so only the
// events are held, not the encoded file as well.
func ReadFile(path string) (*Trace, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := f.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// WriteFile writes t to path in the binary form, mode 0600, the way every
// cuprof output is written (internal/output, docs/cli.md): through a
// temporary file in the same directory renamed to path, so readers never
// see a half-written trace; an existing file kept as path.old; the user's
// device or FIFO (/dev/null, /dev/stdout) written through, never replaced;
// a symbolic link, or another user's FIFO or device, refused.
func WriteFile(path string, t *Trace) error {
	return output.WriteFile(path, func(w io.Writer) error { return WriteBinary(w, t) })
}

// WriteTextFile writes t to path in the text form, mode 0600, like WriteFile.
func WriteTextFile(path string, t *Trace) error {
	return output.WriteFile(path, func(w io.Writer) error { return WriteText(w, t) })
}
