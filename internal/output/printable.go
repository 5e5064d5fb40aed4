package output

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// Printable returns a writer that passes text on to w with the bytes a
// terminal would act on escaped, so that names from someone else's trace
// (a thread, an NVTX range, a stream) cannot move the cursor, clear the
// screen, set the window title or hide lines: the C0 controls but tab and
// newline (ESC, BEL, CR, backspace ...) and DEL become \xNN, the C1
// controls (U+0080-U+009F, CSI among them) \u00NN, and bytes that are not
// UTF-8 \xNN. Every human-readable output of a trace (report, lint and diff
// as text or CSV) is written through it; JSON escapes controls itself and
// the text trace quotes them (trace.Write). Flush ends the text: a UTF-8
// sequence cut by the end of the last Write is escaped then.
func Printable(w io.Writer) *PrintableWriter { return &PrintableWriter{w: w} }

// PrintableWriter is Printable's writer.
type PrintableWriter struct {
	w       io.Writer
	pending []byte // the start of a UTF-8 sequence cut by the end of a Write
	buf     []byte
}

func (p *PrintableWriter) Write(b []byte) (int, error) {
	n := len(b)
	src := b
	if len(p.pending) > 0 {
		src = append(p.pending, b...)
		p.pending = nil
	}
	out := p.buf[:0]
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\t' || c == '\n' || c >= 0x20 && c < 0x7f:
			out = append(out, c)
			i++
			continue
		case c < 0x20 || c == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, c)
			i++
			continue
		}
		if !utf8.FullRune(src[i:]) {
			p.pending = append([]byte(nil), src[i:]...)
			break
		}
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x%02x`, c)
		case r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, src[i:i+size]...)
		}
		i += size
	}
	p.buf = out
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes what is pending: the bytes of an incomplete UTF-8 sequence at
// the end, escaped.
func (p *PrintableWriter) Flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	var out []byte
	for _, c := range p.pending {
		out = fmt.Appendf(out, `\x%02x`, c)
	}
	p.pending = nil
	_, err := p.w.Write(out)
	return err
}
