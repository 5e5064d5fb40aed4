package job

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/parquet-go/parquet-go"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/trace"
)

// The Parquet tables of a job (WriteParquet), for DuckDB, pandas, Polars
// or Dask to take the analysis further. Ranks without a rank have rank -1
// (their label is host/pid); durations are ns, the profiler's cost taken
// out, as in the report.

// RankRow is a row of ranks.parquet: one process of the job.
type RankRow struct {
	Job       string `parquet:"job"`
	Rank      int64  `parquet:"rank"`
	Label     string `parquet:"label"`
	LocalRank int64  `parquet:"local_rank"`
	WorldSize int64  `parquet:"world_size"`
	NodeRank  int64  `parquet:"node_rank"`
	Host      string `parquet:"host"`
	PID       int64  `parquet:"pid"`
	File      string `parquet:"file"`
	Calls     int64  `parquet:"calls"`
	TotalNs   int64  `parquet:"total_ns"`
}

// RankStatRow is a row of rank_apis.parquet (Name an API) or
// rank_frames.parquet (Name a wrapper frame): one rank's calls of it, the
// report's per-rank table.
type RankStatRow struct {
	Job      string `parquet:"job"`
	Rank     int64  `parquet:"rank"`
	Label    string `parquet:"label"`
	Host     string `parquet:"host"`
	Name     string `parquet:"name"`
	Calls    int64  `parquet:"calls"`
	MedianNs int64  `parquet:"median_ns"`
	P99Ns    int64  `parquet:"p99_ns"`
	TotalNs  int64  `parquet:"total_ns"`
}

// CallRow is a row of calls.parquet: one driver call of one rank.
type CallRow struct {
	Job        string `parquet:"job"`
	Rank       int64  `parquet:"rank"`
	Host       string `parquet:"host"`
	PID        int64  `parquet:"pid"`
	TID        int64  `parquet:"tid"`
	API        string `parquet:"api"`
	StartNs    int64  `parquet:"start_ns"` // on the trace's clock (CLOCK_MONOTONIC of its host)
	DurationNs int64  `parquet:"duration_ns"`
	Device     int32  `parquet:"device"`
	Error      bool   `parquet:"error"`
}

func rankOr(v *int) int64 {
	if v == nil {
		return -1
	}
	return int64(*v)
}

// WriteParquet writes the job's tables into dir: ranks.parquet,
// rank_apis.parquet, rank_frames.parquet and, with calls, calls.parquet
// (every call of every trace, read again, in order of the ranks). Files
// are new private files (internal/output).
func WriteParquet(dir string, r *Report, calls bool, force bool) error {
	write := func(name string, f func(io.Writer) error) error {
		return output.WriteFile(filepath.Join(dir, name), f, output.Force(force))
	}
	byLabel := map[string]*Rank{}
	for i := range r.Ranks {
		byLabel[r.Ranks[i].Job+"\x00"+r.Ranks[i].Label] = &r.Ranks[i]
	}
	err := write("ranks.parquet", func(w io.Writer) error {
		pw := parquet.NewGenericWriter[RankRow](w)
		for _, rk := range r.Ranks {
			if _, err := pw.Write([]RankRow{{Job: rk.Job, Rank: rankOr(rk.Rank), Label: rk.Label, LocalRank: rankOr(rk.LocalRank),
				WorldSize: rankOr(rk.WorldSize), NodeRank: rankOr(rk.NodeRank), Host: rk.Host, PID: int64(rk.PID), File: rk.File,
				Calls: int64(rk.Calls), TotalNs: rk.TotalNs}}); err != nil {
				return err
			}
		}
		return pw.Close()
	})
	if err != nil {
		return err
	}
	stats := func(name string, rows []Row) error {
		return write(name, func(w io.Writer) error {
			pw := parquet.NewGenericWriter[RankStatRow](w)
			for _, row := range rows {
				for _, rs := range row.Ranks {
					rk := byLabel[rs.Job+"\x00"+rs.Label]
					out := RankStatRow{Job: rs.Job, Rank: -1, Label: rs.Label, Name: row.Name, Calls: int64(rs.Calls),
						MedianNs: rs.MedianNs, P99Ns: rs.P99Ns, TotalNs: rs.TotalNs}
					if rk != nil {
						out.Rank, out.Host = rankOr(rk.Rank), rk.Host
					}
					if _, err := pw.Write([]RankStatRow{out}); err != nil {
						return err
					}
				}
			}
			return pw.Close()
		})
	}
	if err := stats("rank_apis.parquet", r.APIs); err != nil {
		return err
	}
	if err := stats("rank_frames.parquet", r.Frames); err != nil {
		return err
	}
	if !calls {
		return nil
	}
	return write("calls.parquet", func(w io.Writer) error { return writeCalls(w, r) })
}

// writeCalls reads every trace of the job again and writes its calls, a
// trace at a time (memory: one trace's replay and a row group).
func writeCalls(w io.Writer, r *Report) error {
	files := map[string]bool{}
	var order []string
	for _, rk := range r.Ranks {
		if !files[rk.File] {
			files[rk.File] = true
			order = append(order, rk.File)
		}
	}
	sort.Strings(order)
	pw := parquet.NewGenericWriter[CallRow](w)
	for _, file := range order {
		f, err := trace.Open(file)
		if err != nil {
			return fmt.Errorf("calls of %s: %w", file, err)
		}
		tables := f.Tables()
		ids := map[uint32]analysis.Identity{}
		for i := range tables.Processes {
			ids[tables.Processes[i].PID] = analysis.IdentityOf(tables, &tables.Processes[i])
		}
		batch := make([]CallRow, 0, 4096)
		var werr error
		flush := func() {
			if len(batch) > 0 && werr == nil {
				_, werr = pw.Write(batch)
			}
			batch = batch[:0]
		}
		rd := f.NewEventReader()
		analysis.Run(tables, rd.All(), analysis.Forget(), analysis.OnEvent(func(e *analysis.Event) {
			if e.Kind != trace.KindCall || e.Outside {
				return
			}
			id, ok := ids[e.PID]
			if !ok {
				id, _ = analysis.IdentityByPID(tables, e.PID)
				ids[e.PID] = id
			}
			batch = append(batch, CallRow{Job: id.Job, Rank: int64(id.Rank), Host: id.Host, PID: int64(id.PID), TID: int64(e.TID),
				API: e.API.String(), StartNs: e.Start, DurationNs: e.Duration, Device: e.Device, Error: e.Error})
			if len(batch) == cap(batch) {
				flush()
			}
		}))
		flush()
		err = rd.Err()
		f.Close()
		if werr != nil {
			return werr
		}
		if err != nil {
			return fmt.Errorf("calls of %s: %w", file, err)
		}
	}
	return pw.Close()
}
