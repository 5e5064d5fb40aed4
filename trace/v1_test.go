package trace

import (
	"bytes"
	"os"
	"testing"
)

// TestReadVersion1 decodes a file written by the first version of the binary
// format (testdata/v1.cuprof, made from small.txt by cuprof 0.1.0 before the
// version-2 framing): every later reader must give the same trace back, byte
// for byte in its text dump. Never regenerate v1.cuprof; only its golden
// dump may be updated, and only when the text form itself changes.
func TestReadVersion1(t *testing.T) {
	data, err := os.ReadFile("testdata/v1.cuprof")
	if err != nil {
		t.Fatal(err)
	}
	if v := int(data[len(binaryMagic)]); v != 1 {
		t.Fatalf("testdata/v1.cuprof is version %d, want 1", v)
	}
	tr, err := ReadBinary(data)
	if err != nil {
		t.Fatalf("reading a version-1 file: %v", err)
	}
	if tr.Loss != nil {
		t.Errorf("version-1 file reads with a loss: %+v", tr.Loss)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, tr); err != nil {
		t.Fatal(err)
	}
	update.Check(t, "testdata/v1.golden.txt", buf.Bytes())
}
