package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cuprof/cuprof/analysis"
	"github.com/cuprof/cuprof/internal/hostid"
	"github.com/cuprof/cuprof/internal/output"
	"github.com/cuprof/cuprof/trace"
)

// nameEnv is what an output-name pattern is expanded from: this process's
// environment, host name and pid.
type nameEnv struct {
	lookup func(string) (string, bool)
	host   string
	pid    int
}

func processNameEnv() nameEnv {
	return nameEnv{lookup: os.LookupEnv, host: hostid.Self().Name, pid: os.Getpid()}
}

// identity is who this recorder's program will be in its job, read from
// the launcher variables analysis.IdentityOf reads.
func (ne nameEnv) identity() analysis.Identity {
	env := map[string]string{}
	for _, v := range analysis.IdentityVars() {
		if s, ok := ne.lookup(v); ok {
			env[v] = s
		}
	}
	t := &trace.Trace{Meta: trace.Meta{Host: ne.host}, Processes: []trace.Process{{PID: uint32(ne.pid), Env: env}}}
	return analysis.IdentityOf(t, &t.Processes[0])
}

// expandOutputName expands an output-name pattern, as nsys spells them:
// %h the host name, %p this recorder's pid, %r the rank (from whichever
// launcher set it), %j the job id, %q{VAR} the environment variable VAR,
// %% a %. A value never adds a directory: "/" in it becomes "_", and a
// value of "." or ".." is refused. It reports whether name had a pattern.
func expandOutputName(name string, ne nameEnv) (string, bool, error) {
	if !strings.Contains(name, "%") {
		return name, false, nil
	}
	var id *analysis.Identity
	ident := func() *analysis.Identity {
		if id == nil {
			v := ne.identity()
			id = &v
		}
		return id
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(name) {
			return "", true, usageErrorf("-o %q: a %% at the end; write %%%% for a %%", name)
		}
		i++
		var v string
		switch name[i] {
		case '%':
			b.WriteByte('%')
			continue
		case 'h':
			v = ne.host
		case 'p':
			v = strconv.Itoa(ne.pid)
		case 'r':
			if !ident().HasRank() {
				return "", true, usageErrorf("-o %q: %%r, but no launcher set a rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID); run under torchrun, srun or mpirun, or use %%q{VAR}", name)
			}
			v = strconv.Itoa(ident().Rank)
		case 'j':
			if ident().Job == "" {
				return "", true, usageErrorf("-o %q: %%j, but no launcher set a job id (SLURM_JOB_ID, TORCHELASTIC_RUN_ID, OMPI_MCA_orte_ess_jobid or PMIX_NAMESPACE); use %%q{VAR}", name)
			}
			v = ident().Job
		case 'q':
			rest := name[i+1:]
			end := strings.IndexByte(rest, '}')
			if !strings.HasPrefix(rest, "{") || end < 2 {
				return "", true, usageErrorf("-o %q: %%q takes a variable name in braces, as %%q{SLURM_PROCID}", name)
			}
			vn := rest[1:end]
			s, ok := ne.lookup(vn)
			if !ok {
				return "", true, usageErrorf("-o %q: %%q{%s}, but %s is not set", name, vn, vn)
			}
			v = s
			i += end + 1
		default:
			return "", true, usageErrorf("-o %q: unknown pattern %%%c; use %%h, %%p, %%r, %%j, %%q{VAR} or %%%%", name, name[i])
		}
		v = strings.ReplaceAll(v, "/", "_")
		if v == "" || v == "." || v == ".." {
			return "", true, usageErrorf("-o %q: a pattern gives %q, which cannot be part of a name", name, v)
		}
		b.WriteString(v)
	}
	return b.String(), true, nil
}

// jobOutput turns -o (or the default name) into the name this recorder
// writes: patterns expanded and, when there was a pattern or a launcher
// gave a rank (the ranks of a job may share a directory), the name claimed
// at once so that no other rank's recorder takes it (output.Claim, a
// numbered name on collision, said on info). claimed says the caller must
// write over the claimed empty file and remove it when it writes nothing.
func jobOutput(out string, ne nameEnv, info func(format string, a ...any)) (name string, claimed bool, err error) {
	name, pattern, err := expandOutputName(out, ne)
	if err != nil {
		return "", false, err
	}
	if id := ne.identity(); !pattern && !id.HasRank() {
		return name, false, nil
	}
	if dir := filepath.Dir(name); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", false, fmt.Errorf("make the output directory: %w", err)
		}
	}
	got, err := output.Claim(name)
	if err != nil {
		return "", false, err
	}
	if got != name {
		info("cuprof: %s exists (another rank's trace?): writing %s instead\n", name, got)
	}
	return got, true, nil
}

// multiHostLaunchers start ranks on other hosts as well as this one.
var multiHostLaunchers = map[string]bool{"srun": true, "mpirun": true, "mpiexec": true, "prterun": true,
	"orterun": true, "mpiexec.hydra": true, "jsrun": true, "aprun": true, "flux": true, "pdsh": true}

// launcherNote says, for a program that is a launcher of ranks on many
// hosts, what a recorder wrapping it records: this host's processes only.
func launcherNote(argv []string) string {
	if len(argv) == 0 || !multiHostLaunchers[filepath.Base(argv[0])] {
		return ""
	}
	return fmt.Sprintf("cuprof: note: %s may start ranks on other hosts: this recorder records only the processes of this host "+
		"(those elsewhere, or in another PID namespace, record nothing); to record every rank, run cuprof under the launcher: "+
		"%s cuprof record -o 'job/%%j/%%r.cuprof' -- PROGRAM (docs/cli.md, Jobs)", filepath.Base(argv[0]), filepath.Base(argv[0]))
}

// recordNow is the clock of record's default names (tests fix it).
var recordNow = time.Now

// defaultRecordName is record's output name without -o:
// cuprof-PROGRAM-YYYYMMDD-HHMMSS.cuprof in the current directory.
func defaultRecordName(argv0 string, now time.Time) string {
	return fmt.Sprintf("cuprof-%s-%s.cuprof", filepath.Base(argv0), now.Format("20060102-150405"))
}

// claimDefaultName claims record's default name as jobOutput claims a
// rank's: a trace already there (another record in the same second) is
// never replaced or moved aside, this one takes NAME-1, NAME-2 ... (as nsys
// numbers report1, report2), and stderr says so.
func claimDefaultName(g *globalOptions, name string) (string, error) {
	got, err := output.Claim(name)
	if err != nil {
		return "", err
	}
	if got != name {
		fmt.Fprintf(g.info, "cuprof: %s exists: writing %s instead\n", name, got)
	}
	return got, nil
}
