package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/internal/job"
	"github.com/cuprof/cuprof/internal/output"
)

// isJob says whether report's arguments are a job's traces: several, or a
// folder.
func isJob(args []string) bool {
	if len(args) > 1 {
		return true
	}
	st, err := os.Stat(args[0])
	return err == nil && st.IsDir()
}

// runJobReport reports a job's traces (internal/job): text or JSON, and
// the steps as SVG when asked.
func runJobReport(g *globalOptions, o *reportOptions, args []string) error {
	if o.table != "" || o.raw {
		return usageErrorf("--table and --raw are for one trace's report")
	}
	write, err := formatWriter(o.format, format[*job.Report]{"text", job.WriteText}, format[*job.Report]{"json", job.WriteJSON})
	if err != nil {
		return err
	}
	files, err := job.Inputs(args)
	if err != nil {
		return err
	}
	r := job.Reduce(files, job.Options{Step: o.step})
	if len(r.Skipped) == len(files) {
		return fmt.Errorf("no trace of the job could be read (the first: %s: %s)", r.Skipped[0].File, r.Skipped[0].Error)
	}
	out := g.stdout
	if o.output != "" {
		err := output.WriteFile(o.output, func(w io.Writer) error { return write(w, r) }, output.Force(g.force), output.NoSync())
		if err != nil {
			return err
		}
	} else if err := write(out, r); err != nil {
		return fmt.Errorf("cannot write the report: %w", err)
	}
	if o.svg != "" {
		if err := output.WriteFile(o.svg, func(w io.Writer) error { return job.WriteStepsSVG(w, r) }, output.Force(g.force), output.NoSync()); err != nil {
			return err
		}
	}
	if o.parquetCalls && o.parquet == "" {
		return usageErrorf("--parquet-calls needs --parquet DIR")
	}
	if o.parquet != "" {
		if err := os.MkdirAll(o.parquet, 0o700); err != nil {
			return fmt.Errorf("make the Parquet folder: %w", err)
		}
		if err := job.WriteParquet(o.parquet, r, o.parquetCalls, g.force); err != nil {
			return fmt.Errorf("write the Parquet tables: %w", err)
		}
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(g.stderr, "cuprof: skipped %s (%s); the others are reported\n", s.File, s.Error)
	}
	if len(r.Skipped) > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// runJobFlame writes the flame graph of a job's traces: each trace's
// profile merged into one as it is built (pprof's profile.Merge), the
// samples keeping their rank, local_rank and host labels.
func runJobFlame(g *globalOptions, o *flameOptions, args []string) error {
	if o.out == "" {
		return usageErrorf("a job's flame graph needs -o FILE")
	}
	if err := checkOutput(g, o.out, args[0]); err != nil {
		return err
	}
	files, err := job.Inputs(args)
	if err != nil {
		return err
	}
	var merged *profile.Profile
	for _, f := range files {
		p, err := buildProfile(g, f, &o.profileOptions)
		if err != nil {
			return err
		}
		if merged == nil {
			merged = p
			continue
		}
		if merged, err = profile.Merge([]*profile.Profile{merged, p}); err != nil {
			return fmt.Errorf("merge the profile of %s: %w", f, err)
		}
	}
	if err := writeProfile(g, o.out, merged); err != nil {
		return err
	}
	g.tell(g.info, "cuprof: %s view of %d traces, %d stacks; open it with: go tool pprof -http=: %s (-tagfocus rank=N for one rank)\n",
		o.view, len(files), len(merged.Sample), o.out)
	return nil
}

// jobDiffPair picks the traces diff compares in a job: rank's (NEW) and
// against's, or the median rank's by host time (BASE). It says which on
// info.
func jobDiffPair(g *globalOptions, args []string, rank, against string) ([]string, error) {
	if rank == "" {
		return nil, usageErrorf("diff of a job's traces needs --rank N (and --against M, or the median rank is BASE)")
	}
	files, err := job.Inputs(args)
	if err != nil {
		return nil, err
	}
	r := job.Reduce(files, job.Options{})
	find := func(label string) (*job.Rank, error) {
		var found *job.Rank
		for i := range r.Ranks {
			if r.Ranks[i].Label == label {
				if found != nil && found.Job != r.Ranks[i].Job {
					return nil, usageErrorf("rank %s is in several jobs (%s, %s): give one job's traces", label, found.Job, r.Ranks[i].Job)
				}
				found = &r.Ranks[i]
			}
		}
		if found == nil {
			return nil, usageErrorf("no rank %s in the job's %d traces (ranks are %s to %s)", label, len(files),
				r.Ranks[0].Label, r.Ranks[len(r.Ranks)-1].Label)
		}
		return found, nil
	}
	if len(r.Ranks) == 0 {
		return nil, fmt.Errorf("no trace of the job could be read")
	}
	nw, err := find(rank)
	if err != nil {
		return nil, err
	}
	var base *job.Rank
	if against != "" {
		if base, err = find(against); err != nil {
			return nil, err
		}
	} else {
		byTime := make([]*job.Rank, len(r.Ranks))
		for i := range r.Ranks {
			byTime[i] = &r.Ranks[i]
		}
		sort.SliceStable(byTime, func(i, j int) bool { return byTime[i].TotalNs < byTime[j].TotalNs })
		base = byTime[len(byTime)/2]
		if base.File == nw.File && len(byTime) > 1 {
			base = byTime[(len(byTime)/2+1)%len(byTime)]
		}
	}
	if base.File == nw.File {
		return nil, usageErrorf("rank %s and rank %s are in one trace (%s): diff compares traces", nw.Label, base.Label, nw.File)
	}
	fmt.Fprintf(g.info, "cuprof: comparing rank %s (%s, NEW) with rank %s (%s, BASE%s)\n", nw.Label, nw.File, base.Label, base.File,
		map[bool]string{true: "", false: ": the median rank by host time"}[against != ""])
	return []string{base.File, nw.File}, nil
}
