package grpcgzip

import (
	"bytes"
	stdgzip "compress/gzip"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/encoding"
)

// TestRegisteredAndCompatible: gRPC's "gzip" is this compressor, and what
// it writes compress/gzip reads and the other way round, writers and
// readers reused.
func TestRegisteredAndCompatible(t *testing.T) {
	c, ok := encoding.GetCompressor("gzip").(*compressor)
	if !ok {
		t.Fatalf("gRPC's gzip compressor is %T", encoding.GetCompressor("gzip"))
	}
	for i, msg := range []string{"", "span", strings.Repeat("cuMemAllocAsync 0x7f00 ", 50000)} {
		var buf bytes.Buffer
		w, err := c.Compress(&buf)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, msg)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		zr, err := stdgzip.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(zr); err != nil || string(got) != msg {
			t.Fatalf("message %d: compress/gzip read %d bytes, %v", i, len(got), err)
		}
		buf.Reset()
		zw := stdgzip.NewWriter(&buf)
		io.WriteString(zw, msg)
		zw.Close()
		r, err := c.Decompress(&buf)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || string(got) != msg {
			t.Fatalf("message %d: read back %d bytes, %v", i, len(got), err)
		}
		r.(io.Closer).Close()
	}
	if _, err := c.Decompress(strings.NewReader("not gzip")); err == nil {
		t.Error("not gzip: no error")
	}
}
