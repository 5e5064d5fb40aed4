package flame

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/internal/quantity"
	"github.com/cuprof/cuprof/internal/table"
)

// Diff returns the differential profile of newp against base, as
// `pprof -diff_base` makes it: base's samples labelled pprof::base=true and
// negated, merged with newp's. Neither argument is changed.
func Diff(base, newp *profile.Profile) (*profile.Profile, error) {
	b := base.Copy()
	b.SetLabel("pprof::base", []string{"true"})
	b.Scale(-1)
	n := newp.Copy()
	if !sameTypes(b.SampleType, n.SampleType) {
		return nil, fmt.Errorf("diff profiles: sample types %s and %s differ: build both with the same view",
			typeNames(b.SampleType), typeNames(n.SampleType))
	}
	d, err := profile.Merge([]*profile.Profile{n, b})
	if err != nil {
		return nil, fmt.Errorf("diff profiles: %w", err)
	}
	d.Comments = append([]string{"cuprof diff: new minus base (base samples are labelled pprof::base=true)"}, d.Comments...)
	return d, nil
}

func sameTypes(a, b []*profile.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Unit != b[i].Unit {
			return false
		}
	}
	return true
}

func typeNames(vt []*profile.ValueType) string {
	var s []string
	for _, v := range vt {
		s = append(s, v.Type+"/"+v.Unit)
	}
	return strings.Join(s, ",")
}

// APIStats are one API's totals in one profile.
type APIStats struct {
	Calls int64
	Time  int64 // nanoseconds
}

// Mean returns the mean time per call in nanoseconds, 0 with no calls.
func (s APIStats) Mean() float64 {
	if s.Calls == 0 {
		return 0
	}
	return float64(s.Time) / float64(s.Calls)
}

// APIChange compares one API's totals between two api-view profiles.
type APIChange struct {
	API       string
	Base, New APIStats
}

// Delta returns the change in total time, New minus Base, in nanoseconds.
func (c APIChange) Delta() int64 { return c.New.Time - c.Base.Time }

// Ratio returns New.Time/Base.Time; +Inf when the API is new, 0 when gone.
func (c APIChange) Ratio() float64 {
	if c.Base.Time == 0 {
		if c.New.Time == 0 {
			return 1
		}
		return posInf
	}
	return float64(c.New.Time) / float64(c.Base.Time)
}

var posInf = math.Inf(1)

// apiTotals sums the calls and time samples of an api-view profile by the
// samples' api label.
func apiTotals(p *profile.Profile) (map[string]APIStats, error) {
	calls, time := -1, -1
	for i, st := range p.SampleType {
		switch {
		case st.Type == "calls" && st.Unit == "count":
			calls = i
		case st.Type == "time" && st.Unit == "nanoseconds":
			time = i
		}
	}
	if calls < 0 || time < 0 {
		return nil, fmt.Errorf("profile has no calls/count and time/nanoseconds samples: build it with the api view")
	}
	out := map[string]APIStats{}
	for _, s := range p.Sample {
		a := s.Label["api"]
		if len(a) == 0 {
			continue
		}
		st := out[a[0]]
		st.Calls += s.Value[calls]
		st.Time += s.Value[time]
		out[a[0]] = st
	}
	return out, nil
}

// CompareAPIs returns the per-API changes between two api-view profiles,
// largest absolute change in total time first (then by name).
func CompareAPIs(base, newp *profile.Profile) ([]APIChange, error) {
	b, err := apiTotals(base)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	n, err := apiTotals(newp)
	if err != nil {
		return nil, fmt.Errorf("new: %w", err)
	}
	var out []APIChange
	for a, s := range b {
		out = append(out, APIChange{API: a, Base: s, New: n[a]})
	}
	for a, s := range n {
		if _, ok := b[a]; !ok {
			out = append(out, APIChange{API: a, New: s})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := abs(out[i].Delta()), abs(out[j].Delta())
		if di != dj {
			return di > dj
		}
		return out[i].API < out[j].API
	})
	return out, nil
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// WriteAPIChanges writes changes as an aligned text table, in the format
// and units of cuprof report's tables.
func WriteAPIChanges(w io.Writer, changes []APIChange) error {
	t := &table.Table{Header: []string{"API", "Calls base", "Calls new", "Mean base", "Mean new",
		"Total base", "Total new", "Delta", "Ratio"}, Left: []bool{true}, Indent: "  "}
	for _, c := range changes {
		ratio := "new"
		switch r := c.Ratio(); {
		case r == posInf:
		case c.New.Calls == 0 && c.New.Time == 0:
			ratio = "gone"
		default:
			ratio = fmt.Sprintf("%.2fx", r)
		}
		t.Add(c.API, strconv.FormatInt(int64(c.Base.Calls), 10), strconv.FormatInt(int64(c.New.Calls), 10),
			quantity.Duration(c.Base.Mean()), quantity.Duration(c.New.Mean()),
			quantity.Duration(float64(c.Base.Time)), quantity.Duration(float64(c.New.Time)), quantity.SignedDuration(float64(c.Delta())), ratio)
	}
	return t.Write(w)
}
