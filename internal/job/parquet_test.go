package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// duckdbPython is a python that can import duckdb: CUPROF_TEST_DUCKDB_PYTHON
// (.ci/job.sh makes one), else python3. The test skips without one, and
// fails in CI.
func duckdbPython(t *testing.T) string {
	py := os.Getenv("CUPROF_TEST_DUCKDB_PYTHON")
	if py == "" {
		py = "python3"
	}
	if err := exec.Command(py, "-c", "import duckdb").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no duckdb for %s in CI (.ci/job.sh installs it): %v", py, err)
		}
		t.Skipf("no duckdb for %s (pip install duckdb==1.4.2, or CUPROF_TEST_DUCKDB_PYTHON): %v", py, err)
	}
	return py
}

// TestParquetReadByDuckDB: the Parquet tables of a job, read by DuckDB,
// give the report's per-rank table (rank, API, calls, median, p99, total)
// and its ranks; calls.parquet summed per rank gives each rank's calls and
// host time.
func TestParquetReadByDuckDB(t *testing.T) {
	py := duckdbPython(t)
	dir := t.TempDir()
	files := writeJob(t, dir, 12, 2, 7, 6)
	r := Reduce(files, Options{Workers: 2})
	pq := filepath.Join(dir, "pq")
	os.Mkdir(pq, 0o700)
	if err := WriteParquet(pq, r, true, false); err != nil {
		t.Fatal(err)
	}
	// What the report says, as lines "rank api calls median p99 total".
	var want []string
	for _, row := range r.APIs {
		for _, rs := range row.Ranks {
			want = append(want, fmt.Sprintf("%s %s %d %d %d %d", rs.Label, row.Name, rs.Calls, rs.MedianNs, rs.P99Ns, rs.TotalNs))
		}
	}
	sort.Strings(want)
	var ranks []string
	for _, rk := range r.Ranks {
		ranks = append(ranks, fmt.Sprintf("%d %s %d %d %s %d %d", *rk.Rank, rk.Host, *rk.LocalRank, *rk.WorldSize, rk.Job, rk.Calls, rk.TotalNs))
	}
	script := `
import duckdb, json, sys
d = sys.argv[1]
apis = duckdb.sql(f"select label, name, calls, median_ns, p99_ns, total_ns from '{d}/rank_apis.parquet'").fetchall()
ranks = duckdb.sql(f"select rank, host, local_rank, world_size, job, calls, total_ns from '{d}/ranks.parquet' order by rank").fetchall()
calls = duckdb.sql(f"select rank, count(*), sum(duration_ns) from '{d}/calls.parquet' group by rank order by rank").fetchall()
print(json.dumps({"apis": sorted(" ".join(str(x) for x in r) for r in apis),
	"ranks": [" ".join(str(x) for x in r) for r in ranks],
	"calls": [[r[0], r[1], int(r[2])] for r in calls]}))
`
	out, err := exec.Command(py, "-c", script, pq).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	var got struct {
		APIs  []string  `json:"apis"`
		Ranks []string  `json:"ranks"`
		Calls [][]int64 `json:"calls"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.Join(got.APIs, "\n") != strings.Join(want, "\n") {
		t.Errorf("rank_apis.parquet through DuckDB:\n%s\nthe report:\n%s", strings.Join(got.APIs, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(got.Ranks, "\n") != strings.Join(ranks, "\n") {
		t.Errorf("ranks.parquet through DuckDB:\n%s\nthe report:\n%s", strings.Join(got.Ranks, "\n"), strings.Join(ranks, "\n"))
	}
	if len(got.Calls) != len(r.Ranks) {
		t.Fatalf("calls.parquet: %d ranks", len(got.Calls))
	}
	for i, c := range got.Calls {
		if rk := r.Ranks[i]; c[0] != int64(*rk.Rank) || c[1] != int64(rk.Calls) || c[2] != rk.TotalNs {
			t.Errorf("calls.parquet rank %d: %d calls, %d ns; the report: %d, %d", c[0], c[1], c[2], rk.Calls, rk.TotalNs)
		}
	}
}
