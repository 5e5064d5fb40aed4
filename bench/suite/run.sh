#!/usr/bin/env bash
# cuprof's benchmark suite: cuprof side by side with CUPTI (callback and
# activity APIs), nsys and torch.profiler, on the GPU machine.
#
#   bench/suite/run.sh [--quick] [--tools LIST] [--parts LIST] [--budget S]
#                      [--keep-traces] [--dry-run] RESULTS_DIR
#
# Run from anywhere; it finds the repository root from its own path. It builds
# the C harness and the two CUPTI tools with gcc in a temporary folder, runs
#   loops      driver-call loops (loops.c), one process per case and tool
#   capture    bench/capture/run.sh: the shim alone, preloaded without cuprof record
#   seeds      the seed statements with timeit (seeds.py)
#   workloads  a PyTorch training loop and a CuPy pipeline
# and writes raw results (JSON) under RESULTS_DIR, then RESULTS_DIR/tables.md
# (tables.py). Tools: none, cuprof, cupti_cb, cupti_act, nsys (loops only,
# time only: this nsys cannot make reports), torchprof (torch statements and
# the torch workload). Parts past the time budget are skipped and say so.
#
# Environment: CUPROF (default ROOT/bin/cuprof), PYTHON (python3), NSYS (found
# under /opt/nvidia/nsight-compute), CUDA_INC (/usr/local/cuda/include),
# CUPTI_LIB (the folder of libcupti.so), CUPROF_BENCH_LIBCUDA (loops only: a
# driver library other than libcuda.so.1, e.g. the simulated driver).
set -u -o pipefail

usage() {
	sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CUPROF=${CUPROF:-$ROOT/bin/cuprof}
PY=${PYTHON:-python3}
CUDA_INC=${CUDA_INC:-/usr/local/cuda/include}

QUICK=0
DRY=0
KEEP=0
TOOLS=none,cuprof,cupti_cb,cupti_act,nsys,torchprof
PARTS=loops,capture,seeds,workloads
BUDGET=
RESULTS=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
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

if [ "$QUICK" = 1 ]; then
	MODE=quick
	: "${BUDGET:=180}"
	LOOP_REPS=5 LOOP_SCALE_DIV=2 CAPTURE_ITERS=100000
	SEED_TARGET=0.02 SEED_REPEAT=5
	TORCH_SECONDS=2.5 CUPY_SECONDS=2
	NSYS_CASES="ctx_set_current get_error_name event_create_destroy alloc_free_async"
else
	MODE=full
	: "${BUDGET:=480}"
	LOOP_REPS=7 LOOP_SCALE_DIV=1 CAPTURE_ITERS=200000
	SEED_TARGET=0.05 SEED_REPEAT=5
	TORCH_SECONDS=8 CUPY_SECONDS=6
	NSYS_CASES=all
fi

has() { case ",$2," in *",$1,"*) return 0 ;; esac; return 1; }
log() { printf '[%4ds] %s\n' "$SECONDS" "$*" >&2; }

mkdir -p "$RESULTS"/loops "$RESULTS"/seeds "$RESULTS"/workloads || exit 1
RESULTS=$(cd "$RESULTS" && pwd)
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/cuprof-suite.XXXXXX") || exit 1
NSYS_DIR=$BUILD/nsys
trap 'rm -rf "$BUILD"' EXIT
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
	if ! gcc -O2 -std=gnu11 -Wall -o "$BUILD/loops" "$HERE/loops.c" -ldl; then
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
	env "${envs[@]}" timeout -k 5 "$limit" "${pre[@]}" "$@" >"$base.stdout" 2>"$base.stderr"
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
	printf '{"tool": "%s", "rc": %d, "wall_s": %s, "timeout_s": %d, "report_rc": %s, "report_s": %s, "trace_bytes": %s, "cmd": %s}\n' \
		"$tool" "$rc" "$wall" "$limit" "$report_rc" "$report_s" "$trace_bytes" "$(json_str "${pre[*]} $*")" >"$base.run.json"
}

want() { has "$1" "$TOOLS" && has "$1" "$AVAILABLE"; }

# --- parts ---------------------------------------------------------------
part_loops() {
	local cases c tool iters
	cases=$("$BUILD/loops" --list | cut -f1)
	for c in $cases; do
		iters=$(loop_iters "$c")
		for tool in none cuprof cupti_cb cupti_act; do
			want "$tool" || continue
			mkdir -p "$RESULTS/loops/$tool"
			log "loops $c under $tool"
			run_one "$tool" "$RESULTS/loops/$tool/$c" 90 \
				"$BUILD/loops" --case "$c" --iters "$iters" --reps "$LOOP_REPS" --out "$RESULTS/loops/$tool/$c.json"
		done
	done
}

part_loops_nsys() {
	want nsys || return 0
	local c iters
	mkdir -p "$RESULTS/loops/nsys"
	for c in $("$BUILD/loops" --list | cut -f1); do
		if [ "$NSYS_CASES" != all ] && ! has "$c" "${NSYS_CASES// /,}"; then continue; fi
		iters=$(loop_iters "$c")
		log "loops $c under nsys"
		run_one nsys "$RESULTS/loops/nsys/$c" 120 \
			"$BUILD/loops" --case "$c" --iters "$iters" --reps "$LOOP_REPS" --out "$RESULTS/loops/nsys/$c.json"
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

part_workload() {
	local name=$1 script=$2 seconds=$3 tools=$4 tool steps
	local -a size
	log "workload $name bare (calibrating to ${seconds}s)"
	run_one none "$RESULTS/workloads/$name-none" 240 \
		"$PY" "$HERE/$script" --tool none --seconds "$seconds" --out "$RESULTS/workloads/$name-none.json"
	steps=$(bare_steps "$RESULTS/workloads/$name-none.json")
	if [ -n "$steps" ]; then
		size=(--steps "$steps")
	elif [ "$DRY" = 1 ]; then
		size=(--seconds "$seconds")
	else
		log "workload $name: the bare run failed (see workloads/$name-none.stderr); no tool runs"
		return 0
	fi
	for tool in $tools; do
		want "$tool" || continue
		log "workload $name under $tool (${size[*]})"
		run_one "$tool" "$RESULTS/workloads/$name-$tool" 300 \
			"$PY" "$HERE/$script" --tool "$tool" "${size[@]}" --out "$RESULTS/workloads/$name-$tool.json"
	done
}

envinfo() {
	log "environment"
	CUPROF="$CUPROF" NSYS="${NSYS:-}" "$PY" "$HERE/envinfo.py" --mode "$MODE" --budget "$BUDGET" \
		--tools "$TOOLS" --available "$AVAILABLE" >"$RESULTS/env.json" 2>>"$RESULTS/run.log" ||
		log "envinfo.py failed; tables will lack the machine table"
}

if [ "$DRY" = 1 ]; then
	AVAILABLE=none,cuprof,cupti_cb,cupti_act,nsys,torchprof
	NSYS=${NSYS:-nsys}
	gcc -O2 -o "$BUILD/loops" "$HERE/loops.c" -ldl || exit 1
else
	build
	envinfo
fi
log "suite: $MODE, budget ${BUDGET}s, parts $PARTS, results in $RESULTS"
has loops "$PARTS" && part_loops
has capture "$PARTS" && part_capture
has seeds "$PARTS" && part_seeds
if has workloads "$PARTS"; then
	part_workload torch_mlp workload_torch.py "$TORCH_SECONDS" "cuprof cupti_cb cupti_act torchprof"
	part_workload cupy_pipeline workload_cupy.py "$CUPY_SECONDS" "cuprof cupti_cb cupti_act"
fi
has loops "$PARTS" && part_loops_nsys
[ "$DRY" = 1 ] && exit 0
log "tables"
"$PY" "$HERE/tables.py" "$RESULTS" >"$RESULTS/tables.md" || log "tables.py failed"
cat "$RESULTS/tables.md"
log "done in ${SECONDS}s; raw results in $RESULTS"
