// Package quantile answers percentile queries over a stream of durations in
// bounded memory: exactly while it holds at most a limit of values, and
// within a stated relative error after.
//
// A Sketch keeps the values themselves until it has seen Limit of them
// (default 1<<20, 8 MiB), so a percentile of up to that many values is the
// nearest-rank one on the sorted values, a value that occurred. Past the
// limit it moves them into a log-bucketed sketch (the scheme of DDSketch,
// Masson, Rim and Lee, VLDB 2019) of relative accuracy RelativeError (1%):
// for the nearest-rank value x of the values added, Quantile returns q with
// |q - x| <= RelativeError * |x|. Values of magnitude below 1/RelativeError
// (100 ns) are counted exactly, one counter per value; larger ones in
// buckets (γ^(i-1), γ^i] with γ = (1+α)/(1-α), α = RelativeError/2, whose
// midpoint in relative terms is within α of every value in them, and its
// rounding to an integer within another α. A sketch of durations from 100 ns
// to 1000 s holds about 2,300 counters (18 KiB), whatever their number.
//
// DataDog's sketches-go (the reference DDSketch) is not used: report's and
// lint's percentiles must be values that occurred, exact up to the limit,
// and sketches-go buckets every value from the first (its quantiles are
// bucket representatives, never exact); it would still need this package's
// exact phase and exact small-value counters around it, leaving it only the
// bucket index mapping, a few lines here, for a dependency outside the
// project's short list.
package quantile

import (
	"math"
	"slices"
	"sync"
)

// RelativeError bounds the relative error of a Sketch's quantiles once it
// has more values than its limit.
const RelativeError = 0.01

// DefaultLimit is the number of values a Sketch keeps exactly by default.
const DefaultLimit = 1 << 20

// defaultLimit is what a Sketch without a Limit uses: DefaultLimit, but
// for SetDefaultLimit.
var defaultLimit = DefaultLimit

// SetDefaultLimit makes Sketches without a Limit keep n values exactly
// instead of DefaultLimit, until the function it returns is called. It is
// for tests that measure what a consumer holds per event: with a small
// limit, both the shorter and the longer replay are past it. Not safe for
// concurrent use with Add.
func SetDefaultLimit(n int) (restore func()) {
	old := defaultLimit
	defaultLimit = n
	return func() { defaultLimit = old }
}

const (
	// exactBelow: magnitudes below it get one counter each.
	exactBelow = int64(1 / RelativeError)
	alpha      = RelativeError / 2
)

var (
	gamma    = (1 + alpha) / (1 - alpha)
	logGamma = math.Log(gamma)
)

// Sketch accumulates int64 values (durations in nanoseconds) for percentile
// queries. The zero value is ready to use, with DefaultLimit.
type Sketch struct {
	// Limit is how many values are kept exactly before the sketch takes
	// over; 0 means DefaultLimit. Set it before the first Add.
	Limit int

	// full and cur hold the exact values while sketched is false: full
	// chunks of chunkLen, then the chunk being filled, so that an exact
	// phase of a million values grows without copying them again and
	// again, as appending to one slice does (most of report's CPU time went
	// there), and is queried in place. cur is kept apart so that an Add
	// appends to a slice header in the Sketch itself.
	full     [][]int64
	cur      []int64
	sorted   bool // each chunk is sorted
	sketched bool

	n        uint64
	min, max int64
	sum      float64

	small [2][]uint64 // sketched: counts of magnitudes 0..exactBelow-1, by sign (0: >= 0, 1: < 0)
	large [2]buckets  // sketched: counts of larger magnitudes, by sign
}

// chunkLen is the length of each chunk of exact values: 32 KiB. The first
// chunk grows by appending up to it, so that a sketch of a few values stays
// small; the others are made whole.
const chunkLen = 4096

// push appends v to the exact values.
func (s *Sketch) push(v int64) {
	if n := len(s.cur); n < cap(s.cur) {
		s.cur = s.cur[:n+1]
		s.cur[n] = v
		return
	}
	s.pushNew(v)
}

// pushNew appends v to the exact values when the current chunk is full:
// the first chunk grows by appending up to chunkLen, later ones are made
// whole.
func (s *Sketch) pushNew(v int64) {
	switch {
	case s.cur == nil:
		s.cur = make([]int64, 0, 8)
	case cap(s.cur) >= chunkLen:
		s.full = append(s.full, s.cur)
		s.cur = make([]int64, 0, chunkLen)
	}
	s.cur = append(s.cur, v)
}

// chunks calls f with each chunk of exact values.
func (s *Sketch) chunks(f func(c []int64)) {
	for _, c := range s.full {
		f(c)
	}
	if len(s.cur) > 0 {
		f(s.cur)
	}
}

// exactRank returns the r-th smallest (1-based) of the exact values: each
// chunk is sorted in place (once until more values come), and the answer
// is the least value v with at least r values <= v, found by bisecting
// between the minimum and the maximum; it is a value that occurred.
func (s *Sketch) exactRank(r uint64) int64 {
	if !s.sorted {
		s.chunks(func(c []int64) { slices.Sort(c) })
		s.sorted = true
	}
	if len(s.full) == 0 {
		return s.cur[r-1]
	}
	atMost := func(v int64) uint64 { // v < s.max
		var n uint64
		s.chunks(func(c []int64) {
			i, _ := slices.BinarySearch(c, v+1)
			n += uint64(i)
		})
		return n
	}
	lo, hi := s.min, s.max
	for lo < hi {
		mid := lo + int64((uint64(hi)-uint64(lo))/2)
		if atMost(mid) >= r {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// buckets counts values by log bucket index, densely from index lo.
type buckets struct {
	lo     int
	counts []uint64
}

func (b *buckets) add(i int, c uint64) {
	switch {
	case len(b.counts) == 0:
		b.lo = i
		b.counts = append(b.counts, c)
		return
	case i < b.lo:
		grow := b.lo - i
		b.counts = append(make([]uint64, grow, grow+len(b.counts)), b.counts...)
		b.lo = i
	case i >= b.lo+len(b.counts):
		b.counts = append(b.counts, make([]uint64, i-b.lo-len(b.counts)+1)...)
	}
	b.counts[i-b.lo] += c
}

// index returns the log bucket of magnitude m >= exactBelow: from a table
// for magnitudes below indexTableLen (made once, by logIndex itself, so the
// answers are the same), else logIndex. A sketched Add took about 40 ns in
// math.Log, and most durations are short.
func index(m uint64) int {
	if m < indexTableLen {
		indexOnce.Do(makeIndexTable)
		return int(indexTable[m])
	}
	return logIndex(m)
}

// logIndex is ceil(log_γ(m)).
func logIndex(m uint64) int {
	return int(math.Ceil(math.Log(float64(m)) / logGamma))
}

// indexTableLen is how many magnitudes indexTable holds: those below
// 65.5 µs, 128 KiB of buckets.
const indexTableLen = 1 << 16

var (
	indexOnce  sync.Once
	indexTable []int16
)

func makeIndexTable() {
	t := make([]int16, indexTableLen)
	for m := uint64(exactBelow); m < indexTableLen; m++ {
		t[m] = int16(logIndex(m))
	}
	indexTable = t
}

// value returns the integer that stands for bucket i: the relative midpoint
// of (γ^(i-1), γ^i], rounded (at most math.MaxInt64).
func value(i int) int64 {
	v := math.Round(2 * math.Pow(gamma, float64(i)) / (gamma + 1))
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// Add adds the value v.
func (s *Sketch) Add(v int64) {
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += float64(v)
	if !s.sketched {
		s.push(v)
		s.sorted = false
		limit := s.Limit
		if limit <= 0 {
			limit = defaultLimit
		}
		if s.n > uint64(limit) {
			s.toSketch()
		}
		return
	}
	s.count(v, 1)
}

func (s *Sketch) count(v int64, c uint64) {
	sign := 0
	m := uint64(v)
	if v < 0 {
		sign, m = 1, -uint64(v)
	}
	if m < uint64(exactBelow) {
		if s.small[sign] == nil {
			s.small[sign] = make([]uint64, exactBelow)
		}
		s.small[sign][m] += c
		return
	}
	s.large[sign].add(index(m), c)
}

// toSketch moves the exact values into the sketch.
func (s *Sketch) toSketch() {
	s.chunks(func(c []int64) {
		for _, v := range c {
			s.count(v, 1)
		}
	})
	s.full, s.cur = nil, nil
	s.sketched = true
}

// Count returns the number of values added.
func (s *Sketch) Count() uint64 { return s.n }

// Min and Max return the smallest and largest value added, 0 when none.
func (s *Sketch) Min() int64 { return s.min }

// Max returns the largest value added, 0 when none.
func (s *Sketch) Max() int64 { return s.max }

// Sum returns the sum of the values added.
func (s *Sketch) Sum() float64 { return s.sum }

// Exact reports whether Quantile is exact: no more than the limit of values
// were added.
func (s *Sketch) Exact() bool { return !s.sketched }

// Rank returns the nearest rank of the p-th percentile (0 < p <= 100) of n
// values: r = ceil(p/100*n) clamped to [1, n], so that x[r-1] of the
// sorted values x[0] <= ... <= x[n-1] is the percentile. 0 when n is 0.
func Rank(p float64, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	r := uint64(max(math.Ceil(p/100*float64(n)), 0))
	return min(max(r, 1), n)
}

// NearestRank returns the nearest-rank p-th percentile of sorted
// (ascending), a value that occurred; 0 when it is empty.
func NearestRank(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[Rank(p, uint64(len(sorted)))-1]
}

// Quantile returns the nearest-rank p-th percentile (0 < p <= 100) of the
// values added: with x[0] <= ... <= x[n-1] the sorted values, x[r-1] for
// r = ceil(p/100*n) clamped to [1, n]; 0 when none were added. While Exact,
// that value itself; after, within RelativeError of it (and exact for the
// smallest and largest value).
func (s *Sketch) Quantile(p float64) int64 {
	if s.n == 0 {
		return 0
	}
	r := Rank(p, s.n)
	switch {
	case r == 1:
		return s.min
	case r == s.n:
		return s.max
	}
	if !s.sketched {
		return s.exactRank(r)
	}
	var q int64
	// Negative values, most negative first, then the others, ascending.
	seen := uint64(0)
	found := false
	visit := func(v int64, c uint64) bool {
		seen += c
		if seen >= r {
			q, found = v, true
		}
		return found
	}
	neg := &s.large[1]
	for k := len(neg.counts) - 1; k >= 0 && !found; k-- {
		if c := neg.counts[k]; c > 0 {
			visit(-value(neg.lo+k), c)
		}
	}
	for m := len(s.small[1]) - 1; m > 0 && !found; m-- { // m = 0 is counted as >= 0
		if c := s.small[1][m]; c > 0 {
			visit(-int64(m), c)
		}
	}
	for m := 0; m < len(s.small[0]) && !found; m++ {
		if c := s.small[0][m]; c > 0 {
			visit(int64(m), c)
		}
	}
	pos := &s.large[0]
	for k := 0; k < len(pos.counts) && !found; k++ {
		if c := pos.counts[k]; c > 0 {
			visit(value(pos.lo+k), c)
		}
	}
	return min(max(q, s.min), s.max)
}

// Merge adds the values of o to s (o is not changed). The result is exact
// when both are and their values fit s's limit.
func (s *Sketch) Merge(o *Sketch) {
	if o.n == 0 {
		return
	}
	if !o.sketched {
		o.chunks(func(c []int64) {
			for _, v := range c {
				s.Add(v)
			}
		})
		return
	}
	if !s.sketched {
		s.toSketch()
	}
	if s.n == 0 || o.min < s.min {
		s.min = o.min
	}
	if s.n == 0 || o.max > s.max {
		s.max = o.max
	}
	s.n += o.n
	s.sum += o.sum
	for sign := range 2 {
		for m, c := range o.small[sign] {
			if c > 0 {
				if s.small[sign] == nil {
					s.small[sign] = make([]uint64, exactBelow)
				}
				s.small[sign][m] += c
			}
		}
		for k, c := range o.large[sign].counts {
			if c > 0 {
				s.large[sign].add(o.large[sign].lo+k, c)
			}
		}
	}
}
