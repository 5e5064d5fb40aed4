// Package seed holds the seed comparisons of cuprof's examples and demo: the
// allocation patterns and stream creation paths that cost CUDA library code its
// host overhead, run through cudawrap with per-call times.
package seed

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Stats are per-call times of one variant.
type Stats struct {
	Name  string
	Calls int
	Mean  time.Duration
	Min   time.Duration
	P50   time.Duration
	P99   time.Duration
}

// Measure runs fn warmup times untimed, then n times timed one by one.
// It stops at the first error.
func Measure(name string, warmup, n int, fn func() error) (Stats, error) {
	for i := 0; i < warmup; i++ {
		if err := fn(); err != nil {
			return Stats{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	times := make([]time.Duration, 0, n)
	var total time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		err := fn()
		d := time.Since(start)
		if err != nil {
			return Stats{}, fmt.Errorf("%s: %w", name, err)
		}
		times = append(times, d)
		total += d
	}
	st := Stats{Name: name, Calls: n}
	if n == 0 {
		return st, nil
	}
	slices.Sort(times)
	st.Mean = total / time.Duration(n)
	st.Min = times[0]
	st.P50 = times[n/2]
	st.P99 = times[(n*99)/100]
	return st, nil
}

// Header writes the table header Row matches.
func Header(w io.Writer) {
	fmt.Fprintf(w, "%-52s %7s %10s %10s %10s %10s\n", "variant", "calls", "mean", "min", "p50", "p99")
}

// Row writes one variant's per-call times in microseconds.
func Row(w io.Writer, s Stats) {
	fmt.Fprintf(w, "%-52s %7d %10s %10s %10s %10s\n", s.Name, s.Calls, us(s.Mean), us(s.Min), us(s.P50), us(s.P99))
}

func us(d time.Duration) string { return fmt.Sprintf("%.2fus", float64(d)/float64(time.Microsecond)) }
