#!/usr/bin/env bash
# Fleet streaming at full size (issue 39; docs/benchmarks.md, "Fleet
# streaming"): 64 simulated ranks over 4 simulated hosts recorded with
# record --otlp-signals=metrics into agent -> 2 gateways (load-balancing
# exporter) -> backend (file exporter), counts and quantiles checked per
# rank and API against each rank's own trace; then a gateway and an agent
# down for 30 s during a run; then the bytes one rank sends per second at
# 1M calls a second (10M calls in one 10 s interval). The CI runs the same
# tests at 8 ranks over 2 hosts, 5 s outages and 1M calls.
#
# Usage: bench/fleet/run.sh [OUTDIR]   (default: a new directory under /tmp)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$(mktemp -d /tmp/cuprof-fleet-bench.XXXXXX)}"
mkdir -p "$out"
echo "results in $out"
{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(git -C "$root" rev-parse --short HEAD)"
	echo "machine: $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

cd "$root/exporters/otlp/fleettest"
echo "== 64 ranks over 4 hosts"
/usr/bin/time -v env FLEET_RANKS=64 FLEET_HOSTS=4 go test -count=1 -timeout 60m -v -run 'TestPipelineCountsAndQuantiles$' . \
	>"$out/ranks64.log" 2>&1 || { tail -40 "$out/ranks64.log"; exit 1; }
grep -E 'ranks recorded|^(--- |ok|PASS|FAIL)|Elapsed|Maximum resident' "$out/ranks64.log"

echo "== a gateway, then an agent, down for 30 s"
FLEET_OUTAGE=30 go test -count=1 -timeout 60m -v -run 'TestPipelineGatewayDown$|TestPipelineAgentDown$' . \
	>"$out/outage30.log" 2>&1 || { tail -40 "$out/outage30.log"; exit 1; }
grep -E 'collector down|reported|^(--- |ok|PASS|FAIL)' "$out/outage30.log" | grep -v '^        ' | head -20
grep -hE "otlp metrics: " "$out/outage30.log" | head -0 || true

cd "$root"
echo "== bytes per rank per second at 1M calls/s"
FLEET_BYTES_CALLS=10000000 go test -count=1 -timeout 30m -v -run 'TestBytesPerInterval$' ./exporters/otlp/ \
	>"$out/bytes.log" 2>&1 || { tail -20 "$out/bytes.log"; exit 1; }
grep -E 'bytes/s' "$out/bytes.log"

echo "== the recorder's cost per call, streaming off, metrics, spans (5 rounds, in turn)"
bash "$root/bench/fleet/cost.sh" 5 | tee "$out/cost.txt"
