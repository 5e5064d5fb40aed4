// Package grpcgzip replaces gRPC's "gzip" compressor (package
// google.golang.org/grpc/encoding/gzip: compress/gzip at its default level)
// with klauspost/compress's gzip at its fastest level, the level cuprof's
// OTLP/HTTP sender uses: the same format on the wire, at about a fifth of
// the CPU time for requests about 1.5x larger (exporters/otlp's
// BenchmarkRequestGzip). cmd/cuprof imports it for its side effect, so
// that export and record --otlp over gRPC compress as fast as over HTTP;
// it registers at init, as gRPC requires, for the whole process, which is
// why the library (exporters/otlp) does not.
package grpcgzip

import (
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/gzip" // registered first, so that this one replaces it
)

// Level is the gzip level of the compressor.
const Level = gzip.BestSpeed

func init() { encoding.RegisterCompressor(&compressor{}) }

// compressor is gRPC's gzip compressor over klauspost/compress, its writers
// and readers pooled as gRPC pools its own.
type compressor struct {
	writers, readers sync.Pool
}

var _ encoding.Compressor = (*compressor)(nil)

// Name is the content coding gRPC sends and looks compressors up by.
func (c *compressor) Name() string { return "gzip" }

type writer struct {
	*gzip.Writer
	pool *sync.Pool
}

// Close ends the gzip stream and gives the writer back to the pool.
func (w *writer) Close() error {
	defer w.pool.Put(w)
	return w.Writer.Close()
}

// Compress returns a writer compressing into w.
func (c *compressor) Compress(w io.Writer) (io.WriteCloser, error) {
	if z, ok := c.writers.Get().(*writer); ok {
		z.Reset(w)
		return z, nil
	}
	z, err := gzip.NewWriterLevel(w, Level)
	if err != nil {
		return nil, err
	}
	return &writer{Writer: z, pool: &c.writers}, nil
}

type reader struct {
	*gzip.Reader
	pool *sync.Pool
}

// Close gives the reader back to the pool.
func (r *reader) Close() error {
	defer r.pool.Put(r)
	return r.Reader.Close()
}

// Decompress returns a reader of what r holds, decompressed.
func (c *compressor) Decompress(r io.Reader) (io.Reader, error) {
	if z, ok := c.readers.Get().(*reader); ok {
		if err := z.Reset(r); err != nil {
			c.readers.Put(z)
			return nil, err
		}
		return z, nil
	}
	z, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	return &reader{Reader: z, pool: &c.readers}, nil
}
