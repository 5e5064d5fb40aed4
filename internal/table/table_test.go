package table

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/golden"
)

var update = golden.NewFlag("update", "rewrite testdata/*.golden")

func TestTableGolden(t *testing.T) {
	tb := &Table{Header: []string{"API", "Calls", "Total", "Note"}, Left: []bool{true, false, false, true}, Indent: "  "}
	tb.Add("cuMemAllocAsync", "12", "1.5ms", "µs-wide runes count once")
	tb.Add("cuStreamSynchronize", "3", "250us", "")
	tb.Add("short") // missing cells print empty
	var b bytes.Buffer
	if err := tb.Write(&b); err != nil {
		t.Fatal(err)
	}
	update.Check(t, "testdata/basic.golden", b.Bytes())
	for i, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %d has trailing blanks: %q", i, l)
		}
	}
}

func TestRightAlignedLastColumn(t *testing.T) {
	tb := &Table{Header: []string{"Name", "N"}, Left: []bool{true}}
	tb.Add("a", "1000")
	tb.Add("bb", "7")
	var b bytes.Buffer
	tb.Write(&b)
	want := "Name     N\n----  ----\na     1000\nbb       7\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
