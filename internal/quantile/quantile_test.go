package quantile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// nearestRank is the definition Quantile follows, on sorted values.
func nearestRank(sorted []int64, p float64) int64 {
	r := int(math.Ceil(p / 100 * float64(len(sorted))))
	r = min(max(r, 1), len(sorted))
	return sorted[r-1]
}

func TestNearestRank(t *testing.T) {
	xs := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	cases := []struct {
		p    float64
		want int64
	}{{50, 5}, {99, 10}, {10, 1}, {11, 2}, {100, 10}, {0, 1}, {-5, 1}, {250, 10}}
	for _, c := range cases {
		if got := NearestRank(xs, c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	if NearestRank(nil, 50) != 0 || NearestRank([]int64{7}, 99) != 7 || Rank(50, 0) != 0 {
		t.Errorf("edge cases")
	}
}

var percentiles = []float64{0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100}

// distributions of durations, and a few that are not (negative values, a
// constant, a handful of distinct values, huge magnitudes).
func distributions(rng *rand.Rand) map[string]func() int64 {
	return map[string]func() int64{
		"lognormal": func() int64 { return int64(math.Exp(6 + 2*rng.NormFloat64())) },
		"uniform":   func() int64 { return rng.Int64N(1_000_000_000) },
		"small":     func() int64 { return rng.Int64N(300) },
		"bimodal": func() int64 {
			if rng.IntN(10) == 0 {
				return 5_000_000 + rng.Int64N(1000)
			}
			return 40 + rng.Int64N(20)
		},
		"constant": func() int64 { return 1234 },
		"signed":   func() int64 { return rng.Int64N(2_000_000) - 1_000_000 },
		"huge":     func() int64 { return math.MaxInt64 - rng.Int64N(1<<62) },
	}
}

// TestExactUpToLimit: up to the limit, every percentile is the nearest-rank
// value of the values added, also when queries come between the adds (the
// exact values, kept in chunks, are joined and sorted for a query and more
// are added after).
func TestExactUpToLimit(t *testing.T) {
	const n = 5*chunkLen + 77
	rng := rand.New(rand.NewPCG(1, 2))
	for name, gen := range distributions(rng) {
		s := Sketch{Limit: n}
		var vals []int64
		check := func(when string) {
			sorted := slices.Sorted(slices.Values(vals))
			for _, p := range percentiles {
				if got, want := s.Quantile(p), nearestRank(sorted, p); got != want {
					t.Errorf("%s %s: p%v = %d, want %d", name, when, p, got, want)
				}
			}
		}
		for i := 0; i < n; i++ {
			v := gen()
			vals = append(vals, v)
			s.Add(v)
			switch i {
			case 10, chunkLen - 1, chunkLen, 2*chunkLen + 5, 2*chunkLen + 6:
				check(fmt.Sprintf("after %d values", i+1))
			}
		}
		if !s.Exact() {
			t.Fatalf("%s: not exact at the limit", name)
		}
		check("at the limit")
		if s.Min() != slices.Min(vals) || s.Max() != slices.Max(vals) || s.Count() != n {
			t.Errorf("%s: min %d max %d count %d", name, s.Min(), s.Max(), s.Count())
		}
	}
}

// TestSketchErrorBound: past the limit, every percentile is within
// RelativeError of the exact nearest-rank value, for every distribution.
func TestSketchErrorBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for name, gen := range distributions(rng) {
		s := Sketch{Limit: 1000}
		var vals []int64
		for i := 0; i < 200_000; i++ {
			v := gen()
			vals = append(vals, v)
			s.Add(v)
		}
		if s.Exact() {
			t.Fatalf("%s: still exact past the limit", name)
		}
		slices.Sort(vals)
		worst := 0.0
		for p := 0.05; p <= 100; p += 0.05 {
			got, want := s.Quantile(p), nearestRank(vals, p)
			err := math.Abs(float64(got)-float64(want)) / math.Max(math.Abs(float64(want)), 1)
			if want == 0 {
				err = math.Abs(float64(got))
			}
			worst = max(worst, err)
			if err > RelativeError {
				t.Errorf("%s p%.2f = %d, exact %d: relative error %.4f > %v", name, p, got, want, err, RelativeError)
				break
			}
		}
		t.Logf("%s: worst relative error %.5f", name, worst)
		if got := s.Quantile(100); got != vals[len(vals)-1] {
			t.Errorf("%s: p100 %d, want the maximum %d", name, got, vals[len(vals)-1])
		}
	}
}

// TestSketchMemory: a sketch of a million durations spread over 100 ns to
// 1000 s holds a few thousand counters, not the values.
func TestSketchMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := Sketch{Limit: 1000}
	for i := 0; i < 1_000_000; i++ {
		s.Add(int64(math.Exp(math.Log(100) + rng.Float64()*(math.Log(1e12)-math.Log(100)))))
	}
	counters := len(s.small[0]) + len(s.small[1]) + len(s.large[0].counts) + len(s.large[1].counts)
	if counters > 3000 || s.full != nil || s.cur != nil {
		t.Errorf("%d counters, %d chunks of values kept", counters, len(s.full)+len(s.cur)/max(len(s.cur), 1))
	}
	t.Logf("%d counters", counters)
}

// TestMerge: merging sketches is adding their values, exact or not.
func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, limit := range []int{100, 100_000} {
		var a, b, all Sketch
		a.Limit, b.Limit, all.Limit = limit, limit, limit
		var vals []int64
		for i := 0; i < 20_000; i++ {
			v := int64(math.Exp(4 + 3*rng.Float64()))
			vals = append(vals, v)
			all.Add(v)
			if i%3 == 0 {
				a.Add(v)
			} else {
				b.Add(v)
			}
		}
		a.Merge(&b)
		slices.Sort(vals)
		if a.Count() != all.Count() || a.Min() != vals[0] || a.Max() != vals[len(vals)-1] || a.Sum() != all.Sum() {
			t.Fatalf("limit %d: merged count %d min %d max %d", limit, a.Count(), a.Min(), a.Max())
		}
		for _, p := range percentiles {
			got, want := a.Quantile(p), nearestRank(vals, p)
			if a.Exact() && got != want {
				t.Errorf("limit %d p%v: %d, want %d", limit, p, got, want)
			}
			if math.Abs(float64(got-want)) > RelativeError*float64(want) {
				t.Errorf("limit %d p%v: %d, want %d within %v", limit, p, got, want, RelativeError)
			}
		}
	}
	var empty, one Sketch
	one.Add(7)
	empty.Merge(&one)
	if empty.Quantile(50) != 7 || empty.Count() != 1 {
		t.Errorf("merge into empty: %d", empty.Quantile(50))
	}
	if (&Sketch{}).Quantile(50) != 0 {
		t.Errorf("empty sketch quantile not 0")
	}
}

func BenchmarkAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	vals := make([]int64, 1<<16)
	for i := range vals {
		vals[i] = int64(math.Exp(6 + 2*rng.NormFloat64()))
	}
	for _, limit := range []int{DefaultLimit, 1} {
		name := "exact"
		if limit == 1 {
			name = "sketch"
		}
		b.Run(name, func(b *testing.B) {
			s := Sketch{Limit: limit}
			i := 0
			for b.Loop() {
				s.Add(vals[i&(len(vals)-1)])
				i++
			}
		})
	}
}

// TestIndexTableIsLogIndex: the bucket of every magnitude the table holds
// is logIndex's, and the first past it too.
func TestIndexTableIsLogIndex(t *testing.T) {
	for m := uint64(exactBelow); m <= indexTableLen; m++ {
		if got, want := index(m), logIndex(m); got != want {
			t.Fatalf("index(%d) = %d, logIndex says %d", m, got, want)
		}
	}
}
