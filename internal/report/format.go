package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Table prints aligned columns: text columns left-aligned, the others
// right-aligned, two spaces apart, a header row and a rule of dashes.
type Table struct {
	Header []string
	Left   []bool // per column: left-align (default right)
	Rows   [][]string
	Indent string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table to w.
func (t *Table) Write(w io.Writer) error {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.Rows {
		for i := range r {
			if i < len(width) {
				width[i] = max(width[i], utf8.RuneCountInString(r[i]))
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString(t.Indent)
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			left := i < len(t.Left) && t.Left[i]
			last := i == len(width)-1
			switch {
			case left && last:
				b.WriteString(c)
			case left:
				b.WriteString(c + pad)
			default:
				b.WriteString(pad + c)
			}
			if !last {
				b.WriteString("  ")
			}
		}
		b.WriteByte('\n')
	}
	line(t.Header)
	rule := make([]string, len(width))
	for i := range width {
		rule[i] = strings.Repeat("-", width[i])
	}
	line(rule)
	for _, r := range t.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// errWriter remembers the first write error so printing code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (e *errWriter) table(t *Table) {
	if e.err == nil {
		e.err = t.Write(e.w)
	}
}
