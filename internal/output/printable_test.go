package output

import (
	"bytes"
	"testing"
)

// TestPrintable: what a terminal acts on is escaped, the rest passes as it
// is, whatever the cuts between writes.
func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain\ttext\n", "plain\ttext\n"},
		{"st\x1b]0;title\x07ep\x1b[31m", `st\x1b]0;title\x07ep\x1b[31m`},
		{"a\rb\bc\x7f", `a\x0db\x08c\x7f`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"bad\xff\xc2", `bad\xff\xc2`},
		{"é→ ok", "é→ ok"},
	} {
		// whole, and cut at every byte
		for cut := 0; cut <= len(c.in); cut++ {
			var b bytes.Buffer
			w := Printable(&b)
			w.Write([]byte(c.in[:cut]))
			w.Write([]byte(c.in[cut:]))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != c.want {
				t.Errorf("Printable(%q) cut at %d = %q, want %q", c.in, cut, got, c.want)
			}
		}
	}
}
