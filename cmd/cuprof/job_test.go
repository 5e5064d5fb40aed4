package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/exporters/otlp"
	"github.com/cuprof/cuprof/internal/job"
	"github.com/cuprof/cuprof/trace"
)

// buildRank compiles examples/job/rank.c, the rank program of the job
// tests, into dir.
func buildRank(t testing.TB, dir string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler: the rank program, the shim and the simulated driver cannot be built")
	}
	exe := filepath.Join(dir, "rank")
	if out, err := exec.Command(cc, "-O1", "-Wall", "-o", exe, filepath.Join("..", "..", "examples", "job", "rank.c"), "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("compile rank.c: %v\n%s", err, out)
	}
	return exe
}

// namespacedHost runs this test binary as cuprof in new UTS, PID and
// network namespaces named host: a host of its own, where the recorder is
// pid 1 and the program it records gets the same pid as on every other
// such host. It reports false when namespaces cannot be made here.
func namespacedHost(t testing.TB, host string, env []string, args ...string) (out string, ok bool) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "CUPROF_TEST_AS_CUPROF=1", "CUPROF_TEST_HOSTNAME="+host, "CUPROF_SIM_COST_SCALE=1"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET}
	b, err := cmd.CombinedOutput()
	if err != nil {
		var se *os.SyscallError
		if (errorAs(err, &se) || strings.Contains(err.Error(), "operation not permitted")) && len(b) == 0 {
			return err.Error(), false
		}
		t.Fatalf("cuprof %v on host %s: %v\n%s", args, host, err, b)
	}
	return string(b), true
}

func errorAs(err error, se **os.SyscallError) bool {
	e, ok := err.(*os.SyscallError)
	if ok {
		*se = e
	}
	return ok
}

// needNamespaces skips, or in CI (root there) fails, when namespaces
// cannot be made.
func needNamespaces(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot make UTS+PID+net namespaces in CI, where the job tests need them: %s", why)
	}
	t.Skipf("cannot make UTS+PID+net namespaces here (root needed): %s", why)
}

// launcherEnv is the variables each launcher sets for rank r of n on node
// r/perNode.
var launcherEnv = map[string]func(r, n, perNode int) []string{
	"torchrun": func(r, n, perNode int) []string {
		return []string{fmt.Sprint("RANK=", r), fmt.Sprint("LOCAL_RANK=", r%perNode), fmt.Sprint("WORLD_SIZE=", n),
			fmt.Sprint("GROUP_RANK=", r/perNode), fmt.Sprint("LOCAL_WORLD_SIZE=", perNode), "TORCHELASTIC_RUN_ID=tr-77"}
	},
	"srun": func(r, n, perNode int) []string {
		return []string{fmt.Sprint("SLURM_PROCID=", r), fmt.Sprint("SLURM_LOCALID=", r%perNode), fmt.Sprint("SLURM_NTASKS=", n),
			fmt.Sprint("SLURM_NODEID=", r/perNode), "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0"}
	},
	"mpirun": func(r, n, perNode int) []string {
		return []string{fmt.Sprint("OMPI_COMM_WORLD_RANK=", r), fmt.Sprint("OMPI_COMM_WORLD_LOCAL_RANK=", r%perNode),
			fmt.Sprint("OMPI_COMM_WORLD_SIZE=", n), fmt.Sprint("OMPI_COMM_WORLD_NODE_RANK=", r/perNode),
			fmt.Sprint("PMIX_RANK=", r), "PMIX_NAMESPACE=prterun-x-9@1"}
	},
}

var launcherJob = map[string]string{"torchrun": "tr-77", "srun": "4242.0", "mpirun": "prterun-x-9@1"}

// TestJobRanksInNamespacedHosts records 4 ranks of a job under each
// launcher's variables, each rank's recorder in UTS+PID+net namespaces of
// its own acting as its host: every program has the same pid, and under
// srun every host has the same name. Each rank stays a process of its own
// with its rank, local rank, world size, host and job through merge
// (cuprof dump of all traces), report (one trace's and the job's), flame
// (the rank label of every sample), timeline (process names) and export
// (resource attributes).
func TestJobRanksInNamespacedHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("records 12 programs")
	}
	dir := t.TempDir()
	rank := buildRank(t, dir)
	const n, perNode = 4, 2
	for _, launcher := range []string{"torchrun", "srun", "mpirun"} {
		t.Run(launcher, func(t *testing.T) {
			out := filepath.Join(dir, launcher)
			var files []string
			for r := 0; r < n; r++ {
				host := fmt.Sprintf("node%d", r/perNode)
				if launcher == "srun" {
					host = "node" // colliding host names: told apart by their namespaces
				}
				env := launcherEnv[launcher](r, n, perNode)
				// The program gets pid 300 on every host: the namespace's
				// last pid is set to 299 right before it is started.
				log, ok := namespacedHost(t, host, env, "record", "--sim", "--python", "off", "-o", filepath.Join(out, "%j", "%r.cuprof"),
					"--", "sh", "-c", `echo 299 > /proc/sys/kernel/ns_last_pid && "$0" -n 5`, rank)
				if !ok {
					needNamespaces(t, log)
				}
				files = append(files, filepath.Join(out, strings.ReplaceAll(launcherJob[launcher], "/", "_"), fmt.Sprintf("%d.cuprof", r)))
			}
			checkJob(t, launcher, files, n, perNode)
		})
	}
}

func checkJob(t *testing.T, launcher string, files []string, n, perNode int) {
	hostOf := func(r int) string {
		if launcher == "srun" {
			return "node"
		}
		return fmt.Sprintf("node%d", r/perNode)
	}
	want := func(t *testing.T, what string, id analysis.Identity, r int) {
		t.Helper()
		if id.Rank != r || id.LocalRank != r%perNode || id.WorldSize != n || id.NodeRank != r/perNode ||
			id.Host != hostOf(r) || id.Job != launcherJob[launcher] {
			t.Errorf("%s: rank %d is %+v", what, r, id)
		}
	}
	// Each trace: one process, the program, with the pid every host gave it.
	var traces []*trace.Trace
	pids := map[uint32]int{}
	for r, f := range files {
		tr, err := trace.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Processes) != 1 {
			t.Fatalf("%s: %d processes", f, len(tr.Processes))
		}
		want(t, f, analysis.IdentityOf(tr, &tr.Processes[0]), r)
		pids[tr.Processes[0].PID]++
		traces = append(traces, tr)
	}
	// Colliding pids: the point of the test. All ranks' are 300 unless a
	// recorder's thread took a pid between ns_last_pid and the fork.
	var pid uint32
	for p, k := range pids {
		if pid == 0 || k > pids[pid] {
			pid = p
		}
	}
	if pids[pid] < 2 {
		t.Fatalf("no two hosts gave their programs the same pid %v: the test wants them to collide", pids)
	}
	if len(pids) != 1 {
		t.Logf("pids %v: not all the same", pids)
	}
	pidOf := map[int]uint32{}
	for r, tr := range traces {
		pidOf[r] = tr.Processes[0].PID
	}

	// Merge, as cuprof dump does it.
	dir := filepath.Dir(files[0])
	merged := filepath.Join(dir, "merged.cuprof.txt")
	var so, se bytes.Buffer
	if err := run(append(append([]string{"dump"}, files...), "-o", merged), nil, &so, &se); err != nil {
		t.Fatalf("dump: %v\n%s", err, se.String())
	}
	// Two host names: the merge says how far apart their clocks may be.
	if hosts := strings.Contains(se.String(), "the ranks of 2 hosts are put on one time axis"); hosts != (launcher != "srun") {
		t.Errorf("dump's clock note (want it for 2 host names): %q", se.String())
	}
	m, err := trace.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	ids := analysis.Identities(m)
	if len(ids) != n {
		t.Fatalf("merged: %d processes, want %d", len(ids), n)
	}
	calls := map[uint32]int{}
	for _, e := range m.Events {
		if e.Kind == trace.KindCall {
			calls[e.PID]++
		}
	}
	for _, id := range ids {
		want(t, "merged", id, id.Rank)
		if id.PID != pidOf[id.Rank] {
			t.Errorf("merged: rank %d has pid %d, want its own %d", id.Rank, id.PID, pidOf[id.Rank])
		}
		if calls[id.Key] != calls[ids[0].Key] || calls[id.Key] == 0 {
			t.Errorf("merged: rank %d has %d calls, rank %d %d", id.Rank, calls[id.Key], ids[0].Rank, calls[ids[0].Key])
		}
	}

	// report of the merged trace: a process row per rank.
	so.Reset()
	if err := run([]string{"report", merged, "--format", "json"}, nil, &so, &se); err != nil {
		t.Fatalf("report: %v", err)
	}
	var rep struct {
		Processes []struct {
			Rank      *int   `json:"rank"`
			LocalRank *int   `json:"local_rank"`
			WorldSize *int   `json:"world_size"`
			Host      string `json:"host"`
			Job       string `json:"job"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range rep.Processes {
		if p.Rank == nil || p.WorldSize == nil || p.LocalRank == nil || *p.WorldSize != n || *p.LocalRank != *p.Rank%perNode ||
			p.Host != hostOf(*p.Rank) || p.Job != launcherJob[launcher] {
			t.Errorf("report process %+v", p)
			continue
		}
		seen[*p.Rank] = true
	}
	if len(seen) != n {
		t.Errorf("report: ranks %v", seen)
	}

	// The job report over the traces.
	jr := job.Reduce(files, job.Options{Workers: 2})
	for _, note := range jr.Notes {
		if note != jr.Clocks.Text { // ranks of several hosts: said
			t.Errorf("job report: note %q", note)
		}
	}
	if len(jr.Ranks) != n || len(jr.Outliers) != 0 {
		t.Errorf("job report: %d ranks, outliers %+v", len(jr.Ranks), jr.Outliers)
	}
	for r, rk := range jr.Ranks {
		if rk.Rank == nil || *rk.Rank != r || *rk.LocalRank != r%perNode || *rk.WorldSize != n || rk.Host != hostOf(r) ||
			rk.Job != launcherJob[launcher] || rk.PID != pidOf[r] {
			t.Errorf("job report rank %d: %+v", r, rk)
		}
	}

	// flame: every sample carries its rank; each rank's samples are its own.
	pb := filepath.Join(dir, "merged.pb.gz")
	if err := run([]string{"flame", merged, "-o", pb}, nil, &so, &se); err != nil {
		t.Fatalf("flame: %v\n%s", err, se.String())
	}
	f, _ := os.Open(pb)
	prof, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	perRank := map[string]int64{}
	for _, s := range prof.Sample {
		r := s.Label["rank"]
		if len(r) != 1 || len(s.Label["host"]) != 1 {
			t.Fatalf("a sample without one rank and host label: %v", s.Label)
		}
		perRank[r[0]] += s.Value[0]
	}
	if len(perRank) != n {
		t.Errorf("flame: samples of ranks %v", perRank)
	}

	// diff: rank 1 against the median rank, and against rank 2; no rank 99.
	so.Reset()
	se.Reset()
	if err := run([]string{"diff", dir, "--rank", "1", "--format", "json"}, nil, &so, &se); err != nil ||
		!strings.Contains(se.String(), "comparing rank 1 ("+files[1]+", NEW) with rank ") || !strings.Contains(so.String(), "cuStreamSynchronize") {
		t.Errorf("diff --rank 1: %v\n%s\n%s", err, se.String(), so.String())
	}
	se.Reset()
	if err := run([]string{"diff", dir, "--rank", "1", "--against", "2"}, nil, &so, &se); err != nil ||
		!strings.Contains(se.String(), "with rank 2 ("+files[2]+", BASE)") {
		t.Errorf("diff --rank 1 --against 2: %v\n%s", err, se.String())
	}
	if err := run([]string{"diff", dir, "--rank", "99"}, nil, &so, &se); err == nil || !strings.Contains(err.Error(), "no rank 99") {
		t.Errorf("diff --rank 99: %v", err)
	}

	// The job's flame graph, from the traces themselves: the same ranks.
	jpb := filepath.Join(dir, "job.pb.gz")
	if err := run(append(append([]string{"flame"}, files...), "-o", jpb), nil, &so, &se); err != nil {
		t.Fatalf("job flame: %v\n%s", err, se.String())
	}
	f, _ = os.Open(jpb)
	jprof, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	jobRank := map[string]int64{}
	for _, s := range jprof.Sample {
		jobRank[s.Label["rank"][0]] += s.Value[0]
	}
	if len(jobRank) != n || jobRank["0"] == 0 || jobRank["0"] != perRank["0"] {
		t.Errorf("job flame: samples by rank %v, the merged trace's flame %v", jobRank, perRank)
	}

	// timeline: each rank's process is named with its rank, host and pid.
	tl := filepath.Join(dir, "merged.json")
	if err := run([]string{"timeline", merged, "--format", "chrome-json", "-o", tl}, nil, &so, &se); err != nil {
		t.Fatalf("timeline: %v\n%s", err, se.String())
	}
	b, _ := os.ReadFile(tl)
	for r := 0; r < n; r++ {
		name := fmt.Sprintf("rank %d (%s pid %d)", r, hostOf(r), pidOf[r])
		if !bytes.Contains(b, []byte(name)) {
			t.Errorf("timeline: no process named %q", name)
		}
	}

	// export: a resource per rank with its attributes.
	rs, err := otlp.Collect(m, otlp.WithVersion("test"))
	if err != nil {
		t.Fatal(err)
	}
	res := map[int64]map[string]string{}
	for _, r := range rs {
		attrs := map[string]string{}
		var rank int64 = -1
		for _, kv := range r.Resource.Attributes {
			v := kv.Value
			switch {
			case v.GetStringValue() != "":
				attrs[kv.Key] = v.GetStringValue()
			default:
				attrs[kv.Key] = fmt.Sprint(v.GetIntValue())
			}
			if kv.Key == otlp.AttrRank {
				rank = v.GetIntValue()
			}
		}
		res[rank] = attrs
	}
	instances := map[string]bool{}
	for r := 0; r < n; r++ {
		a := res[int64(r)]
		if a == nil || a[otlp.AttrLocalRank] != fmt.Sprint(r%perNode) || a[otlp.AttrWorldSize] != fmt.Sprint(n) ||
			a[otlp.AttrHostName] != hostOf(r) || a[otlp.AttrJobID] != launcherJob[launcher] || a[otlp.AttrPID] != fmt.Sprint(pidOf[r]) {
			t.Errorf("export: rank %d's resource %v", r, a)
		}
		instances[a[otlp.AttrServiceInstance]] = true
	}
	if len(instances) != n {
		t.Errorf("export: service.instance.id not one per rank: %v", instances)
	}
}

// TestJobReportNamesThePlantedSlowRank: 256 ranks of a Slurm job on 4
// hosts (UTS+PID+net namespaces, 64 ranks each, recorded per rank), rank
// 137's wrapper leaving its pool's release threshold at 0: cuprof report
// over the folder names rank 137, the API where it is slow and the
// pool-trim finding that explains it, and no other rank.
func TestJobReportNamesThePlantedSlowRank(t *testing.T) {
	if testing.Short() {
		t.Skip("records 256 programs")
	}
	const ranks, hosts, slow = 256, 4, 137
	dir := t.TempDir()
	rank := buildRank(t, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "job")
	errs := make(chan error, hosts)
	for h := 0; h < hosts; h++ {
		go func() {
			per := ranks / hosts
			script := fmt.Sprintf(`r=%d; while [ $r -lt %d ]; do
	SLURM_PROCID=$r SLURM_LOCALID=$((r %% %d)) SLURM_NODEID=%d "$SELF" record --sim -q --python off -o "$OUT/%%j/%%r.cuprof" -- "$RANK_PROGRAM" -n 10 || exit 1
	r=$((r + 1))
done`, h*per, (h+1)*per, per, h)
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), "CUPROF_TEST_AS_CUPROF=1", fmt.Sprintf("CUPROF_TEST_HOSTNAME=node%d", h),
				"CUPROF_TEST_HOST_SCRIPT="+script, "SELF="+self, "OUT="+out, "RANK_PROGRAM="+rank,
				fmt.Sprint("SLOW_RANK=", slow), fmt.Sprint("SLURM_NTASKS=", ranks), "SLURM_JOB_ID=5150", "CUPROF_SIM_COST_SCALE=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUTS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET}
			b, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("host node%d: %w\n%s", h, err, b)
			}
			errs <- err
		}()
	}
	for h := 0; h < hosts; h++ {
		if err := <-errs; err != nil {
			if strings.Contains(err.Error(), "operation not permitted") {
				needNamespaces(t, err.Error())
			}
			t.Fatal(err)
		}
	}
	var so, se bytes.Buffer
	if err := run([]string{"report", filepath.Join(out, "5150"), "--format", "json"}, nil, &so, &se); err != nil {
		t.Fatalf("report: %v\n%s", err, se.String())
	}
	var rep struct {
		Ranks []struct {
			Rank *int   `json:"rank"`
			Host string `json:"host"`
		} `json:"ranks"`
		Outliers []struct {
			Rank    *int   `json:"rank"`
			API     string `json:"api"`
			Frame   string `json:"frame"`
			Metric  string `json:"metric"`
			Finding *struct {
				Rule string `json:"rule"`
			} `json:"finding"`
		} `json:"outliers"`
		Hosts []string `json:"hosts"`
	}
	if err := json.Unmarshal(so.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Ranks) != ranks || len(rep.Hosts) != hosts {
		t.Fatalf("%d ranks on hosts %v", len(rep.Ranks), rep.Hosts)
	}
	if len(rep.Outliers) == 0 {
		t.Fatal("no outlier named")
	}
	for _, o := range rep.Outliers {
		if o.Rank == nil || *o.Rank != slow {
			t.Errorf("an outlier of another rank: rank %v %s%s (%s)", o.Rank, o.API, o.Frame, o.Metric)
			continue
		}
		if o.Finding == nil || o.Finding.Rule != "pool-trim" {
			t.Errorf("rank %d's outlier on %s%s (%s) not explained by pool-trim: %+v", slow, o.API, o.Frame, o.Metric, o.Finding)
		}
	}
	if o := rep.Outliers[0]; o.API != "cuStreamSynchronize" && o.API != "cuMemAllocAsync" {
		t.Errorf("the first outlier is on %q%q, want the synchronize that trims or the allocation after it", o.API, o.Frame)
	}
	if *rep.Ranks[slow].Rank != slow || rep.Ranks[slow].Host != "node2" {
		t.Errorf("rank %d row: %+v", slow, rep.Ranks[slow])
	}
}
