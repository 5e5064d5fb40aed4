#!/usr/bin/env bash
# The recorder's added cost per call with streaming on, next to streaming
# off: BenchmarkRecorderObserve's sub-benchmarks (none: the drain's sort
# only; metrics: the aggregator; spans: the per-call span stream) run in
# turn, ROUNDS rounds (default 5), so that drift hits all three alike; then
# the medians per sub-benchmark.
# Usage: bench/fleet/cost.sh [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rounds="${1:-5}"
cd "$root"
go test -c -o /tmp/cuprof-otlp-bench.test ./exporters/otlp/
tmp=$(mktemp)
trap 'rm -f "$tmp" /tmp/cuprof-otlp-bench.test' EXIT
for r in $(seq "$rounds"); do
	for s in none metrics spans; do
		(cd exporters/otlp && /tmp/cuprof-otlp-bench.test -test.run '^$' -test.bench "BenchmarkRecorderObserve/$s\$" -test.benchtime 2000x -test.count 1) |
			awk -v r="$r" '/^BenchmarkRecorderObserve/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/call") print r, $1, $i }' | tee -a "$tmp"
	done
done
echo "median ns per call over $rounds rounds:"
for s in none metrics spans; do
	grep "/$s" "$tmp" | awk '{print $3}' | sort -n | awk -v s="$s" '{v[NR]=$1} END {printf "  %-8s %s\n", s, v[int((NR+1)/2)]}'
done
