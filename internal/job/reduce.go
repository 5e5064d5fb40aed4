package job

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/cuprof/cuprof/internal/quantile"
	"github.com/cuprof/cuprof/internal/report"
)

// Rank is one process of the job: who it is and its totals.
type Rank struct {
	Rank      *int   `json:"rank"`
	LocalRank *int   `json:"local_rank"`
	WorldSize *int   `json:"world_size"`
	NodeRank  *int   `json:"node_rank,omitempty"`
	Host      string `json:"host"`
	PID       uint32 `json:"pid"`
	Job       string `json:"job"`
	Launcher  string `json:"launcher,omitempty"`
	File      string `json:"file"`
	Calls     int    `json:"calls"`
	TotalNs   int64  `json:"total_ns"`
	// Label is how tables name it: "3", or "host/pid" without a rank, with
	// a "'" per earlier process of the same job and rank.
	Label string `json:"label"`
}

// RankStat is one rank's calls of an API or frame.
type RankStat struct {
	Label string `json:"rank"`
	Job   string `json:"job,omitempty"`
	Stat
}

// Row is one API or wrapper frame across the job: all ranks' calls
// together, and a row per rank that made any.
type Row struct {
	Name     string     `json:"name"`
	Calls    int        `json:"calls"`
	MedianNs int64      `json:"median_ns"`
	P99Ns    int64      `json:"p99_ns"`
	TotalNs  int64      `json:"total_ns"`
	Ranks    []RankStat `json:"ranks"`
}

// Outlier is a rank that stands out on one API or frame.
type Outlier struct {
	Rank  *int   `json:"rank"`
	Label string `json:"label"`
	Host  string `json:"host"`
	API   string `json:"api,omitempty"`
	Frame string `json:"frame,omitempty"`
	// Metric is what stands out: "median" (each call costs more) or "p99"
	// (its slow calls are slower: spread).
	Metric  string  `json:"metric"`
	ValueNs int64   `json:"value_ns"`
	JobNs   int64   `json:"job_median_ns"` // the median rank's value
	Score   float64 `json:"score"`         // robust z: (value - median) / (1.4826 MAD)
	// Finding is the lint finding of the rank that explains it, when one
	// does.
	Finding *Finding `json:"finding,omitempty"`

	proc int // index of its process in the reduce
}

// StepTable is host time per rank and step.
type StepTable struct {
	Name  string     `json:"name"`
	Ranks []StepsRow `json:"ranks"`
}

// StepsRow is one rank's steps (in JSON as lists: each step's length, its
// driver time, and the first step's start).
type StepsRow struct {
	Label string
	Steps []Step
}

// MarshalJSON writes the row as {"rank", "ns": [...], "driver_ns": [...],
// "start_unix_ns"}: a step is two numbers, not an object.
func (r StepsRow) MarshalJSON() ([]byte, error) {
	b := []byte(`{"rank":`)
	b = strconv.AppendQuote(b, r.Label)
	b = append(b, `,"ns":[`...)
	for i, s := range r.Steps {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s.Ns, 10)
	}
	b = append(b, `],"driver_ns":[`...)
	for i, s := range r.Steps {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s.DriverNs, 10)
	}
	b = append(b, `],"start_unix_ns":`...)
	var start int64
	if len(r.Steps) > 0 {
		start = r.Steps[0].Start
	}
	b = strconv.AppendInt(b, start, 10)
	return append(b, '}'), nil
}

// Skipped is a trace that could not be read.
type Skipped struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// Report is the job's analysis.
type Report struct {
	Traces   int          `json:"traces"`
	Jobs     []string     `json:"jobs"`
	Hosts    []string     `json:"hosts"`
	Ranks    []Rank       `json:"ranks"`
	APIs     []Row        `json:"apis"`
	Frames   []Row        `json:"frames"`
	Outliers []Outlier    `json:"outliers"`
	Steps    *StepTable   `json:"steps,omitempty"`
	Clocks   ClockNote    `json:"clocks"`
	Notes    []string     `json:"notes"`
	Skipped  []Skipped    `json:"skipped"`
	Procs    []ProcessRow `json:"processes"`
}

// ProcessRow is a process as the single-trace report's processes list has
// it, rank and host included: the one row type, report's.
type ProcessRow = report.ProcessRow

// Options tune Reduce.
type Options struct {
	// Step is the name of the NVTX range a step is; "" picks the
	// outermost range name most ranks repeat most.
	Step string
	// Workers bounds the traces summarised at once; 0: GOMAXPROCS.
	Workers int
}

// Inputs expands the arguments of a job command: a folder gives every
// .cuprof file in it (and its subfolders), in name order; a file is
// itself.
func Inputs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", a, err)
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".cuprof") || strings.HasSuffix(p, ".cuprof.txt")) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("cannot read the folder %s: %w", a, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("the folder %s holds no .cuprof trace", a)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// Reduce summarises the traces in parallel and merges the summaries. A
// trace that cannot be read is named in Skipped; the others are reported.
func Reduce(files []string, opts Options) *Report {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	type result struct {
		i   int
		s   *Summary
		err error
	}
	jobs := make(chan int)
	results := make(chan result, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				s, err := Summarize(files[i])
				results <- result{i, s, err}
			}
		}()
	}
	go func() {
		for i := range files {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	opts.Workers = workers
	r := newReducer()
	for res := range results {
		if res.err != nil {
			r.skipped = append(r.skipped, Skipped{File: files[res.i], Error: res.err.Error()})
			continue
		}
		r.add(res.i, res.s)
	}
	return r.finish(len(files), opts)
}

// reducer holds the merged summaries: per process its scalar rows, per API
// and frame the job's sketch.
type reducer struct {
	procs   []Process // with the index of their file, for a stable order
	order   []int
	apis    map[string]*quantile.Sketch
	frames  map[string]*quantile.Sketch
	clocks  []clockOf
	skipped []Skipped
}

func newReducer() *reducer {
	return &reducer{apis: map[string]*quantile.Sketch{}, frames: map[string]*quantile.Sketch{}}
}

func (r *reducer) add(i int, s *Summary) {
	for _, p := range s.Processes {
		r.procs = append(r.procs, p)
		r.order = append(r.order, i)
	}
	for name, sk := range s.APIs {
		mergeInto(r.apis, name, sk)
	}
	for name, sk := range s.Frames {
		mergeInto(r.frames, name, sk)
	}
	r.clocks = append(r.clocks, clockFrom(s))
}

func (r *reducer) finish(traces int, opts Options) *Report {
	rep := &Report{Traces: traces, Skipped: r.skipped, Jobs: []string{}, Hosts: []string{}, Notes: []string{},
		Ranks: []Rank{}, APIs: []Row{}, Frames: []Row{}, Outliers: []Outlier{}, Procs: []ProcessRow{}}
	if rep.Skipped == nil {
		rep.Skipped = []Skipped{}
	}
	sort.Slice(rep.Skipped, func(i, j int) bool { return rep.Skipped[i].File < rep.Skipped[j].File })
	// Processes by job, rank, then file and pid; those without a rank last.
	idx := make([]int, len(r.procs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		p, q := &r.procs[idx[a]].ID, &r.procs[idx[b]].ID
		if p.HasRank() != q.HasRank() {
			return p.HasRank()
		}
		if p.Job != q.Job {
			return p.Job < q.Job
		}
		if p.Rank != q.Rank {
			return p.Rank < q.Rank
		}
		if r.order[idx[a]] != r.order[idx[b]] {
			return r.order[idx[a]] < r.order[idx[b]]
		}
		return p.PID < q.PID
	})
	procs := make([]Process, len(idx))
	for i, j := range idx {
		procs[i] = r.procs[j]
	}
	r.procs = nil

	jobs, hosts := map[string]int{}, map[string]bool{}
	seenRank := map[string]int{}
	noRank := 0
	labels := make([]string, len(procs))
	for i := range procs {
		p := &procs[i]
		id := &p.ID
		jobs[id.Job]++
		hosts[id.Host] = true
		label := ""
		if id.HasRank() {
			label = strconv.Itoa(id.Rank)
			key := id.Job + "\x00" + label
			if n := seenRank[key]; n > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("rank %d of job %q appears %d times (again in %s, host %s pid %d): each is shown, as %s%s",
					id.Rank, id.Job, n+1, p.File, id.Host, id.PID, label, strings.Repeat("'", n)))
				label += strings.Repeat("'", n)
			}
			seenRank[key]++
		} else {
			noRank++
			label = id.Host + "/" + strconv.FormatUint(uint64(id.PID), 10)
		}
		labels[i] = label
		rep.Ranks = append(rep.Ranks, Rank{Rank: optInt(id.Rank), LocalRank: optInt(id.LocalRank), WorldSize: optInt(id.WorldSize),
			NodeRank: optInt(id.NodeRank), Host: id.Host, PID: id.PID, Job: id.Job, Launcher: id.Launcher, File: p.File,
			Calls: p.Calls, TotalNs: p.TotalNs, Label: label})
		rep.Procs = append(rep.Procs, ProcessRow{PID: id.PID, PPID: p.PPID, Command: p.Command, Threads: p.Threads,
			Calls: p.Calls, TotalNs: p.TotalNs, ExitCode: p.ExitCode, Host: id.Host, Rank: optInt(id.Rank),
			LocalRank: optInt(id.LocalRank), WorldSize: optInt(id.WorldSize), Job: id.Job})
	}
	for j := range jobs {
		rep.Jobs = append(rep.Jobs, j)
	}
	sort.Strings(rep.Jobs)
	for h := range hosts {
		rep.Hosts = append(rep.Hosts, h)
	}
	sort.Strings(rep.Hosts)
	if len(jobs) > 1 {
		var parts []string
		for _, j := range rep.Jobs {
			name := j
			if name == "" {
				name = "(no job id)"
			}
			parts = append(parts, fmt.Sprintf("%s: %d", name, jobs[j]))
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("the traces are of %d jobs (%s processes): ranks are told apart by job and rank, and the outliers compare all of them as one job; report each job's folder on its own to compare ranks of one job",
			len(jobs), strings.Join(parts, ", ")))
	}
	if noRank > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d %s no rank (no launcher variables: RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK): shown as host/pid",
			noRank, pluralVerb(noRank, "process has", "processes have")))
	}
	if ws := worldSizes(procs); len(ws) == 1 {
		for n := range ws {
			if ranked := len(procs) - noRank; n > 0 && ranked != n {
				rep.Notes = append(rep.Notes, fmt.Sprintf("the world size is %d and %d ranked processes were read: the job is not whole", n, ranked))
			}
		}
	}
	for _, s := range r.skipped {
		rep.Notes = append(rep.Notes, fmt.Sprintf("skipped %s: %s", s.File, s.Error))
	}

	rep.APIs = rows(r.apis, procs, labels, func(p *Process) map[string]Stat { return p.APIs })
	rep.Frames = rows(r.frames, procs, labels, func(p *Process) map[string]Stat { return p.Frames })
	rep.Outliers = outliers(rep, procs, labels)
	explainAll(rep, procs, opts.Workers)
	rep.Steps = steps(procs, labels, opts.Step)
	rep.Clocks = clockNote(r.clocks)
	if rep.Steps != nil && len(rep.Hosts) > 1 {
		rep.Clocks.Text += "; steps are compared by their lengths and their order on each rank, not by their start times (align on a step with --step NAME)"
		rep.Notes = append(rep.Notes, rep.Clocks.Text)
	}
	return rep
}

func pluralVerb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func worldSizes(procs []Process) map[int]bool {
	m := map[int]bool{}
	for i := range procs {
		if procs[i].ID.WorldSize >= 0 {
			m[procs[i].ID.WorldSize] = true
		}
	}
	return m
}

func optInt(v int) *int {
	if v < 0 {
		return nil
	}
	return &v
}

// rows is the job's table of APIs or frames: most total time first, each
// with its ranks in rank order.
func rows(job map[string]*quantile.Sketch, procs []Process, labels []string, of func(*Process) map[string]Stat) []Row {
	out := make([]Row, 0, len(job))
	for name, sk := range job {
		row := Row{Name: name, Calls: int(sk.Count()), MedianNs: sk.Quantile(50), P99Ns: sk.Quantile(99), TotalNs: int64(math.Round(sk.Sum()))}
		for i := range procs {
			if st, ok := of(&procs[i])[name]; ok {
				row.Ranks = append(row.Ranks, RankStat{Label: labels[i], Job: procs[i].ID.Job, Stat: st})
			}
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TotalNs != out[j].TotalNs {
			return out[i].TotalNs > out[j].TotalNs
		}
		return out[i].Name < out[j].Name
	})
	return out
}
