// Package table prints the aligned text tables of every cuprof command
// (report, diff, lint's summaries), so that they look alike: text columns
// left-aligned, numbers right-aligned, two spaces apart, a header row and
// a rule of dashes.
package table

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Table is a text table. Columns are right-aligned unless Left says
// otherwise; widths count runes.
type Table struct {
	Header []string
	Left   []bool // per column: left-align (default right)
	Rows   [][]string
	Indent string // before every line
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table to w. Lines carry no trailing blanks.
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
	var lb strings.Builder
	line := func(cells []string) {
		lb.Reset()
		lb.WriteString(t.Indent)
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i < len(t.Left) && t.Left[i] {
				lb.WriteString(c + pad)
			} else {
				lb.WriteString(pad + c)
			}
			lb.WriteString("  ")
		}
		// Padding of a left-aligned last column and empty trailing cells
		// would leave blanks at the end of the line.
		b.WriteString(strings.TrimRight(lb.String(), " "))
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
