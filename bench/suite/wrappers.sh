#!/usr/bin/env bash
# bench/suite/wrappers.sh OLD_CUPROF NEW_CUPROF OUT [ROUNDS]: two cuprof
# builds side by side on the suite's cheap loops (loops.c), interleaved in
# one run: each round runs every case under no tool, `OLD record` and
# `NEW record`, the three back to back in an order turned by one each round
# and case, every process pinned (bench/lib/pin.sh: the program on one set of
# CPUs, cuprof's recorder on another). Writes OUT/loops/{none,old,new}/
# CASE.rN.json (loops.c's output: the median repetition per process) and the
# logs, then OUT/wrappers.md (wrappers.py: per case the medians over rounds,
# what each build adds over no tool, and new - old per round with a bootstrap
# interval). The same binary as OLD and NEW measures the method's own spread.
#
# Environment: WRAP_CASES (the loops.c cases), WRAP_REPS (repetitions per
# process, 5), WRAP_ITERS_DIV (divides each case's default iterations, 1),
# CUPROF_BENCH_LIBCUDA (another driver: the simulated one), BENCH_PIN, PYTHON.
set -u -o pipefail
OLD=${1:?usage: wrappers.sh OLD_CUPROF NEW_CUPROF OUT [ROUNDS]}
NEW=${2:?usage: wrappers.sh OLD_CUPROF NEW_CUPROF OUT [ROUNDS]}
OUT=${3:?usage: wrappers.sh OLD_CUPROF NEW_CUPROF OUT [ROUNDS]}
ROUNDS=${4:-15}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-python3}
# shellcheck source=../lib/pin.sh
. "$HERE/../lib/pin.sh"
pin_setup
CASES=${WRAP_CASES:-ctx_get_current ctx_set_current get_error_name event_create_destroy alloc_free_async}
REPS=${WRAP_REPS:-5}
DIV=${WRAP_ITERS_DIV:-1}
case $ROUNDS in '' | *[!0-9]* | 0) echo "wrappers.sh: ROUNDS wants a number >= 1" >&2; exit 2 ;; esac
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "wrappers.sh: $b is not an executable cuprof binary" >&2; exit 2; }
done
mkdir -p "$OUT/loops/none" "$OUT/loops/old" "$OUT/loops/new" "$OUT/logs" || exit 1
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/cuprof-wrappers.XXXXXX") || exit 1
trap 'rm -rf "$BUILD"' EXIT
gcc -O2 -std=gnu11 -Wall -I"$ROOT/cudawrap/shim" -o "$BUILD/loops" "$HERE/loops.c" -ldl -lpthread || exit 1
# Each build keeps its own shim cache (one when OLD and NEW are the same
# file); the first record builds it, outside the timings.
CACHE_old=$BUILD/cache-old CACHE_new=$BUILD/cache-new
[ "$OLD" -ef "$NEW" ] && CACHE_new=$CACHE_old
for t in old new; do
	bin=$OLD cache=$CACHE_old
	[ $t = new ] && bin=$NEW cache=$CACHE_new
	CUPROF_CACHE_DIR=$cache "$bin" record -o "$BUILD/warm-$t.cuprof" -- true >"$OUT/logs/warm-$t.log" 2>&1 ||
		{ echo "wrappers.sh: $bin record failed on 'true' (see $OUT/logs/warm-$t.log)" >&2; exit 1; }
done
iters_of() { "$BUILD/loops" --list | awk -v c="$1" -v d="$DIV" '$1 == c { print int($2 / d) }'; }
run() { # tool case round
	local tool=$1 c=$2 r=$3 bin
	local -a pre=()
	if [ "$tool" != none ]; then
		bin=$OLD
		[ "$tool" = new ] && bin=$NEW
		local cache=$CACHE_old
		[ "$tool" = new ] && cache=$CACHE_new
		pre=("${PIN_TOOL[@]}" env CUPROF_CACHE_DIR="$cache" "$bin" record -o "$BUILD/t.cuprof" --)
	fi
	"${pre[@]}" "${PIN_PROG[@]}" "$BUILD/loops" --case "$c" --iters "$(iters_of "$c")" --reps "$REPS" \
		--out "$OUT/loops/$tool/$c.r$r.json" >"$OUT/logs/$tool-$c.r$r.log" 2>&1 ||
		echo "wrappers.sh: $tool $c round $r: exit status $? (see $OUT/logs/$tool-$c.r$r.log)" >&2
	rm -f "$BUILD/t.cuprof"
}
for c in $CASES; do
	"${PIN_PROG[@]}" "$BUILD/loops" --case "$c" --iters "$(iters_of "$c")" --reps 1 --out "$BUILD/warm.json" >/dev/null 2>&1
done
tools=(none old new)
for ((r = 1; r <= ROUNDS; r++)); do
	ci=0
	for c in $CASES; do
		for ((k = 0; k < 3; k++)); do
			run "${tools[$(((k + r + ci) % 3))]}" "$c" "$r"
		done
		ci=$((ci + 1))
	done
done
printf '{"old": "%s", "new": "%s", "rounds": %d, "reps": %d, "iters_div": %d, "pin": "%s", "cases": "%s"}\n' \
	"$OLD" "$NEW" "$ROUNDS" "$REPS" "$DIV" "$PIN_DESC" "$CASES" >"$OUT/wrappers.json"
"$PY" "$HERE/wrappers.py" "$OUT" | tee "$OUT/wrappers.md"
