package job

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// The rules of an outlier: a rank stands out on an API or frame when its
// value is far above the ranks' median by a robust measure of spread,
// (value - median) / (1.4826 MAD) >= minScore, and by enough to matter: at
// least minRatio times the median and minDiffNs past it. At least minRanks
// ranks must have made the call. The spread is floored (spreadFloor of the
// median, floorNs) so that ranks alike to the nanosecond do not make a
// 1 us difference an outlier.
const (
	minRanks = 5
	// minCalls: a rank's value over fewer calls is a call or two, which
	// one preemption makes slow (cuInit is called once).
	minCalls    = 5
	minScore    = 6
	minRatio    = 1.5
	spreadFloor = 0.05
	floorNs     = 200
)

type metric struct {
	name    string
	value   func(*Stat) int64
	minDiff int64
	// minCalls: p99 of a few calls is one preempted call
	minCalls int
	score    float64
	ratio    float64
}

// metrics in the order one outlier of a rank and name is told: per call
// first (median), then spread (p99). A rank's total is no measure of its
// own: one call preempted for a few ms (a busy host) makes it, as a slow
// median does not.
var metrics = []metric{
	{"median", func(s *Stat) int64 { return s.MedianNs }, 2000, minCalls, minScore, minRatio},
	{"p99", func(s *Stat) int64 { return s.P99Ns }, 20_000, 200, 10, 3},
}

// outliers finds the ranks that stand out on each API and frame (explained
// later: explainAll).
func outliers(rep *Report, procs []Process, labels []string) []Outlier {
	out := []Outlier{}
	scan := func(rows []Row, of func(*Process) map[string]Stat, frame bool) {
		for _, row := range rows {
			taken := map[int]bool{}
			for _, m := range metrics {
				var vals []float64
				var who []int
				for i := range procs {
					st, ok := of(&procs[i])[row.Name]
					if !ok || st.Calls < m.minCalls {
						continue
					}
					vals = append(vals, float64(m.value(&st)))
					who = append(who, i)
				}
				if len(vals) < minRanks {
					continue
				}
				med, spread := robust(vals)
				for k, v := range vals {
					i := who[k]
					if taken[i] {
						continue
					}
					score := (v - med) / spread
					if score < m.score || v < m.ratio*med || v-med < float64(m.minDiff) {
						continue
					}
					taken[i] = true
					p := &procs[i]
					o := Outlier{Rank: optInt(p.ID.Rank), Label: labels[i], Host: p.ID.Host, Metric: m.name,
						ValueNs: int64(v), JobNs: int64(med), Score: math.Round(score*10) / 10}
					if frame {
						o.Frame = row.Name
					} else {
						o.API = row.Name
					}
					o.proc = i
					out = append(out, o)
				}
			}
		}
	}
	scan(rep.APIs, func(p *Process) map[string]Stat { return p.APIs }, false)
	scan(rep.Frames, func(p *Process) map[string]Stat { return p.Frames }, true)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

// robust returns the median of vals and its spread: 1.4826 times the
// median absolute deviation (the standard deviation for normal data),
// floored.
func robust(vals []float64) (med, spread float64) {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	med = median(s)
	dev := make([]float64, len(s))
	for i, v := range s {
		dev[i] = math.Abs(v - med)
	}
	sort.Float64s(dev)
	spread = 1.4826 * median(dev)
	return med, max(spread, spreadFloor*med, floorNs)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// explainAll runs lint on the traces of the ranks that stand out and of up
// to 3 others spread over the job (its reference ranks), and gives each
// outlier the finding of its rank that explains it.
func explainAll(rep *Report, procs []Process, workers int) {
	if len(rep.Outliers) == 0 {
		return
	}
	need := map[int]bool{}
	for _, o := range rep.Outliers {
		need[o.proc] = true
	}
	var refs []int
	for _, i := range []int{0, len(procs) / 2, len(procs) - 1} {
		if !need[i] && !slices.Contains(refs, i) {
			refs = append(refs, i)
		}
	}
	files := map[string][]int{}
	for i := range procs {
		if need[i] || slices.Contains(refs, i) {
			files[procs[i].File] = append(files[procs[i].File], i)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(workers, 1))
	for file, idx := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fs, err := Lint(file)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("lint of %s: %v", file, err))
				return
			}
			for _, i := range idx {
				procs[i].Findings = fs[procKey{procs[i].ID.PID, procs[i].ID.Host}]
			}
		}()
	}
	wg.Wait()
	// A rule a reference rank has too explains no difference.
	common := map[string]bool{}
	for _, i := range refs {
		for _, f := range procs[i].Findings {
			common[f.Rule] = true
		}
	}
	for k := range rep.Outliers {
		o := &rep.Outliers[k]
		name := o.API
		if o.Frame != "" {
			name = o.Frame
		}
		o.Finding = explain(&procs[o.proc], name, o.Frame != "", common)
	}
}

// explain is the finding of p that explains its standing out on name: one
// about that API (its example call), or whose Python stack holds that
// frame; else the costliest of p's findings of a rule no reference rank
// has. nil when none does.
func explain(p *Process, name string, frame bool, common map[string]bool) *Finding {
	var best *Finding
	for i := range p.Findings {
		f := &p.Findings[i]
		match := (!frame && f.API == name) || (frame && strings.Contains(f.Python, name))
		if match && (best == nil || f.CostNs > best.CostNs) {
			best = f
		}
	}
	if best != nil {
		c := *best
		return &c
	}
	for i := range p.Findings {
		f := &p.Findings[i]
		if !common[f.Rule] && (best == nil || f.CostNs > best.CostNs) {
			best = f
		}
	}
	if best != nil {
		c := *best
		return &c
	}
	return nil
}

// steps is host time per rank and step of the step range: name, or the
// outermost range name the most ranks repeat (then the most repeated).
func steps(procs []Process, labels []string, name string) *StepTable {
	if name == "" {
		ranks, count := map[string]int{}, map[string]int{}
		for i := range procs {
			for n, st := range procs[i].Steps {
				ranks[n]++
				count[n] += len(st)
			}
		}
		for n := range ranks {
			if name == "" || ranks[n] > ranks[name] || (ranks[n] == ranks[name] && (count[n] > count[name] || (count[n] == count[name] && n < name))) {
				name = n
			}
		}
	}
	if name == "" {
		return nil
	}
	t := &StepTable{Name: name, Ranks: []StepsRow{}}
	for i := range procs {
		if st, ok := procs[i].Steps[name]; ok {
			t.Ranks = append(t.Ranks, StepsRow{Label: labels[i], Steps: st})
		}
	}
	if len(t.Ranks) == 0 {
		return nil
	}
	return t
}
