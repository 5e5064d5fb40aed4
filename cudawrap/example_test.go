package cudawrap_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/cuprof/cuprof/cudawrap"
)

// A stream-ordered allocation with the pool keeping freed memory across
// synchronizes. Run it under `cuprof record` to see each operation as a span
// with its driver calls inside.
func Example() {
	d, err := cudawrap.Open() // libcuda.so.1, or $CUPROF_LIBCUDA
	if errors.Is(err, cudawrap.ErrNoDriver) {
		log.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil { // lists leaked objects, with where they were made
			log.Print(err)
		}
	}()
	dev, err := d.Device(0)
	if err != nil {
		log.Fatal(err)
	}
	pool, err := dev.DefaultPool()
	if err != nil {
		log.Fatal(err)
	}
	if err := pool.SetReleaseThreshold(cudawrap.MaxReleaseThreshold); err != nil {
		log.Fatal(err)
	}
	s, err := dev.NewStream(cudawrap.NonBlocking())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	buf, err := s.Alloc(1 << 20)
	if errors.Is(err, cudawrap.ErrOutOfMemory) {
		log.Fatal("device full: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("1 MiB at %#x\n", buf.Ptr())
	if err := buf.Close(); err != nil {
		log.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		log.Fatal(err)
	}
}
