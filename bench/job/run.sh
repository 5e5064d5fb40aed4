#!/usr/bin/env bash
# Time and peak memory of the job report (cuprof report FOLDER) over 256 and
# 1,000 traces, against the sum of one cuprof report per trace, on two
# cores (taskset -c 0,1 when there are more).
#
#   bench/job/run.sh OUTDIR [RANKS...]        (default RANKS: 256 1000)
#
# Traces: bench/job/genjob, ITERS (default 2000) iterations of the LoopTrace
# mix each (18,004 events, 14,004 calls, about 120 KB). Results go to
# OUTDIR/job.tsv: ranks, what ran, wall seconds, CPU seconds, peak RSS KiB.
# The job report runs ROUNDS times (default 3); the singles once (their sum
# is what a per-trace loop costs). Nothing needs a GPU.
set -euo pipefail
umask 077
out=${1:?usage: bench/job/run.sh OUTDIR [RANKS...]}
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(256 1000)
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time): apt-get install time" >&2; exit 1; }
iters=${ITERS:-2000}
rounds=${ROUNDS:-3}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")/../.." && pwd)
(cd "$here" && go build -o "$tmp/cuprof" ./cmd/cuprof && go build -o "$tmp/genjob" ./bench/job/genjob)
pin=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt 2 ]; then pin=(taskset -c 0,1); fi
export GOMAXPROCS=2
printf 'ranks\trun\twall_s\tcpu_s\tmax_rss_kib\n' >"$out/job.tsv"
measure() { # ranks label cmd...
	local n=$1 label=$2
	shift 2
	/usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "${pin[@]}" "$@" >/dev/null
	read -r wall usr sys rss <"$tmp/t"
	printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$label" "$wall" "$(echo "$usr + $sys" | bc)" "$rss" | tee -a "$out/job.tsv"
}
for n in "${sizes[@]}"; do
	rm -rf "$tmp/job"
	"$tmp/genjob" -ranks "$n" -iters "$iters" -o "$tmp/job"
	for r in $(seq "$rounds"); do
		measure "$n" "job-report" "$tmp/cuprof" report "$tmp/job" --format json
	done
	# The sum of single reports: one process per trace, one after another.
	cat >"$tmp/singles.sh" <<SINGLES
for f in "$tmp"/job/*.cuprof; do "$tmp/cuprof" report "\$f" --format json >/dev/null || exit 1; done
SINGLES
	measure "$n" "single-reports-sum" bash "$tmp/singles.sh"
done
