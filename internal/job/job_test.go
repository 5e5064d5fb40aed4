package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

// rankTrace is a synthetic trace of one rank: steps "step" spans, each
// around a cuStreamSynchronize taking syncNs (a few ns more or less by
// rank, as machines differ) and a cuStreamCreate of 3 us.
func rankTrace(rank, ranks int, host string, steps int, syncNs int64) *trace.Trace {
	t := &trace.Trace{Meta: trace.Meta{Host: host, Capture: "text", WallStart: 1_700_000_000_000_000_000,
		Sync: trace.ClockSync{State: trace.SyncOK, MaxErrorNs: 2_000_000}},
		Strings: []string{"", "job", "step"}}
	pid := uint32(13) // every rank the same pid, as in PID namespaces
	t.Processes = []trace.Process{{PID: pid, Host: host, HostNS: "uts:" + host, ExitCode: 0, Cmdline: []string{"train"},
		Env: map[string]string{"SLURM_PROCID": fmt.Sprint(rank), "SLURM_LOCALID": fmt.Sprint(rank % 4),
			"SLURM_NTASKS": fmt.Sprint(ranks), "SLURM_JOB_ID": "4242"}}}
	t.Threads = []trace.Thread{{PID: pid, TID: pid, Name: "train"}}
	now := int64(1000)
	jitter := int64(rank % 7)
	for s := 0; s < steps; s++ {
		start := now
		t.Events = append(t.Events, trace.Event{Kind: trace.KindCall, API: trace.APIStreamCreate, PID: pid, TID: pid,
			Device: 0, Start: now, End: now + 3000 + jitter, Handle: uint64(0x100 + s)})
		now += 4000
		t.Events = append(t.Events, trace.Event{Kind: trace.KindCall, API: trace.APIStreamSynchronize, PID: pid, TID: pid,
			Device: 0, Start: now, End: now + syncNs + jitter, Stream: uint64(0x100 + s)})
		now += syncNs + 1000
		t.Events = append(t.Events, trace.Event{Kind: trace.KindSpan, PID: pid, TID: pid, Device: trace.NoDevice,
			Start: start, End: now, Domain: 1, Name: 2})
		now += 500
	}
	trace.SortEvents(t.Events)
	return t
}

// writeJob writes n ranks on hosts hosts, rank slow's syncs 50x slower,
// into dir, and returns the file names.
func writeJob(t testing.TB, dir string, n, hosts, slow, steps int) []string {
	var files []string
	for r := 0; r < n; r++ {
		sync := int64(1200)
		if r == slow {
			sync = 60_000
		}
		tr := rankTrace(r, n, fmt.Sprintf("node%d", r*hosts/n), steps, sync)
		p := filepath.Join(dir, fmt.Sprintf("r%04d.cuprof", r))
		if err := trace.WriteFile(p, tr); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return files
}

func TestJobNamesTheSlowRankOnly(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, 24, 4, 17, 10)
	files, err := Inputs([]string{dir})
	if err != nil || len(files) != 24 {
		t.Fatalf("inputs: %d, %v", len(files), err)
	}
	r := Reduce(files, Options{Workers: 2})
	if len(r.Ranks) != 24 || len(r.Hosts) != 4 || len(r.Jobs) != 1 || r.Jobs[0] != "4242" {
		t.Fatalf("ranks %d hosts %v jobs %v", len(r.Ranks), r.Hosts, r.Jobs)
	}
	for i, rk := range r.Ranks {
		if rk.Rank == nil || *rk.Rank != i || rk.PID != 13 || rk.Job != "4242" || *rk.WorldSize != 24 || *rk.LocalRank != i%4 {
			t.Errorf("rank row %d: %+v", i, rk)
		}
	}
	if len(r.Outliers) == 0 {
		t.Fatal("no outlier")
	}
	for _, o := range r.Outliers {
		if o.Rank == nil || *o.Rank != 17 {
			t.Errorf("outlier of another rank: %+v", o)
		}
	}
	if o := r.Outliers[0]; o.API != "cuStreamSynchronize" || o.Metric != "median" || o.Host != "node2" {
		t.Errorf("first outlier: %+v", o)
	}
	if r.Steps == nil || r.Steps.Name != "step" || len(r.Steps.Ranks) != 24 || len(r.Steps.Ranks[0].Steps) != 10 {
		t.Fatalf("steps: %+v", r.Steps)
	}
	if s17, s0 := r.Steps.Ranks[17].Steps[3].Ns, r.Steps.Ranks[0].Steps[3].Ns; s17 < 10*s0 {
		t.Errorf("rank 17's step %d ns against rank 0's %d", s17, s0)
	}
	// Four hosts, each 2 ms at worst: 4 ms apart at most.
	if r.Clocks.Hosts != 4 || r.Clocks.UncertaintyNs != 4_000_000 || !strings.Contains(r.Clocks.Text, "4 ms") {
		t.Errorf("clocks: %+v", r.Clocks)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Ranks []struct {
			Rank, LocalRank, WorldSize *int
			Host, Job                  string
			PID                        uint32
		} `json:"ranks"`
		Outliers []struct {
			Rank *int
			API  string
		} `json:"outliers"`
		Processes []json.RawMessage `json:"processes"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Ranks) != 24 || doc.Ranks[5].Host != "node0" || len(doc.Outliers) == 0 || *doc.Outliers[0].Rank != 17 || len(doc.Processes) != 24 {
		t.Errorf("JSON: %s", js.String()[:400])
	}
	var txt, svg bytes.Buffer
	if err := WriteText(&txt, r); err != nil || !strings.Contains(txt.String(), "cuStreamSynchronize  median") {
		t.Errorf("text (%v):\n%s", err, txt.String())
	}
	if err := WriteStepsSVG(&svg, r); err != nil || strings.Count(svg.String(), "<rect") != 240 {
		t.Errorf("svg: %v, %d cells", err, strings.Count(svg.String(), "<rect"))
	}
}

// TestJobBadInput: an unreadable trace is named and skipped, the others
// reported; the same rank twice, ranks of two jobs and processes without a
// rank are each said.
func TestJobBadInput(t *testing.T) {
	dir := t.TempDir()
	writeJob(t, dir, 6, 2, -1, 3)
	bad := filepath.Join(dir, "broken.cuprof")
	os.WriteFile(bad, []byte("not a trace"), 0o600)
	twice := filepath.Join(dir, "twice.cuprof")
	trace.WriteFile(twice, rankTrace(2, 6, "node9", 3, 1200))
	other := rankTrace(0, 2, "node0", 3, 1200)
	other.Processes[0].Env["SLURM_JOB_ID"] = "9999"
	trace.WriteFile(filepath.Join(dir, "other.cuprof"), other)
	none := rankTrace(0, 1, "node0", 3, 1200)
	none.Processes[0].Env = nil
	trace.WriteFile(filepath.Join(dir, "none.cuprof"), none)
	files, _ := Inputs([]string{dir})
	r := Reduce(files, Options{})
	if len(r.Skipped) != 1 || r.Skipped[0].File != bad {
		t.Errorf("skipped: %+v", r.Skipped)
	}
	if len(r.Ranks) != 9 {
		t.Errorf("%d processes, want 9", len(r.Ranks))
	}
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{"rank 2 of job \"4242\" appears 2 times", "of 3 jobs", "1 process has no rank", "skipped " + bad} {
		if !strings.Contains(notes, want) {
			t.Errorf("no note saying %q:\n%s", want, notes)
		}
	}
	labels := map[string]bool{}
	for _, rk := range r.Ranks {
		labels[rk.Job+"/"+rk.Label] = true
	}
	if !labels["4242/2'"] || !labels["9999/0"] || !labels["/node0/13"] {
		t.Errorf("labels: %v", labels)
	}
}
