// Command gentrace writes a synthetic trace of a given length for the memory
// benchmarks (bench/memory/run.sh): by default the LoopTrace mix of
// internal/tracetest, or one of the shapes of shapes.go (-shape; -list
// names them), streamed, so a trace of any length is written in constant
// memory (a shape holds at most one batch per thread).
//
//	go run ./bench/memory/gentrace -events 5000000 -o loop-5M.cuprof
//	go run ./bench/memory/gentrace -shape churn -events 5000000 -o churn-5M.cuprof
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

func main() {
	events := flag.Int("events", 1_000_000, "number of events (rounded to whole iterations of 9)")
	out := flag.String("o", "", "output file (mode 0600)")
	shapeName := flag.String("shape", "loop", "what the trace holds: loop, or a shape -list names")
	list := flag.Bool("list", false, "list the shapes and exit")
	flag.Parse()
	if *list {
		fmt.Println("loop\tthe LoopTrace mix: 2 threads, a range and 7 driver calls per iteration")
		for _, s := range shapes {
			fmt.Printf("%s\t%s\n", s.name, s.about)
		}
		return
	}
	if *out == "" || *events < 0 {
		fmt.Fprintln(os.Stderr, "usage: gentrace -events N -o FILE")
		os.Exit(2)
	}
	write := func(path string, n int) error { return writeLoop(path, n/tracetest.LoopEventsPerIteration) }
	if *shapeName != "loop" {
		sh, err := shapeNamed(*shapeName)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gentrace:", err, "(-list names the shapes)")
			os.Exit(2)
		}
		write = func(path string, n int) error { return writeShape(path, sh, n) }
	}
	if err := write(*out, *events); err != nil {
		fmt.Fprintln(os.Stderr, "gentrace:", err)
		os.Exit(1)
	}
}

func writeShape(path string, sh *shape, n int) error {
	return writeFile(path, func(w io.Writer) error {
		g := newGen(trace.NewWriter(w, trace.Meta{Overhead: trace.Overhead{InsideNs: 12, AddedNs: 28}}))
		sh.write(g, n)
		return g.close()
	})
}

func writeLoop(path string, iterations int) error {
	return writeFile(path, func(w io.Writer) error { return tracetest.WriteLoop(w, iterations) })
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := write(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
