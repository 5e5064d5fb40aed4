#!/usr/bin/env bash
# bench/suite/wrapinstr.sh OLD_CUPROF NEW_CUPROF OUT: the instructions each
# build's shim adds per driver call, counted (not timed) on the CPU machine:
# loops.c's cases under valgrind's callgrind on the simulated driver with
# its costs off (CUPROF_SIM_COST_SCALE=0), each build's shim preloaded with
# a ring big enough that it never fills (no recorder: nothing else runs). A
# wrapper's instructions per call are its inclusive count less the
# simulated driver function's it calls, over the calls made (the loop's
# iterations and warm-up). Deterministic: the same builds give the same
# counts. Writes OUT/BUILD-CASE.callgrind and .json, then OUT/wrapinstr.md
# (wrapinstr.py). Environment: WRAP_CASES (loops.c cases), WRAPINSTR_ITERS
# (20000).
set -u -o pipefail
OLD=${1:?usage: wrapinstr.sh OLD_CUPROF NEW_CUPROF OUT}
NEW=${2:?usage: wrapinstr.sh OLD_CUPROF NEW_CUPROF OUT}
OUT=${3:?usage: wrapinstr.sh OLD_CUPROF NEW_CUPROF OUT}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-python3}
CASES=${WRAP_CASES:-ctx_get_current ctx_set_current get_error_name event_create_destroy alloc_free_async}
ITERS=${WRAPINSTR_ITERS:-20000}
command -v valgrind >/dev/null || { echo "wrapinstr.sh: no valgrind" >&2; exit 2; }
mkdir -p "$OUT" || exit 1
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/cuprof-wrapinstr.XXXXXX") || exit 1
trap 'rm -rf "$BUILD"' EXIT
gcc -O2 -std=gnu11 -Wall -I"$ROOT/cudawrap/shim" -o "$BUILD/loops" "$HERE/loops.c" -ldl -lpthread || exit 1
# Each build its own cache (one when OLD and NEW are the same file).
CACHE_old=$BUILD/cache-old CACHE_new=$BUILD/cache-new
[ "$OLD" -ef "$NEW" ] && CACHE_new=$CACHE_old
for t in old new; do
	bin=$OLD cache=$CACHE_old
	[ $t = new ] && bin=$NEW cache=$CACHE_new
	CUPROF_CACHE_DIR=$cache "$bin" record --sim -o "$BUILD/warm.cuprof" -- true >"$OUT/warm-$t.log" 2>&1 ||
		{ echo "wrapinstr.sh: $bin record --sim failed (see $OUT/warm-$t.log)" >&2; exit 1; }
done
shim_old=$(find "$CACHE_old" -path '*/shim-*/libcuprof.so' | head -1)
shim_new=$(find "$CACHE_new" -path '*/shim-*/libcuprof.so' | head -1)
sim=$(find "$CACHE_new" -path '*/sim-*/libcuda.so.1' | head -1) # one driver for both
[ -n "$shim_old" ] && [ -n "$shim_new" ] && [ -n "$sim" ] || { echo "wrapinstr.sh: no shim or simulated driver built" >&2; exit 1; }
for c in $CASES; do
	for t in old new; do
		shim=$shim_old
		[ $t = new ] && shim=$shim_new
		rm -rf "$BUILD/ring" && mkdir -m 700 "$BUILD/ring"
		CUPROF_SIM_COST_SCALE=0 CUPROF_BENCH_LIBCUDA=$sim CUPROF_DIR=$BUILD/ring CUPROF_BUFFER=268435456 LD_PRELOAD=$shim \
			valgrind --tool=callgrind --callgrind-out-file="$OUT/$t-$c.callgrind" "$BUILD/loops" --case "$c" \
			--iters "$ITERS" --reps 1 --out "$OUT/$t-$c.json" >"$OUT/$t-$c.log" 2>&1 ||
			{ echo "wrapinstr.sh: $t $c failed (see $OUT/$t-$c.log)" >&2; exit 1; }
		callgrind_annotate --inclusive=yes "$OUT/$t-$c.callgrind" >"$OUT/$t-$c.annotate" 2>/dev/null
	done
done
"$PY" "$HERE/wrapinstr.py" "$OUT" | tee "$OUT/wrapinstr.md"
