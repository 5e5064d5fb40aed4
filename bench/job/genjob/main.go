// Command genjob writes the traces of a synthetic job for the job report's
// benchmark (bench/job/run.sh): RANKS traces of the LoopTrace mix of
// internal/tracetest (ITERS iterations, 9 events each), one process each,
// with srun's variables (job 7000, RANKS tasks, 64 per host on hosts
// node0, node1, ...), every rank with pid 13 as in PID namespaces.
//
//	go run ./bench/job/genjob -ranks 1000 -iters 2000 -o DIR
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cuprof/cuprof/internal/tracetest"
	"github.com/cuprof/cuprof/trace"
)

func main() {
	ranks := flag.Int("ranks", 256, "number of ranks (traces)")
	iters := flag.Int("iters", 2000, "loop iterations per trace (9 events each)")
	out := flag.String("o", "", "output folder (made 0700)")
	flag.Parse()
	if *out == "" || *ranks <= 0 || *iters <= 0 {
		fmt.Fprintln(os.Stderr, "usage: genjob -ranks N -iters N -o DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "genjob:", err)
		os.Exit(1)
	}
	base := tracetest.LoopTrace(*iters)
	for r := 0; r < *ranks; r++ {
		t := *base
		host := fmt.Sprintf("node%d", r/64)
		t.Meta.Host = host
		t.Meta.WallStart = 1_700_000_000_000_000_000
		t.Processes = []trace.Process{{PID: 1, Host: host, HostNS: "uts:" + host, Cmdline: []string{"train"},
			Env: map[string]string{"SLURM_PROCID": fmt.Sprint(r), "SLURM_LOCALID": fmt.Sprint(r % 64),
				"SLURM_NTASKS": fmt.Sprint(*ranks), "SLURM_NODEID": fmt.Sprint(r / 64), "SLURM_JOB_ID": "7000"}}}
		t.Threads = []trace.Thread{{PID: 1, TID: 1}, {PID: 1, TID: 2}}
		if err := trace.WriteFile(filepath.Join(*out, fmt.Sprintf("%04d.cuprof", r)), &t); err != nil {
			fmt.Fprintln(os.Stderr, "genjob:", err)
			os.Exit(1)
		}
	}
}
