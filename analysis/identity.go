package analysis

import (
	"strconv"
	"strings"

	"github.com/cuprof/cuprof/trace"
)

// Identity says who a traced process was in its job: its host, its id
// there, and the rank, local rank, world size, node rank and job id its
// launcher gave it. It is decided here once, from the process record and
// the environment variables the capture kept, and every output shows it as
// it is (report, lint, flame, timeline, the exporters).
type Identity struct {
	// Host is the host name the process ran under; BootID, MachineID and
	// HostNS tell apart hosts of one name (docs/format.md, process).
	Host      string
	BootID    string
	MachineID string
	HostNS    string
	// Container is the container id, "" when none.
	Container string
	// PID is the process's id on its host (trace.Process.OSPID after a
	// merge that moved it, else PID); Key is its PID in the trace.
	PID uint32
	Key uint32
	// Start is the first time the process was seen, on the trace clock.
	Start int64
	// Rank, LocalRank, WorldSize and NodeRank are -1 when no launcher set
	// them.
	Rank, LocalRank, WorldSize, NodeRank int
	// Job is the job id ("" when none): SLURM_JOB_ID[.SLURM_STEP_ID],
	// TORCHELASTIC_RUN_ID, Open MPI's job id or the PMIx namespace.
	Job string
	// Launcher names the launcher whose variables gave Rank: "torchrun",
	// "openmpi", "pmi" (MPICH, Intel MPI), "pmix", "slurm", or "".
	Launcher string
	// GPUs are the UUIDs of the GPUs the process could use, as far as the
	// trace says: CUDA_VISIBLE_DEVICES when it names them by UUID, else
	// the trace's GPU list when the trace is of one host.
	GPUs []string
}

// HasRank says whether a launcher gave the process a rank.
func (id *Identity) HasRank() bool { return id.Rank >= 0 }

// Label is the short name outputs give the process: "rank 3 (node1 pid
// 13)", or "pid 13 (node1)" when it has no rank.
func (id *Identity) Label() string {
	var b strings.Builder
	if id.HasRank() {
		b.WriteString("rank ")
		b.WriteString(strconv.Itoa(id.Rank))
		b.WriteString(" (")
		if id.Host != "" {
			b.WriteString(id.Host)
			b.WriteByte(' ')
		}
		b.WriteString("pid ")
		b.WriteString(strconv.FormatUint(uint64(id.PID), 10))
		b.WriteByte(')')
		return b.String()
	}
	b.WriteString("pid ")
	b.WriteString(strconv.FormatUint(uint64(id.PID), 10))
	if id.Host != "" {
		b.WriteString(" (")
		b.WriteString(id.Host)
		b.WriteByte(')')
	}
	return b.String()
}

// launcher is one launcher's variables. An empty name is a field it does
// not set.
type launcher struct {
	name                                 string
	rank, localRank, worldSize, nodeRank string
	job                                  []string // joined by "." when several are set
}

// launchers are tried in this order for the rank; a field the first
// launcher with a rank leaves unset is taken from the next that sets it.
// torchrun comes first: under srun or mpirun, RANK is the worker's rank and
// SLURM_PROCID or OMPI_COMM_WORLD_RANK the agent's.
var launchers = [...]launcher{
	{"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", []string{"TORCHELASTIC_RUN_ID"}},
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_NODE_RANK",
		[]string{"OMPI_MCA_orte_ess_jobid"}},
	{"pmi", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "", nil},
	{"pmix", "PMIX_RANK", "PMIX_LOCAL_RANK", "PMIX_SIZE", "PMIX_NODE_RANK", []string{"PMIX_NAMESPACE"}},
	{"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NODEID", []string{"SLURM_JOB_ID", "SLURM_STEP_ID"}},
}

// IdentityVars are the environment variables Identity reads, for the
// capture to keep (the shim's list is checked against it in tests).
func IdentityVars() []string {
	var vs []string
	for _, l := range launchers {
		for _, v := range []string{l.rank, l.localRank, l.worldSize, l.nodeRank} {
			if v != "" {
				vs = append(vs, v)
			}
		}
		vs = append(vs, l.job...)
	}
	return append(vs, "CUDA_VISIBLE_DEVICES")
}

// IdentityOf returns who p was, p a process of t.
func IdentityOf(t *trace.Trace, p *trace.Process) Identity {
	id := Identity{Host: p.Host, BootID: p.BootID, MachineID: p.MachineID, HostNS: p.HostNS,
		Container: p.Container, PID: p.PID, Key: p.PID, Start: p.Start,
		Rank: -1, LocalRank: -1, WorldSize: -1, NodeRank: -1}
	if p.OSPID != 0 {
		id.PID = p.OSPID
	}
	if id.Host == "" && !strings.Contains(t.Meta.Host, ",") {
		id.Host = t.Meta.Host
	}
	env := p.Env
	first := -1
	for i, l := range launchers {
		if _, ok := intVar(env, l.rank); ok {
			first = i
			break
		}
	}
	if first >= 0 {
		id.Launcher = launchers[first].name
		// The launcher that gave the rank first, then the others.
		order := make([]int, 0, len(launchers))
		order = append(order, first)
		for i := range launchers {
			if i != first {
				order = append(order, i)
			}
		}
		for _, i := range order {
			l := &launchers[i]
			fillInt(&id.Rank, env, l.rank)
			fillInt(&id.LocalRank, env, l.localRank)
			fillInt(&id.WorldSize, env, l.worldSize)
			fillInt(&id.NodeRank, env, l.nodeRank)
			if id.Job == "" {
				id.Job = jobOf(env, l)
			}
		}
	} else {
		for i := range launchers {
			if id.Job == "" {
				id.Job = jobOf(env, &launchers[i])
			}
		}
	}
	id.GPUs = gpusOf(t, env)
	return id
}

// Identities returns the identity of every process of t, in t.Processes'
// order.
func Identities(t *trace.Trace) []Identity {
	ids := make([]Identity, len(t.Processes))
	for i := range t.Processes {
		ids[i] = IdentityOf(t, &t.Processes[i])
	}
	return ids
}

// IdentityByPID returns the identity of the process whose trace PID is pid,
// and false when t has none.
func IdentityByPID(t *trace.Trace, pid uint32) (Identity, bool) {
	for i := range t.Processes {
		if t.Processes[i].PID == pid {
			return IdentityOf(t, &t.Processes[i]), true
		}
	}
	return Identity{PID: pid, Key: pid, Rank: -1, LocalRank: -1, WorldSize: -1, NodeRank: -1}, false
}

func intVar(env map[string]string, name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	v, ok := env[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func fillInt(dst *int, env map[string]string, name string) {
	if *dst >= 0 {
		return
	}
	if n, ok := intVar(env, name); ok {
		*dst = n
	}
}

// jobOf is l's job id in env: its variables that are set, joined by ".";
// torchrun's default run id "none" is no id.
func jobOf(env map[string]string, l *launcher) string {
	var parts []string
	for _, v := range l.job {
		s := strings.TrimSpace(env[v])
		if s == "" || (v == "TORCHELASTIC_RUN_ID" && s == "none") {
			if len(parts) == 0 {
				return "" // a step id without a job id is no id
			}
			continue
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ".")
}

// gpusOf is the UUIDs of the GPUs a process could use: those
// CUDA_VISIBLE_DEVICES names by UUID, else the trace's GPUs when the trace
// is of one host (a merge's GPU list is every host's).
func gpusOf(t *trace.Trace, env map[string]string) []string {
	var out []string
	for _, d := range strings.Split(env["CUDA_VISIBLE_DEVICES"], ",") {
		if d = strings.TrimSpace(d); strings.HasPrefix(d, "GPU-") || strings.HasPrefix(d, "MIG-") {
			out = append(out, d)
		}
	}
	if out != nil || strings.Contains(t.Meta.Host, ",") {
		return out
	}
	for _, g := range t.Meta.GPUs {
		if g.UUID != "" {
			out = append(out, g.UUID)
		}
	}
	return out
}
