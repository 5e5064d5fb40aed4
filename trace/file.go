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
		return nil, fmt.Errorf("%w: no binary header and no %q line", ErrNotTrace, TextHeader)
	}
	return ReadText(br)
}

// looksLikeText reports whether the input starts like the text form: blank
// lines and comments, then the header line.
func looksLikeText(br *bufio.Reader) bool {
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
