package analysis

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/trace"
)

func TestIdentityOfLaunchers(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want Identity
	}{
		{"torchrun", map[string]string{"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "GROUP_RANK": "2", "TORCHELASTIC_RUN_ID": "r7"},
			Identity{Rank: 5, LocalRank: 1, WorldSize: 8, NodeRank: 2, Job: "r7", Launcher: "torchrun"}},
		{"srun", map[string]string{"SLURM_PROCID": "9", "SLURM_LOCALID": "3", "SLURM_NTASKS": "16", "SLURM_NODEID": "2",
			"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0"},
			Identity{Rank: 9, LocalRank: 3, WorldSize: 16, NodeRank: 2, Job: "4242.0", Launcher: "slurm"}},
		{"mpirun (Open MPI)", map[string]string{"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
			"OMPI_COMM_WORLD_SIZE": "6", "OMPI_COMM_WORLD_NODE_RANK": "1", "PMIX_RANK": "4", "PMIX_NAMESPACE": "prterun-x-1@1"},
			Identity{Rank: 4, LocalRank: 0, WorldSize: 6, NodeRank: 1, Job: "prterun-x-1@1", Launcher: "openmpi"}},
		{"mpiexec (MPICH)", map[string]string{"PMI_RANK": "2", "MPI_LOCALRANKID": "2", "PMI_SIZE": "4"},
			Identity{Rank: 2, LocalRank: 2, WorldSize: 4, NodeRank: -1, Launcher: "pmi"}},
		// torchrun under srun: the worker's rank is RANK, the job Slurm's
		// when the rendezvous id is torchrun's default.
		{"torchrun under srun", map[string]string{"RANK": "13", "LOCAL_RANK": "5", "WORLD_SIZE": "16", "GROUP_RANK": "1",
			"TORCHELASTIC_RUN_ID": "none", "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "77"},
			Identity{Rank: 13, LocalRank: 5, WorldSize: 16, NodeRank: 1, Job: "77", Launcher: "torchrun"}},
		{"no launcher", map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-aa,GPU-bb"},
			Identity{Rank: -1, LocalRank: -1, WorldSize: -1, NodeRank: -1, GPUs: []string{"GPU-aa", "GPU-bb"}}},
		{"a step id alone is no job", map[string]string{"SLURM_STEP_ID": "3", "RANK": "x"},
			Identity{Rank: -1, LocalRank: -1, WorldSize: -1, NodeRank: -1}},
	}
	for _, c := range cases {
		tr := &trace.Trace{Meta: trace.Meta{Host: "node1"},
			Processes: []trace.Process{{PID: 13, Env: c.env, BootID: "b", HostNS: "uts:1"}}}
		got := IdentityOf(tr, &tr.Processes[0])
		want := c.want
		want.Host, want.BootID, want.HostNS, want.PID, want.Key = "node1", "b", "uts:1", 13, 13
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
		}
	}
}

// TestIdentityAfterMerge: a process Merge moved keeps its own pid and host.
func TestIdentityAfterMerge(t *testing.T) {
	a := &trace.Trace{Meta: trace.Meta{Host: "node0", GPUs: []trace.GPU{{UUID: "GPU-0"}}},
		Processes: []trace.Process{{PID: 13, Env: map[string]string{"SLURM_PROCID": "0"}}}}
	b := &trace.Trace{Meta: trace.Meta{Host: "node1", GPUs: []trace.GPU{{UUID: "GPU-1"}}},
		Processes: []trace.Process{{PID: 13, Env: map[string]string{"SLURM_PROCID": "1"}}}}
	m := trace.Merge(a, b)
	ids := Identities(m)
	if len(ids) != 2 {
		t.Fatalf("%d processes after the merge, want 2: %+v", len(ids), m.Processes)
	}
	for i, id := range ids {
		if id.Rank != i || id.PID != 13 || id.Host != []string{"node0", "node1"}[i] || id.GPUs != nil {
			t.Errorf("process %d: %+v", i, id)
		}
	}
	if ids[0].Key == ids[1].Key {
		t.Errorf("both ranks have trace PID %d", ids[0].Key)
	}
	if l := ids[1].Label(); l != "rank 1 (node1 pid 13)" {
		t.Errorf("label %q", l)
	}
	// Of one host, the trace's GPUs are the process's.
	if id := IdentityOf(a, &a.Processes[0]); !reflect.DeepEqual(id.GPUs, []string{"GPU-0"}) {
		t.Errorf("GPUs of a one-host trace: %v", id.GPUs)
	}
}

// TestShimKeepsIdentityVars: the shim keeps every variable IdentityOf reads.
func TestShimKeepsIdentityVars(t *testing.T) {
	src, err := os.ReadFile("../cudawrap/shim/csrc/ring.c")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(src), "kept_env[] = {")
	list, _, _ = strings.Cut(list, "};")
	if !ok {
		t.Fatal("ring.c has no kept_env list")
	}
	for _, v := range IdentityVars() {
		if !strings.Contains(list, `"`+v+`"`) {
			t.Errorf("the shim does not keep %s", v)
		}
	}
}
