package trace

import (
	"errors"
	"io"
)

// binaryMagic starts every binary .cuprof file.
const binaryMagic = "\x89cuprof\n"

// ReadBinary decodes a binary trace. (The binary format is being written;
// until it lands, WriteBinary writes the text form.)
func ReadBinary(data []byte) (*Trace, error) {
	return nil, errors.New("binary .cuprof reading is not implemented yet")
}

// WriteBinary writes t in the binary form. For now it writes the text form.
func WriteBinary(w io.Writer, t *Trace) error { return WriteText(w, t) }
