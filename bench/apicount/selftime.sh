#!/usr/bin/env bash
# bench/apicount/selftime.sh CUPROF OUT [ROUNDS]: on the GPU machine, whether
# recording a driver call takes its time out of its Python frame's self time.
# One cuprof binary records cuda.core's dev.create_stream() x SELFTIME_N
# (3000, timeit: programs.py) three ways, each round running all three back
# to back in an order turned by one each round, every process pinned
# (bench/lib/pin.sh: the program on one set of CPUs, cuprof record on another):
#   pass  --pass-through SELFTIME_API (cuCtxGetStreamPriorityRange): the call
#         goes to the driver unrecorded, so its time is the frame's own
#   rec   --pass-through SELFTIME_CONTROL (cuFuncIsLoaded, which
#         create_stream never calls): the same path through the shim's gate,
#         the call recorded as a driver call under the frame
#   rec2  rec again: the method's own difference between two equal runs
# Each run's `cuprof report --format json` is OUT/VARIANT.rN.json (the trace
# is deleted), its log OUT/VARIANT.rN.log; then selftime.py OUT prints the
# comparison (OUT/selftime.md). Run from the repository root.
set -u -o pipefail
CUPROF=${1:?usage: selftime.sh CUPROF OUT [ROUNDS]}
OUT=${2:?usage: selftime.sh CUPROF OUT [ROUNDS]}
ROUNDS=${3:-30}
D=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
N=${SELFTIME_N:-3000}
API=${SELFTIME_API:-cuCtxGetStreamPriorityRange}
CONTROL=${SELFTIME_CONTROL:-cuFuncIsLoaded}
# shellcheck source=../lib/pin.sh
. "$D/../lib/pin.sh"
pin_setup
case $ROUNDS in '' | *[!0-9]* | 0) echo "selftime.sh: ROUNDS wants a number >= 1" >&2; exit 2 ;; esac
mkdir -p "$OUT" || exit 1
"$CUPROF" record -o "$OUT/warm.cuprof" -- true >"$OUT/warm.log" 2>&1 || { echo "selftime.sh: cuprof record failed on 'true'" >&2; exit 1; }
rm -f "$OUT/warm.cuprof"
run() { # variant round
	local v=$1 r=$2 pt=$CONTROL
	[ "$v" = pass ] && pt=$API
	"${PIN_TOOL[@]}" "$CUPROF" record --pass-through "$pt" -o "$OUT/t.cuprof" -- \
		"${PIN_PROG[@]}" "$PY" "$D/programs.py" create_stream "$N" >"$OUT/$v.r$r.log" 2>&1 ||
		echo "selftime.sh: $v round $r: exit status $? (see $OUT/$v.r$r.log)" >&2
	"$CUPROF" report --format json "$OUT/t.cuprof" >"$OUT/$v.r$r.json" 2>>"$OUT/$v.r$r.log"
	rm -f "$OUT/t.cuprof"
}
variants=(pass rec rec2)
for ((r = 1; r <= ROUNDS; r++)); do
	for ((k = 0; k < 3; k++)); do
		run "${variants[$(((k + r) % 3))]}" "$r"
	done
done
printf '{"rounds": %d, "n": %d, "api": "%s", "control": "%s", "pin": "%s"}\n' "$ROUNDS" "$N" "$API" "$CONTROL" "$PIN_DESC" >"$OUT/selftime.json"
"$PY" "$D/selftime.py" "$OUT" --api "$API" | tee "$OUT/selftime.md"
