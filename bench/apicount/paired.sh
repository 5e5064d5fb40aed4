#!/usr/bin/env bash
# bench/apicount/paired.sh CUPROF BLOCKS OUT [PROCS] [CYCLES] [N]: on the GPU
# machine, whether recording cuCtxGetStreamPriorityRange takes its time out
# of Device.create_stream's self time, with both variants in one process.
# PROCS processes (5) each run bench/apicount/paired.py CYCLES (100) N (200)
# under `cuprof record --capture-range=profiler-api --pass-through
# cuFuncIsLoaded`, pinned (bench/lib/pin.sh): blocks of N create_stream calls
# with the call passed through (switched by cuprof.pass_through from the
# program) and recorded, alternating. BLOCKS (the bench/apicount/blocks tool,
# built beside cuprof) reads each trace into OUT/pN.jsonl, one line per block;
# then paired_stats.py OUT prints the comparison (OUT/paired.md). The traces
# are deleted once read. PAIRED_OPEN=1 adds paired.py's fourth block, open;
# PAIRED_STATS=0 leaves the statistics to a later paired_stats.py OUT (they
# take a minute or two at 3,000 cycles). PAIRED_BARE=1 adds a block with the
# API unwrapped ("bare"; CUPROF must be built with bench/apicount/bare.patch
# applied: git apply bench/apicount/bare.patch && go build ./cmd/cuprof, then
# git apply -R); PAIRED_ABLATE=1 (the same build) adds the blocks prologue and
# clocks. On a machine without a GPU cuprof records against its simulated
# driver: with PY the python of an internal/pyvenv environment, cuda.core's
# own frame runs there; PAIRED_SIM=1 runs bench/apicount/simcore.py's
# imitation instead, for a python without cuda.core (set BENCH_PIN=off where
# there are fewer than 8 CPUs). Run from the repository root.
set -u -o pipefail
CUPROF=${1:?usage: paired.sh CUPROF BLOCKS OUT [PROCS] [CYCLES] [N]}
BLOCKS=${2:?usage: paired.sh CUPROF BLOCKS OUT [PROCS] [CYCLES] [N]}
OUT=${3:?usage: paired.sh CUPROF BLOCKS OUT [PROCS] [CYCLES] [N]}
PROCS=${4:-5}
CYCLES=${5:-100}
N=${6:-200}
D=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
# paired.py imports cuprof's Python module from this checkout.
export PYTHONPATH="$D/../../python${PYTHONPATH:+:$PYTHONPATH}"
# shellcheck source=../lib/pin.sh
. "$D/../lib/pin.sh"
pin_setup
mkdir -p "$OUT" || exit 1
"$CUPROF" record -o "$OUT/warm.cuprof" -- true >"$OUT/warm.log" 2>&1 || { echo "paired.sh: cuprof record failed on 'true'" >&2; exit 1; }
rm -f "$OUT/warm.cuprof"
for ((p = 1; p <= PROCS; p++)); do
	"${PIN_TOOL[@]}" "$CUPROF" record --capture-range=profiler-api --pass-through cuFuncIsLoaded -o "$OUT/t.cuprof" -- \
		"${PIN_PROG[@]}" "$PY" "$D/paired.py" "$CYCLES" "$N" >"$OUT/p$p.log" 2>&1 ||
		echo "paired.sh: process $p: exit status $? (see $OUT/p$p.log)" >&2
	"$CUPROF" report --format json "$OUT/t.cuprof" >"$OUT/p$p.report.json" 2>>"$OUT/p$p.log"
	"$BLOCKS" "$OUT/t.cuprof" >"$OUT/p$p.jsonl" 2>>"$OUT/p$p.log" ||
		echo "paired.sh: process $p: blocks failed (see $OUT/p$p.log)" >&2
	rm -f "$OUT/t.cuprof"
done
printf '{"procs": %d, "cycles": %d, "n": %d, "open": "%s", "pin": "%s"}\n' "$PROCS" "$CYCLES" "$N" "${PAIRED_OPEN:-0}" "$PIN_DESC" >"$OUT/paired.json"
[ "${PAIRED_STATS:-1}" = 0 ] || "$PY" "$D/paired_stats.py" "$OUT" | tee "$OUT/paired.md"
