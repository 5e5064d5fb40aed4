#!/usr/bin/env bash
# A job of 8 ranks on two simulated hosts, recorded per rank and reported:
# each host is a UTS+PID+network namespace (unshare, as root) named node0 or
# node1 running 4 ranks under srun's variables, every rank's program
# (rank.c) on cuprof's simulated driver; rank 5's memory wrapper leaves its
# pool's release threshold at 0.
#
#   examples/job/run.sh [OUTDIR]       (needs root, gcc, go)
#
# Then:  cuprof report OUTDIR/4242            # rank 5 stands out, explained by pool-trim
#        cuprof report OUTDIR/4242 --svg steps.svg
set -euo pipefail
umask 077
out=${1:-job-example}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here/../.." && go build -o "$tmp/cuprof" ./cmd/cuprof)
cc -O2 -o "$tmp/rank" "$here/rank.c" -ldl
mkdir -p "$out"
for node in 0 1; do
	# One recorder per rank, under the launcher's variables, in the host's
	# namespaces: `srun cuprof record -o '%j/%r.cuprof' -- ./rank` there.
	unshare --uts --pid --net --fork sh -c '
		hostname "node$0"
		for local in 0 1 2 3; do
			rank=$(( $0 * 4 + local ))
			SLURM_PROCID=$rank SLURM_LOCALID=$local SLURM_NODEID=$0 SLURM_NTASKS=8 SLURM_JOB_ID=4242 SLOW_RANK=5 \
				"$1" record --sim -q -o "$2/%j/%r.cuprof" -- "$3" -n 20
		done' "$node" "$tmp/cuprof" "$out" "$tmp/rank"
done
"$tmp/cuprof" report "$out/4242"
