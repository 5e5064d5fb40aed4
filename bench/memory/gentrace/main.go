// Command gentrace writes a synthetic trace of a given length for the memory
// benchmarks (bench/memory/run.sh): the LoopTrace mix of internal/tracetest,
// streamed, so a trace of any length is written in constant memory.
//
//	go run ./bench/memory/gentrace -events 5000000 -o loop-5M.cuprof
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/cuprof/cuprof/internal/tracetest"
)

func main() {
	events := flag.Int("events", 1_000_000, "number of events (rounded to whole iterations of 9)")
	out := flag.String("o", "", "output file (mode 0600)")
	flag.Parse()
	if *out == "" || *events < 0 {
		fmt.Fprintln(os.Stderr, "usage: gentrace -events N -o FILE")
		os.Exit(2)
	}
	if err := write(*out, *events/tracetest.LoopEventsPerIteration); err != nil {
		fmt.Fprintln(os.Stderr, "gentrace:", err)
		os.Exit(1)
	}
}

func write(path string, iterations int) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := tracetest.WriteLoop(w, iterations); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
