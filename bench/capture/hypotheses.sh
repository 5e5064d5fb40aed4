#!/usr/bin/env bash
# Where the time between cuprof's shim alone and `cuprof record` goes: one
# variant per hypothesis, run on the cheap driver-call loops of the suite
# (bench/suite/loops.c) in rotating rounds like the suite, each process
# counted with `perf stat` where the machine allows it; then a table.
#
#   bench/capture/hypotheses.sh [--cuprof BIN] [--rounds N] [--cases LIST] [--variants LIST]
#                               [--iters N] [--sim] [--base-shim SO] OUTDIR
#
# On the GPU machine (real driver; CUPROF_BENCH_LIBCUDA=PATH for another one).
# With --sim, on any machine: every variant runs on cuprof's simulated driver
# (cuprof record --sim, and the loop opens the same library), whose cheap
# calls cost a few ns, so what a tool adds stands out. --base-shim SO adds
# the variant shim-base: the shim alone with another build of the shim (an
# older commit's, to bisect), measured in the same rotation.
# Writes OUTDIR/VARIANT/CASE.rN.json (loops.c output), .perf (perf stat -x,),
# .stderr, OUTDIR/env.txt and OUTDIR/hypotheses.md (hypotheses.py), printed at
# the end. About 3-4 minutes with the defaults (14 variants x 3 cases x 5
# rounds, 0.7-1.2 s a process).
#
# Variants (see hypotheses.py for what each tests):
#   bare               no tool
#   shim               cuprof's shim preloaded, rings on /dev/shm, a thread of the loop frees chunks every 1 ms
#   shim-base          the shim alone as `shim`, with the library of --base-shim
#   shim-end           the shim alone with CUPROF_TIMING=end: one clock read per call (the clock's share)
#   shim-tmp           the same with the rings on the temporary folder's file system (bench/capture's old place)
#   shim-5ms           the thread frees chunks every 5 ms (cuprof record's slow poll): more chunks in flight
#   shim-read          every 5 ms, copying each full chunk's records out first, as the recorder does
#   shim-faults        no thread, a 256 MiB ring: records past the 64 MiB faulted in at creation fault pages in
#   shim-prefaulted    the same with a shim built to fault the whole ring in at creation
#   bare-pinned        the loop pinned to the last CPU
#   cuprof             cuprof record
#   cuprof-drop        cuprof record --when-full drop
#   cuprof-nonvtx      cuprof record with NVTX_INJECTION64_PATH set elsewhere (no NVTX injection)
#   cuprof-poll1ms     cuprof record --poll-interval 1ms
#   cuprof-pinned      the loop pinned to the last CPU, the recorder to the others
#   cuprof-bindnow     cuprof record with LD_BIND_NOW=1
#   cuprof-end         cuprof record --timing end
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CUPROF=${CUPROF:-$ROOT/bin/cuprof}
PY=${PYTHON:-python3}
ROUNDS=5
CASES="ctx_get_current ctx_set_current get_error_name"
VARIANTS="bare shim shim-tmp shim-5ms shim-read shim-faults shim-prefaulted bare-pinned cuprof cuprof-drop cuprof-nonvtx cuprof-poll1ms cuprof-pinned cuprof-bindnow"
OUT= SIM= BASE_SHIM= ITERS=()
while [ $# -gt 0 ]; do
	case $1 in
	--cuprof) CUPROF=${2:?}; shift ;;
	--rounds) ROUNDS=${2:?}; shift ;;
	--cases) CASES=${2:?}; shift ;;
	--variants) VARIANTS=${2:?}; shift ;;
	--iters) ITERS=(--iters "${2:?}"); shift ;;
	--sim) SIM=--sim ;;
	--base-shim) BASE_SHIM=${2:?}; shift ;;
	-h | --help) sed -n '7p' "$0" | sed 's/^# *//'; exit 0 ;;
	-*) echo "hypotheses.sh: unknown flag $1" >&2; exit 2 ;;
	*) OUT=$1 ;;
	esac
	shift
done
[ -n "$OUT" ] || { sed -n '7p' "$0" | sed 's/^# *//' >&2; exit 2; }
[ -x "$CUPROF" ] || { echo "hypotheses.sh: no cuprof binary at $CUPROF (--cuprof PATH)" >&2; exit 2; }
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d) || exit 1
SHM=$(mktemp -d /dev/shm/cuprof-hyp.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$WORK" "$SHM"' EXIT
export CUPROF_CACHE_DIR=$WORK/cache
log() { printf '[%4ds] %s\n' "$SECONDS" "$*" | tee -a "$OUT/run.log" >&2; }

gcc -O2 -std=gnu11 -Wall -I"$ROOT/cudawrap/shim" -o "$WORK/loops" "$ROOT/bench/suite/loops.c" -ldl -lpthread || exit 1
"$CUPROF" record $SIM -o "$WORK/warm.cuprof" -- true >"$WORK/warm.log" 2>&1
SHIM=$(find "$CUPROF_CACHE_DIR" -name libcuprof.so -path '*/shim-*' | head -1)
[ -n "$SHIM" ] || { cat "$WORK/warm.log" >&2; echo "hypotheses.sh: cuprof built no shim" >&2; exit 1; }
# The shim of the same sources with the whole ring faulted in at creation.
(cd "$ROOT/cudawrap/shim" && gcc -I. -O2 -g -fPIC -shared -fvisibility=hidden -fno-strict-aliasing \
	-DCUPROF_PREFAULT_MAX='(1ull << 40)' -Wl,--version-script=shim.map -Wl,-z,now \
	-o "$WORK/libcuprof-prefaulted.so" $(ls csrc/*.c | grep -v /calib.c) -ldl -lpthread) || exit 1
if [ -n "$SIM" ]; then
	CUPROF_BENCH_LIBCUDA=$(find "$CUPROF_CACHE_DIR" -name libcuda.so.1 -path '*/sim-*' | head -1)
	[ -n "$CUPROF_BENCH_LIBCUDA" ] || { cat "$WORK/warm.log" >&2; echo "hypotheses.sh: cuprof built no simulated driver" >&2; exit 1; }
	export CUPROF_BENCH_LIBCUDA
fi
case " $VARIANTS " in
*" shim-base "*) [ -r "$BASE_SHIM" ] || { echo "hypotheses.sh: variant shim-base needs --base-shim SO" >&2; exit 2; } ;;
esac
NCPU=$(nproc)
LAST=$((NCPU - 1))
OTHERS=0-$((LAST > 0 ? LAST - 1 : 0))

# perf stat: software counters always, hardware ones where supported.
PERF=()
if command -v perf >/dev/null 2>&1; then
	ev=page-faults,context-switches,cpu-migrations
	if perf stat -x, -e instructions,cycles,cache-misses true 2>&1 >/dev/null | grep -qv 'not supported'; then
		ev=$ev,instructions,cycles,cache-misses
	fi
	if perf stat -x, -e "$ev" true >/dev/null 2>&1; then PERF=(perf stat -x, -e "$ev"); fi
fi
{
	echo "date: $(date -u '+%F %T UTC')"
	echo "host: $(hostname), $NCPU CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "kernel: $(uname -r)"
	echo "cuprof: $CUPROF; shim: $SHIM${BASE_SHIM:+; base shim: $BASE_SHIM}"
	echo "driver: ${CUPROF_BENCH_LIBCUDA:-libcuda.so.1}${SIM:+ (simulated)}"
	echo "perf: ${PERF[*]:-none}"
	echo "rounds: $ROUNDS; cases: $CASES"
} >"$OUT/env.txt"
log "perf: ${PERF[*]:-not available}"

# run_variant VARIANT CASE ROUND
run_variant() {
	local v=$1 c=$2 r=$3 base
	base=$OUT/$v/$c.r$r
	mkdir -p "$OUT/$v"
	local -a envs=() pre=() pin=() perf=()
	if [ ${#PERF[@]} -gt 0 ]; then perf=("${PERF[@]}" -o "$base.perf" --); fi
	local shimenv=("LD_PRELOAD=$SHIM" "CUPROF_DIR=$SHM")
	case $v in
	bare) ;;
	bare-pinned) pin=(taskset -c "$LAST") ;;
	shim) envs=("${shimenv[@]}" CUPROF_BENCH_DRAIN_US=1000) ;;
	shim-base) envs=("LD_PRELOAD=$BASE_SHIM" "CUPROF_DIR=$SHM" CUPROF_BENCH_DRAIN_US=1000) ;;
	shim-end) envs=("${shimenv[@]}" CUPROF_BENCH_DRAIN_US=1000 CUPROF_TIMING=end) ;;
	shim-tmp) mkdir -p -m 700 "$WORK/rings"; envs=("LD_PRELOAD=$SHIM" "CUPROF_DIR=$WORK/rings" CUPROF_BENCH_DRAIN_US=1000) ;;
	shim-5ms) envs=("${shimenv[@]}" CUPROF_BENCH_DRAIN_US=5000) ;;
	shim-read) envs=("${shimenv[@]}" CUPROF_BENCH_DRAIN_US=5000 CUPROF_BENCH_DRAIN_READ=1) ;;
	shim-faults) envs=("${shimenv[@]}" CUPROF_BUFFER=268435456) ;;
	shim-prefaulted) envs=("LD_PRELOAD=$WORK/libcuprof-prefaulted.so" "CUPROF_DIR=$SHM" CUPROF_BUFFER=268435456) ;;
	cuprof) pre=("$CUPROF" record $SIM -o "$WORK/t.cuprof" --) ;;
	cuprof-drop) pre=("$CUPROF" record $SIM --when-full drop -o "$WORK/t.cuprof" --) ;;
	cuprof-nonvtx) envs=(NVTX_INJECTION64_PATH=/nonexistent/libnone.so); pre=("$CUPROF" record $SIM -o "$WORK/t.cuprof" --) ;;
	cuprof-poll1ms) pre=("$CUPROF" record $SIM --poll-interval 1ms -o "$WORK/t.cuprof" --) ;;
	cuprof-pinned) pre=(taskset -c "$OTHERS" "$CUPROF" record $SIM -o "$WORK/t.cuprof" --); pin=(taskset -c "$LAST") ;;
	cuprof-bindnow) envs=(LD_BIND_NOW=1); pre=("$CUPROF" record $SIM -o "$WORK/t.cuprof" --) ;;
	cuprof-end) pre=("$CUPROF" record $SIM --timing end -o "$WORK/t.cuprof" --) ;;
	*) log "unknown variant $v"; return 1 ;;
	esac
	env "${envs[@]}" timeout -k 5 120 "${pre[@]}" "${pin[@]}" "${perf[@]}" "$WORK/loops" --case "$c" --reps 5 "${ITERS[@]}" \
		--out "$base.json" >"$base.stdout" 2>"$base.stderr" || log "$v $c round $r: exit status $? (see $base.stderr)"
	rm -f "$WORK/t.cuprof" "$SHM"/* "$WORK/rings"/* 2>/dev/null
}

read -r -a vs <<<"$VARIANTS"
for c in $CASES; do
	log "$c: warm-up"
	"$WORK/loops" --case "$c" --reps 1 --out /dev/null >/dev/null 2>&1
done
for ((r = 1; r <= ROUNDS; r++)); do
	ci=0
	for c in $CASES; do
		k=${#vs[@]}
		order=()
		for ((i = 0; i < k; i++)); do order+=("${vs[$(((i + r - 1 + ci) % k))]}"); done
		log "round $r $c"
		for v in "${order[@]}"; do run_variant "$v" "$c" "$r"; done
		ci=$((ci + 1))
	done
done
"$PY" "$HERE/hypotheses.py" "$OUT" >"$OUT/hypotheses.md" || log "hypotheses.py failed"
cat "$OUT/hypotheses.md"
log "done in ${SECONDS}s; results in $OUT"
