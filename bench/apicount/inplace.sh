#!/usr/bin/env bash
# bench/apicount/inplace.sh OLD NEW BLOCKS OUT [ROUNDS] [PROCS] [CYCLES] [NEW2]: on the
# GPU machine, the in-place measurement of the wrapper's cost (the shim's
# inplace.c) against the cuprof before it, in one run.
#
# 1. Cheap loops (bench/suite/loops.c: cuCtxGetCurrent, cuCtxSetCurrent,
#    cuGetErrorName), ROUNDS (9) rounds, each running every case under no
#    tool, OLD and NEW (`cuprof record`), and NEW2 when given (tool new2: a
#    variant, another sampling rate say), the order turned by one each
#    round: what the sampling costs every call, side by side. OUT/loops.jsonl, one
#    line per run; each run's trace meta (the calibration, inplace_ns) in
#    OUT/meta.txt.
# 2. paired.sh NEW BLOCKS OUT/paired PROCS (10) CYCLES (300) 200 with the
#    statistics left to paired_stats.py (PAIRED_STATS=0): create_stream's
#    self time with cuCtxGetStreamPriorityRange passed through and recorded,
#    in blocks of one process, whose blocks carry the self time as cuprof
#    reports it (the in-place correction in), with the calibrator's loop
#    alone and raw. PROCS 0 leaves it out.
# INPLACE_RECORD_ARGS (none) go to every `cuprof record` of the loops:
# "--pass-through cuFuncIsLoaded" runs them through the capture gate's
# CUPROF_GATE_SOME path, as paired.sh's recordings are.
# Pinned as paired.sh pins (bench/lib/pin.sh). Run from the repository root.
set -u -o pipefail
OLD=${1:?usage: inplace.sh OLD NEW BLOCKS OUT [ROUNDS] [PROCS] [CYCLES]}
NEW=${2:?usage: inplace.sh OLD NEW BLOCKS OUT [ROUNDS] [PROCS] [CYCLES]}
BLOCKS=${3:?usage: inplace.sh OLD NEW BLOCKS OUT [ROUNDS] [PROCS] [CYCLES]}
OUT=${4:?usage: inplace.sh OLD NEW BLOCKS OUT [ROUNDS] [PROCS] [CYCLES]}
ROUNDS=${5:-9}
PROCS=${6:-10}
CYCLES=${7:-300}
NEW2=${8:-}
D=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/pin.sh
. "$D/../lib/pin.sh"
pin_setup
mkdir -p "$OUT" || exit 1
gcc -O2 -std=gnu11 -Wall -I"$D/../../cudawrap/shim" -o "$OUT/loops" "$D/../suite/loops.c" -ldl -lpthread || exit 1
cases="ctx_get_current ctx_set_current get_error_name"
tools=(none old new)
[ -n "$NEW2" ] && tools+=(new2)
nt=${#tools[@]}
for c in $cases; do "$OUT/loops" --case "$c" --reps 1 >/dev/null 2>&1; done # warm-up
for ((r = 0; r < ROUNDS; r++)); do
	for c in $cases; do
		for ((k = 0; k < nt; k++)); do
			tool=${tools[$(((r + k) % nt))]}
			o="$OUT/run.json"
			case $tool in
			none) "${PIN_PROG[@]}" "$OUT/loops" --case "$c" --reps 5 --out "$o" >/dev/null 2>>"$OUT/loops.log" ;;
			old | new | new2)
				bin=$OLD
				[ "$tool" = new ] && bin=$NEW
				[ "$tool" = new2 ] && bin=$NEW2
				"${PIN_TOOL[@]}" "$bin" record -q ${INPLACE_RECORD_ARGS:-} -o "$OUT/t.cuprof" -- "${PIN_PROG[@]}" "$OUT/loops" --case "$c" --reps 5 --out "$o" \
					>/dev/null 2>>"$OUT/loops.log"
				printf '%s %s %s ' "$r" "$c" "$tool" >>"$OUT/meta.txt"
				"$NEW" dump "$OUT/t.cuprof" 2>/dev/null | sed -n 2p | grep -o '[a-z_]*_ns=[^ ]*\|inplace_calls=[^ ]*' | tr '\n' ' ' >>"$OUT/meta.txt"
				echo >>"$OUT/meta.txt"
				rm -f "$OUT/t.cuprof"
				;;
			esac
			printf '{"round": %d, "case": "%s", "tool": "%s", "result": %s}\n' "$r" "$c" "$tool" "$(cat "$o" 2>/dev/null || echo null)" >>"$OUT/loops.jsonl"
			rm -f "$o"
		done
	done
done
[ "$PROCS" -gt 0 ] || exit 0
PAIRED_STATS=0 bash "$D/paired.sh" "$NEW" "$BLOCKS" "$OUT/paired" "$PROCS" "$CYCLES" 200
