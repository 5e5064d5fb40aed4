package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/trace"
)

func TestExpandOutputName(t *testing.T) {
	env := func(kv ...string) nameEnv {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return nameEnv{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }, host: "node7", pid: 4242}
	}
	srun := env("SLURM_PROCID", "12", "SLURM_JOB_ID", "991", "SLURM_STEP_ID", "0", "X", "a/b")
	torch := env("RANK", "3", "TORCHELASTIC_RUN_ID", "run9")
	mpi := env("OMPI_COMM_WORLD_RANK", "5", "PMIX_NAMESPACE", "prterun-n-7@1")
	cases := []struct {
		in   string
		ne   nameEnv
		want string
		err  string
	}{
		{"job/%j/%r.cuprof", srun, "job/991.0/12.cuprof", ""},
		{"job/%j/%r.cuprof", torch, "job/run9/3.cuprof", ""},
		{"report.%q{OMPI_COMM_WORLD_RANK}.%h.%p", mpi, "report.5.node7.4242", ""},
		{"r%r-%j", mpi, "r5-prterun-n-7@1", ""},
		{"100%%-%q{X}", srun, "100%-a_b", ""}, // a value adds no directory
		{"plain.cuprof", srun, "plain.cuprof", ""},
		{"%r.cuprof", env(), "", "no launcher set a rank"},
		{"%j.cuprof", env("RANK", "1", "TORCHELASTIC_RUN_ID", "none"), "", "no launcher set a job id"},
		{"%q{NOPE}", srun, "", "NOPE is not set"},
		{"%q{}x", srun, "", "variable name in braces"},
		{"a%", srun, "", "at the end"},
		{"%z", srun, "", "unknown pattern %z"},
		{"%q{DOTS}", env("DOTS", ".."), "", "cannot be part of a name"},
	}
	for _, c := range cases {
		got, _, err := expandOutputName(c.in, c.ne)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one saying %q", c.in, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%q = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestClaimNeverReplaces: a name that exists is kept; the next free
// numbered name is taken, never through a planted link.
func TestClaimNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.cuprof")
	os.WriteFile(p, []byte("rank 0's trace"), 0o600)
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "r-1.cuprof"))
	got, err := output.Claim(p)
	if err != nil || got != filepath.Join(dir, "r-2.cuprof") {
		t.Fatalf("claim: %q, %v", got, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "rank 0's trace" {
		t.Errorf("the existing file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link was followed: %v", err)
	}
	if st, _ := os.Stat(got); st == nil || st.Mode().Perm() != 0o600 {
		t.Errorf("claimed file: %v", st)
	}
	if !output.Unclaim(got) || output.Unclaim(p) {
		t.Error("Unclaim removes an empty claimed file only")
	}
}

// TestSixtyFourRanksOneFolder: 64 recorders of one job, started at once
// into one folder with one name pattern (srun's variables, one rank
// each), leave 64 traces: each rank claims its name, and a rank whose
// name is taken writes a numbered one and says so.
func TestSixtyFourRanksOneFolder(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler for the simulated driver")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec := func(rank int, name string) *exec.Cmd {
		cmd := exec.Command(self, "record", "--sim", "--python", "off", "-o", filepath.Join(dir, name), "--", "true")
		cmd.Env = append(os.Environ(), "CUPROF_TEST_AS_CUPROF=1", "CUPROF_SIM_COST_SCALE=0",
			fmt.Sprint("SLURM_PROCID=", rank), "SLURM_NTASKS=64", "SLURM_JOB_ID=77")
		return cmd
	}
	// The shim is built once, before the job starts.
	if out, err := rec(0, "warm.cuprof").CombinedOutput(); err != nil {
		t.Fatalf("warm-up: %v\n%s", err, out)
	}
	os.Remove(filepath.Join(dir, "warm.cuprof"))
	const n = 64
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for i := range cmds {
		// Every rank asks for the same name: the pattern has no %r.
		cmds[i] = rec(i, "job-%j.cuprof")
		cmds[i].Stderr = &outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	moved := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("rank %d: %v\n%s", i, err, outs[i].String())
		}
		if strings.Contains(outs[i].String(), "exists (another rank's trace?)") {
			moved++
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "job-77*.cuprof"))
	if len(names) != n {
		t.Fatalf("%d traces in the folder, want %d: %v", len(names), n, names)
	}
	for _, name := range names {
		if _, err := trace.ReadFile(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if moved != n-1 {
		t.Errorf("%d ranks said they wrote a numbered name, want %d", moved, n-1)
	}
}
