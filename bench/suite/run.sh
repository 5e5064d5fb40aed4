#!/usr/bin/env bash
# cuprof's benchmark suite: cuprof side by side with its shim alone, CUPTI
# (callback and activity APIs), nsys and torch.profiler, on the GPU machine.
#
#   bench/suite/run.sh [--mode full|quick|goals] [--quick] [--rounds N]
#                      [--tools LIST] [--parts LIST] [--budget S] [--cuprof BIN]
#                      [--keep-traces] [--dry-run] RESULTS_DIR
#
# Run from anywhere; it finds the repository root from its own path. It builds
# the C harness and the two CUPTI tools with gcc in a temporary folder, runs
#   loops      driver-call loops (loops.c): per case a warm-up process, then
#              ROUNDS rounds, each running every tool once in a rotating order
#   capture    bench/capture/run.sh: the shim alone, preloaded without cuprof record
#   seeds      the seed statements with timeit (seeds.py)
#   workloads  a PyTorch training loop and a CuPy pipeline, bare and under each
#              tool, in rotating rounds like the loops
# and writes raw results (JSON) under RESULTS_DIR, then RESULTS_DIR/tables.md
# (tables.py). Tools: none, shim (cuprof's shim preloaded with the loop's own
# thread freeing chunks: the shim's cost alone), cuprof, cupti_cb, cupti_act,
# nsys (loops only, time only: this nsys cannot make reports), torchprof (torch
# statements and the torch workload). Runs past the time budget are skipped and
# say so. Modes: full (every part, 5 rounds), quick (3 rounds), goals (what the
# capture-cost goals judge, about 8 minutes on the 16-core H200 machine: the
# cheap, pair and synchronize loops under none, shim, cuprof, CUPTI callback and
# nsys, and the two workloads under none and cuprof).
#
# Environment: CUPROF (default ROOT/bin/cuprof; or --cuprof: a prebuilt binary,
# as the GPU machine has no Go), PYTHON (python3), NSYS (found under
# /opt/nvidia/nsight-compute), CUDA_INC (/usr/local/cuda/include), CUPTI_LIB
# (the folder of libcupti.so), CUPROF_BENCH_LIBCUDA (loops only: a driver
# library other than libcuda.so.1, e.g. the simulated driver). cuprof builds
# its shim into a cache under the run's temporary folder (CUPROF_CACHE_DIR), so
# the shim tool preloads the very library `cuprof record` uses. SUITE_NSYS_ROUNDS,
# SUITE_WL_ROUNDS and SUITE_LOOPS_BUDGET override the mode's nsys rounds,
# workload rounds and loops budget.
set -u -o pipefail

usage() {
	sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/pin.sh
. "$HERE/../lib/pin.sh"
ROOT=$(cd "$HERE/../.." && pwd)
CUPROF=${CUPROF:-$ROOT/bin/cuprof}
PY=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}

MODE=full
DRY=0
KEEP=0
TOOLS=
PARTS=
BUDGET=
ROUNDS=
RESULTS=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) MODE=quick ;;
	--mode) MODE=${2:?--mode wants full, quick or goals}; shift ;;
	--rounds) ROUNDS=${2:?--rounds wants a number}; shift ;;
	--cuprof) CUPROF=${2:?--cuprof wants the path of a cuprof binary}; shift ;;
	--dry-run) DRY=1 ;;
	--keep-traces) KEEP=1 ;;
	--tools) TOOLS=${2:?--tools wants a list}; shift ;;
	--parts) PARTS=${2:?--parts wants a list}; shift ;;
	--budget) BUDGET=${2:?--budget wants seconds}; shift ;;
	-h | --help) usage 0 ;;
	-*) echo "run.sh: unknown flag $1" >&2; usage ;;
	*) [ -z "$RESULTS" ] || usage; RESULTS=$1 ;;
	esac
	shift
done
[ -n "$RESULTS" ] || usage
case $ROUNDS in '' | *[!0-9]* | 0) [ -z "$ROUNDS" ] || { echo "run.sh: --rounds wants a number >= 1" >&2; exit 2; } ;; esac

# Per mode: loop repetitions per process and iteration divisor, rounds of the
# loops (nsys joins the first NSYS_ROUNDS of them, for NSYS_CASES: it takes
# seconds a process), workload seconds and rounds.
case $MODE in
quick)
	: "${BUDGET:=240}" "${ROUNDS:=3}"
	LOOP_REPS=3 LOOP_SCALE_DIV=2 CAPTURE_ITERS=100000
	SEED_TARGET=0.02 SEED_REPEAT=5
	TORCH_SECONDS=2.5 CUPY_SECONDS=2 WL_ROUNDS=2
	NSYS_CASES="ctx_set_current get_error_name event_create_destroy alloc_free_async" NSYS_ROUNDS=1
	LOOP_CASES=all WL_TOOLS= LOOPS_BUDGET=150
	: "${TOOLS:=none,shim,cuprof,cupti_cb,cupti_act,nsys,torchprof}" "${PARTS:=loops,capture,seeds,workloads}"
	;;
full)
	: "${BUDGET:=540}" "${ROUNDS:=5}"
	LOOP_REPS=5 LOOP_SCALE_DIV=1 CAPTURE_ITERS=200000
	SEED_TARGET=0.05 SEED_REPEAT=5
	TORCH_SECONDS=6 CUPY_SECONDS=4 WL_ROUNDS=3
	NSYS_CASES=all NSYS_ROUNDS=2
	LOOP_CASES=all WL_TOOLS= LOOPS_BUDGET=300
	: "${TOOLS:=none,shim,cuprof,cupti_cb,cupti_act,nsys,torchprof}" "${PARTS:=loops,capture,seeds,workloads}"
	;;
goals)
	: "${BUDGET:=450}" "${ROUNDS:=5}"
	LOOP_REPS=5 LOOP_SCALE_DIV=1 CAPTURE_ITERS=200000
	SEED_TARGET=0.05 SEED_REPEAT=5
	TORCH_SECONDS=2.5 CUPY_SECONDS=2 WL_ROUNDS=3
	NSYS_CASES="ctx_get_current ctx_set_current get_error_name event_create_destroy alloc_free_async" NSYS_ROUNDS=2
	LOOP_CASES="ctx_get_current ctx_set_current get_error_name event_create_destroy alloc_free_async ctx_synchronize alloc_free_sync_threshold0 alloc_free_sync_thresholdmax"
	WL_TOOLS=cuprof LOOPS_BUDGET=320
	: "${TOOLS:=none,shim,cuprof,cupti_cb,nsys}" "${PARTS:=loops,workloads}"
	;;
*) echo "run.sh: unknown --mode $MODE (full, quick or goals)" >&2; exit 2 ;;
esac
# A short device lease can trim a mode's nsys rounds, workload rounds and the
# loops' time budget without changing what is measured per process, ...
NSYS_ROUNDS=${SUITE_NSYS_ROUNDS:-$NSYS_ROUNDS}
WL_ROUNDS=${SUITE_WL_ROUNDS:-$WL_ROUNDS}
LOOPS_BUDGET=${SUITE_LOOPS_BUDGET:-$LOOPS_BUDGET}
# ... and pick loop cases (more rounds of fewer cases: a gap of a few ns).
LOOP_CASES=${SUITE_LOOP_CASES:-$LOOP_CASES}
# How often the shim tool's in-process drainer frees chunks (cuprof record
# polls every 5 ms; bench/capture's thread every 1 ms).
SHIM_DRAIN_US=${SHIM_DRAIN_US:-1000}

has() { case ",$2," in *",$1,"*) return 0 ;; esac; return 1; }
log() { printf '[%4ds] %s\n' "$SECONDS" "$*" >&2; }

mkdir -p "$RESULTS"/loops "$RESULTS"/seeds "$RESULTS"/workloads || exit 1
RESULTS=$(cd "$RESULTS" && pwd)
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/cuprof-suite.XXXXXX") || exit 1
NSYS_DIR=$BUILD/nsys
SHIM_RINGS=$BUILD/shim-rings
SHIM=
trap 'rm -rf "$BUILD"; case $SHIM_RINGS in /dev/shm/cuprof-suite-rings.*) rm -rf "$SHIM_RINGS" ;; esac' EXIT
# cuprof builds its shim here; the shim tool preloads that same file.
export CUPROF_CACHE_DIR=$BUILD/cache
exec 2> >(tee -a "$RESULTS/run.log" >&2)

# --- tools ---------------------------------------------------------------
find_cupti_lib() {
	local d
	for d in ${CUPTI_LIB:-} /usr/local/cuda-13.0/targets/x86_64-linux/lib /usr/local/cuda/targets/x86_64-linux/lib \
		/usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/lib64; do
		if ls "$d"/libcupti.so* >/dev/null 2>&1; then
			echo "$d"
			return 0
		fi
	done
	return 1
}
find_nsys() {
	if [ -n "${NSYS:-}" ]; then echo "$NSYS"; return 0; fi
	local f
	for f in /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys /opt/nvidia/nsight-systems/*/bin/nsys; do
		if [ -x "$f" ]; then echo "$f"; return 0; fi
	done
	command -v nsys
}

AVAILABLE=none
build() {
	log "building in $BUILD"
	if ! gcc -O2 -std=gnu11 -Wall -I"$ROOT/cudawrap/shim" -o "$BUILD/loops" "$HERE/loops.c" -ldl -lpthread; then
		log "loops.c did not build: no loops"
		PARTS=$(echo ",$PARTS," | sed 's/,loops,/,/; s/^,//; s/,$//')
	fi
	local lib cupti
	if lib=$(find_cupti_lib) && [ -f "$CUDA_INC/cupti.h" ]; then
		# Link the unversioned name when the toolkit has it, else the library file itself.
		if [ -e "$lib/libcupti.so" ]; then
			cupti=-lcupti
		else
			cupti=$(find "$lib" -maxdepth 1 -name 'libcupti.so.*' | sort | head -1)
		fi
		log "CUPTI: $lib ($cupti)"
		if gcc -O2 -std=gnu11 -Wall -shared -fPIC -I"$CUDA_INC" -o "$BUILD/libcupti_callback.so" \
			"$HERE/cupti_callback.c" -L"$lib" "$cupti" -Wl,-rpath,"$lib" -lpthread; then
			AVAILABLE=$AVAILABLE,cupti_cb
		fi
		if gcc -O2 -std=gnu11 -Wall -shared -fPIC -I"$CUDA_INC" -o "$BUILD/libcupti_activity.so" \
			"$HERE/cupti_activity.c" -L"$lib" "$cupti" -Wl,-rpath,"$lib"; then
			AVAILABLE=$AVAILABLE,cupti_act
		fi
	else
		log "no CUPTI (cupti.h under $CUDA_INC, libcupti.so in CUPTI_LIB): CUPTI tools skipped"
	fi
	if [ -x "$CUPROF" ]; then
		# The first record builds and caches the shim; keep that out of the timings.
		if "$CUPROF" record -o "$BUILD/warm.cuprof" -- true >"$BUILD/warm.log" 2>&1; then
			AVAILABLE=$AVAILABLE,cuprof
			SHIM=$(find "$CUPROF_CACHE_DIR" -name libcuprof.so -path '*/shim-*' | head -1)
			# Where cuprof record puts its rings: /dev/shm when writable
			# (internal/record ringBase), so both map the same kind of file.
			if [ -d /dev/shm ] && [ -w /dev/shm ]; then
				SHIM_RINGS=$(mktemp -d /dev/shm/cuprof-suite-rings.XXXXXX) || SHIM_RINGS=
			else
				mkdir -m 700 "$SHIM_RINGS" || SHIM_RINGS=
			fi
			if [ -n "$SHIM" ] && [ -n "$SHIM_RINGS" ]; then
				AVAILABLE=$AVAILABLE,shim
			else
				log "no libcuprof.so under $CUPROF_CACHE_DIR: shim tool skipped"
			fi
		else
			log "cuprof record failed on 'true': cuprof skipped; see $RESULTS/cuprof-warm.log"
			cp "$BUILD/warm.log" "$RESULTS/cuprof-warm.log"
		fi
	else
		log "no cuprof binary at $CUPROF: cuprof skipped"
	fi
	if NSYS=$(find_nsys) && [ -n "$NSYS" ]; then
		mkdir -p "$NSYS_DIR"
		AVAILABLE=$AVAILABLE,nsys
	fi
	if "$PY" -c 'import torch' >/dev/null 2>&1; then AVAILABLE=$AVAILABLE,torchprof; fi
	log "tools available: $AVAILABLE; asked: $TOOLS"
}

# elapsed T0 T1: seconds between two `date +%s.%N` readings.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# loop_iters CASE: the case's default iteration count, scaled for the mode.
loop_iters() {
	local n
	n=$("$BUILD/loops" --list | awk -v c="$1" '$1 == c { print $2 }')
	echo $((n / LOOP_SCALE_DIV))
}

# json_str S: S as a JSON string.
json_str() { "$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# run_one TOOL BASE LIMIT CMD...: runs CMD under TOOL with a time limit,
# stdout/stderr to BASE.stdout/.stderr, and writes BASE.run.json (tool, exit
# status, wall time; for cuprof the report and its time).
run_one() {
	local tool=$1 base=$2 limit=$3
	shift 3
	local -a pre=() envs=()
	case $tool in
	none | torchprof) ;;
	cuprof) pre=("$CUPROF" record -o "$base.cuprof" --) ;;
	shim) envs=("LD_PRELOAD=$SHIM" "CUPROF_DIR=$SHIM_RINGS" "CUPROF_BENCH_DRAIN_US=$SHIM_DRAIN_US") ;;
	cupti_cb) envs=("CUDA_INJECTION64_PATH=$BUILD/libcupti_callback.so" "CUPROF_BENCH_COUNT_FILE=$base.count.json") ;;
	cupti_act) envs=("CUDA_INJECTION64_PATH=$BUILD/libcupti_activity.so" "CUPROF_BENCH_COUNT_FILE=$base.count.json") ;;
	nsys) pre=("$NSYS" profile -t cuda --force-overwrite true -o "$NSYS_DIR/$(basename "$base")") ;;
	*) log "unknown tool $tool"; return 1 ;;
	esac
	if [ "$DRY" = 1 ]; then
		echo "${envs[*]} ${pre[*]} $*"
		return 0
	fi
	if [ "$SECONDS" -ge "$BUDGET" ]; then
		log "skip $tool $(basename "$base"): over the ${BUDGET}s budget"
		printf '{"tool": "%s", "skipped": "over the %ss budget"}\n' "$tool" "$BUDGET" >"$base.run.json"
		return 0
	fi
	# Never run past the budget by more than a short grace, whatever the run's own limit.
	local left=$((BUDGET + 30 - SECONDS))
	if [ "$left" -lt "$limit" ]; then limit=$((left > 10 ? left : 10)); fi
	local t0 t1 rc
	t0=$(date +%s.%N)
	[ ${#pre[@]} -gt 0 ] && pre=("${PIN_TOOL[@]}" "${pre[@]}")
	env "${envs[@]}" timeout -k 5 "$limit" "${pre[@]}" "${PIN_PROG[@]}" "$@" >"$base.stdout" 2>"$base.stderr"
	rc=$?
	t1=$(date +%s.%N)
	local wall report_s=null trace_bytes=null report_rc=null
	wall=$(elapsed "$t0" "$t1")
	if [ "$rc" != 0 ]; then log "$tool $(basename "$base"): exit status $rc (see $base.stderr)"; fi
	if [ "$tool" = cuprof ] && [ -f "$base.cuprof" ]; then
		trace_bytes=$(stat -c %s "$base.cuprof")
		t0=$(date +%s.%N)
		timeout -k 5 120 "$CUPROF" report --format json "$base.cuprof" >"$base.report.json" 2>"$base.report.stderr"
		report_rc=$?
		t1=$(date +%s.%N)
		report_s=$(elapsed "$t0" "$t1")
		[ "$KEEP" = 1 ] || rm -f "$base.cuprof"
	fi
	if [ "$tool" = nsys ]; then rm -rf "${NSYS_DIR:?}"/*; fi
	if [ "$tool" = shim ]; then rm -f "${SHIM_RINGS:?}"/*; fi
	printf '{"tool": "%s", "rc": %d, "wall_s": %s, "timeout_s": %d, "report_rc": %s, "report_s": %s, "trace_bytes": %s, "cmd": %s}\n' \
		"$tool" "$rc" "$wall" "$limit" "$report_rc" "$report_s" "$trace_bytes" "$(json_str "${pre[*]} $*")" >"$base.run.json"
}

want() { has "$1" "$TOOLS" && has "$1" "$AVAILABLE"; }

# --- parts ---------------------------------------------------------------

# rotate N LIST...: LIST turned left by N (mod its length).
rotate() {
	local n=$1
	shift
	local -a l=("$@")
	local k=${#l[@]} i
	[ "$k" -gt 0 ] || return 0
	for ((i = 0; i < k; i++)); do printf '%s\n' "${l[$(((i + n) % k))]}"; done
}

loop_cases() {
	local c
	for c in $("$BUILD/loops" --list | cut -f1); do
		if [ "$LOOP_CASES" = all ] || has "$c" "${LOOP_CASES// /,}"; then echo "$c"; fi
	done
}

# part_loops: a bare warm-up process per case, then ROUNDS rounds; each round
# runs every case under every tool once, the tools of a case back to back in
# an order turned by one each round (and case), so that no tool always runs
# first or right after another, and each round's tools can be paired. nsys
# joins the first NSYS_ROUNDS rounds of the NSYS_CASES cases only. Rounds not
# started by LOOPS_BUDGET seconds are skipped (the workloads keep their time).
part_loops() {
	local c ci r tool iters
	local -a tools order
	for c in $(loop_cases); do
		log "loops $c: warm-up"
		run_one none "$BUILD/warmup-$c" 90 "$BUILD/loops" --case "$c" --iters "$(loop_iters "$c")" --reps 1 \
			--out "$BUILD/warmup-$c.json"
	done
	for ((r = 1; r <= ROUNDS; r++)); do
		if [ "$DRY" = 0 ] && [ "$SECONDS" -ge "$LOOPS_BUDGET" ]; then
			log "loops: rounds $r-$ROUNDS skipped (past ${LOOPS_BUDGET}s)"
			break
		fi
		ci=0
		for c in $(loop_cases); do
			iters=$(loop_iters "$c")
			tools=()
			for tool in none shim cuprof cupti_cb cupti_act nsys; do
				want "$tool" && tools+=("$tool")
			done
			# Turned with nsys in its place, then nsys left out where it
			# does not run: the others keep their turns.
			order=()
			for tool in $(rotate $((r - 1 + ci)) "${tools[@]}"); do
				if [ "$tool" = nsys ]; then
					[ "$r" -le "$NSYS_ROUNDS" ] || continue
					[ "$NSYS_CASES" = all ] || has "$c" "${NSYS_CASES// /,}" || continue
				fi
				order+=("$tool")
			done
			log "loops round $r $c: ${order[*]}"
			for tool in "${order[@]}"; do
				mkdir -p "$RESULTS/loops/$tool"
				run_one "$tool" "$RESULTS/loops/$tool/$c.r$r" 120 \
					"$BUILD/loops" --case "$c" --iters "$iters" --reps "$LOOP_REPS" --out "$RESULTS/loops/$tool/$c.r$r.json"
			done
			ci=$((ci + 1))
		done
	done
}

# part_capture: bench/capture/run.sh, the capture helper's harness: the shim
# preloaded alone (a drain thread instead of cuprof record), real or simulated driver.
part_capture() {
	local -a lib=()
	if [ ! -f "$ROOT/bench/capture/run.sh" ]; then
		log "no bench/capture/run.sh: capture part skipped"
		return 0
	fi
	if [ -n "${CUPROF_BENCH_LIBCUDA:-}" ]; then lib=(-L "$(dirname "$CUPROF_BENCH_LIBCUDA")"); fi
	mkdir -p "$RESULTS/capture"
	log "capture: bench/capture/run.sh (shim alone)"
	run_one none "$RESULTS/capture/overhead" 120 sh "$ROOT/bench/capture/run.sh" "${lib[@]}" \
		-n "$CAPTURE_ITERS" -r 3
}

part_seeds() {
	local tool
	for tool in none cuprof torchprof; do
		want "$tool" || continue
		log "seeds under $tool"
		run_one "$tool" "$RESULTS/seeds/$tool" 240 \
			"$PY" "$HERE/seeds.py" --tool "$tool" --target "$SEED_TARGET" --repeat "$SEED_REPEAT" \
			--out "$RESULTS/seeds/$tool.json"
	done
}

# bare_steps FILE: the step count a bare workload run settled on, or nothing.
bare_steps() {
	[ -f "$1" ] && "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["steps"])' "$1" 2>/dev/null
}

# part_workload NAME SCRIPT SECONDS TOOLS: a bare run calibrates the step count
# (and warms the machine up: imports, kernel caches), then WL_ROUNDS rounds run
# bare and every tool with those steps, in an order turned each round.
part_workload() {
	local name=$1 script=$2 seconds=$3 tools=$4 tool steps r
	local -a size list order
	log "workload $name: calibrating to ${seconds}s (bare, also the warm-up)"
	run_one none "$RESULTS/workloads/$name-calibrate" 240 \
		"$PY" "$HERE/$script" --tool none --seconds "$seconds" --out "$RESULTS/workloads/$name-calibrate.json"
	steps=$(bare_steps "$RESULTS/workloads/$name-calibrate.json")
	if [ -n "$steps" ]; then
		size=(--steps "$steps")
	elif [ "$DRY" = 1 ]; then
		size=(--seconds "$seconds")
	else
		log "workload $name: the calibrating run failed (see workloads/$name-calibrate.stderr); no tool runs"
		return 0
	fi
	list=()
	for tool in none $tools; do
		if [ -n "$WL_TOOLS" ] && [ "$tool" != none ] && ! has "$tool" "$WL_TOOLS"; then continue; fi
		want "$tool" && list+=("$tool")
	done
	for ((r = 1; r <= WL_ROUNDS; r++)); do
		mapfile -t order < <(rotate $((r - 1)) "${list[@]}")
		log "workload $name round $r (${size[*]}): ${order[*]}"
		for tool in "${order[@]}"; do
			run_one "$tool" "$RESULTS/workloads/$name-$tool.r$r" 300 \
				"$PY" "$HERE/$script" --tool "$tool" "${size[@]}" --out "$RESULTS/workloads/$name-$tool.r$r.json"
		done
	done
}

envinfo() {
	log "environment"
	CUPROF="$CUPROF" NSYS="${NSYS:-}" "$PY" "$HERE/envinfo.py" --mode "$MODE" --budget "$BUDGET" \
		--tools "$TOOLS" --available "$AVAILABLE" --rounds "$ROUNDS" --workload-rounds "$WL_ROUNDS" \
		--loop-reps "$LOOP_REPS" --pin "$PIN_DESC" >"$RESULTS/env.json" 2>>"$RESULTS/run.log" ||
		log "envinfo.py failed; tables will lack the machine table"
}

pin_setup
if [ "$DRY" = 1 ]; then
	AVAILABLE=none,shim,cuprof,cupti_cb,cupti_act,nsys,torchprof
	NSYS=${NSYS:-nsys}
	SHIM=${SHIM:-libcuprof.so}
	gcc -O2 -I"$ROOT/cudawrap/shim" -o "$BUILD/loops" "$HERE/loops.c" -ldl -lpthread || exit 1
else
	build
	envinfo
fi
log "suite: $MODE, $ROUNDS rounds, budget ${BUDGET}s, parts $PARTS, results in $RESULTS"
log "pinning: $PIN_DESC (BENCH_PIN=${BENCH_PIN:-auto})"
has loops "$PARTS" && part_loops
has capture "$PARTS" && part_capture
has seeds "$PARTS" && part_seeds
if has workloads "$PARTS"; then
	part_workload torch_mlp workload_torch.py "$TORCH_SECONDS" "cuprof cupti_cb cupti_act torchprof"
	part_workload cupy_pipeline workload_cupy.py "$CUPY_SECONDS" "cuprof cupti_cb cupti_act"
fi
[ "$DRY" = 1 ] && exit 0
log "tables"
"$PY" "$HERE/tables.py" "$RESULTS" >"$RESULTS/tables.md" || log "tables.py failed"
cat "$RESULTS/tables.md"
log "done in ${SECONDS}s; raw results in $RESULTS"
