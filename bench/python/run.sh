#!/usr/bin/env bash
# Python attribution benchmarks: cuprof's Python frames against
# bare runs, cProfile, sys.setprofile hooks and torch.profiler(with_stack=True).
#
#   bench/python/run.sh [--quick] [--selftest] [--parts LIST] [--workloads LIST] [--budget S] RESULTS_DIR
#
# Parts (default all; --parts events,statements,workloads):
#   events      events.py: cost per Python call and per Python event: bare,
#               cProfile, sys.setprofile (Python no-op), PyEval_SetProfile (C
#               no-op), sys.monitoring (C no-op, 3.12+), torch.profiler
#               (with_stack=True) in one process; cuprof record (default) and
#               cuprof record --python=stacks as processes of their own;
#               interleaved rounds
#   statements  statements.py: the seed statements (cuda.core create_stream and
#               allocate, CuPy Stream and empty, the minicore ones) with timeit,
#               bare / cuprof / stacks / torch.profiler(with_stack=True) in
#               interleaved rounds, plus each statement's frame (create_stream,
#               allocate, Stream, empty) from the cuprof traces: inclusive
#               and self time per call (frames.py on `cuprof dump`, and the
#               report's wrapper table when it has one)
#   workloads   bench/suite/workload_torch.py, workload_cupy.py and
#               workload_minicore.py: bare / cuprof / stacks / torch.profiler
#               (--workloads torch,cupy,minicore picks some)
# then summarize.py writes RESULTS_DIR/results.json and results.md (goals met
# or missed) and prints the table. Full mode fits in about 6 minutes on the
# H200 (budget 330 s: runs not started by then are skipped and marked).
# --quick: fewer rounds and shorter runs. --selftest: on a CPU machine without
# a GPU: cuprof record --sim, the bare runs on the simulated driver, only the
# minicore statements and workload (cuda.core, CuPy and torch are skipped).
#
# Environment: CUPROF (default ROOT/bin/cuprof), PYTHON (python3),
# CUPROF_STACKS_FLAG (default --python=stacks), CUPROF_RECORD_FLAGS (extra
# flags for every cuprof record), PYBENCH_DUMP=1 (also read each events and
# statements trace's dump with frames.py: frames per timed window; slow for
# big traces, on by default with --selftest), PYBENCH_ROUNDS (rounds of the
# events and statements parts: 3 full, 2 quick), PYBENCH_TORCHPROF_ROUNDS
# (how many of those rounds also run torch.profiler, spread over them: all
# by default; its processes take 5x as long), PYBENCH_WL_ROUNDS (rounds of
# each workload: bare, cuprof and stacks only again, each round paired with
# its own bare run; 1 by default), PYBENCH_GATE (on: the start gate of
# bench/lib/speedprobe.py, a measuring process that starts in the host's slow
# mode exits and is started again, PYBENCH_GATE_TRIES times at most (4); off).
# The gate's floor is the fastest probe reading of 16 short probe-only
# processes over 4 s at setup (env.json: calm_floor_ns); each run's tries are in its
# BASE.run.json.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CUPROF=${CUPROF:-$ROOT/bin/cuprof}
PY=${PYTHON:-python3}
STACKS_FLAG=${CUPROF_STACKS_FLAG:---python=stacks}
read -r -a EXTRA <<<"${CUPROF_RECORD_FLAGS:-}"
# shellcheck source=../lib/pin.sh
. "$HERE/../lib/pin.sh"

usage() {
	sed -n '5p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
QUICK=0
SELFTEST=0
PARTS=events,statements,workloads
BUDGET=
RESULTS=
ONLY_WORKLOADS=
while [ $# -gt 0 ]; do
	case $1 in
	--workloads) ONLY_WORKLOADS=${2:?--workloads wants a list}; shift ;;
	--quick) QUICK=1 ;;
	--selftest) SELFTEST=1 ;;
	--parts) PARTS=${2:?--parts wants a list}; shift ;;
	--budget) BUDGET=${2:?--budget wants seconds}; shift ;;
	-h | --help) usage 0 ;;
	-*) echo "run.sh: unknown flag $1" >&2; usage ;;
	*) [ -z "$RESULTS" ] || usage; RESULTS=$1 ;;
	esac
	shift
done
[ -n "$RESULTS" ] || usage

if [ "$SELFTEST" = 1 ]; then
	MODE=selftest
	: "${BUDGET:=240}"
	ROUNDS=2 EV_CALLS=50000 EV_CHAINS=500 EV_ROUNDS=2
	ST_TARGET=0.01 ST_REPEAT=3 ST_ONLY=minicore
	WL_SECONDS=1 WORKLOADS=minicore
	: "${PYBENCH_DUMP:=1}"
elif [ "$QUICK" = 1 ]; then
	MODE=quick
	: "${BUDGET:=180}"
	ROUNDS=2 EV_CALLS=50000 EV_CHAINS=500 EV_ROUNDS=3
	ST_TARGET=0.02 ST_REPEAT=5 ST_ONLY=
	WL_SECONDS=2 WORKLOADS=torch,cupy,minicore
else
	MODE=full
	: "${BUDGET:=330}"
	ROUNDS=3 EV_CALLS=100000 EV_CHAINS=1000 EV_ROUNDS=3
	ST_TARGET=0.03 ST_REPEAT=5 ST_ONLY=
	WL_SECONDS=3 WORKLOADS=torch,cupy,minicore
fi

ROUNDS=${PYBENCH_ROUNDS:-$ROUNDS}
TP_ROUNDS=${PYBENCH_TORCHPROF_ROUNDS:-$ROUNDS}
WL_ROUNDS=${PYBENCH_WL_ROUNDS:-1}
GATE=${PYBENCH_GATE:-on}
GATE_TRIES=${PYBENCH_GATE_TRIES:-4}
case $GATE in on | off) ;; *) echo "run.sh: PYBENCH_GATE wants on or off" >&2; exit 2 ;; esac
for v in ROUNDS TP_ROUNDS WL_ROUNDS GATE_TRIES; do
	case ${!v} in '' | *[!0-9]*) echo "run.sh: PYBENCH_$v wants a number" >&2; exit 2 ;; esac
done
[ "$ROUNDS" -ge 1 ] && [ "$WL_ROUNDS" -ge 1 ] ||
	{ echo "run.sh: PYBENCH_ROUNDS and PYBENCH_WL_ROUNDS want a number >= 1" >&2; exit 2; }
# torchprof_round R: whether round R of ROUNDS runs torch.profiler
# (TP_ROUNDS of them, spread evenly: with 20 and 2, rounds 10 and 20).
torchprof_round() { [ $(($1 * TP_ROUNDS / ROUNDS)) != $((($1 - 1) * TP_ROUNDS / ROUNDS)) ]; }

if [ -n "$ONLY_WORKLOADS" ]; then
	for w in ${ONLY_WORKLOADS//,/ }; do
		case $w in torch | cupy | minicore) ;; *) echo "run.sh: unknown workload $w (torch, cupy, minicore)" >&2; exit 2 ;; esac
	done
	WORKLOADS=$ONLY_WORKLOADS
fi
has() { case ",$2," in *",$1,"*) return 0 ;; esac; return 1; }
log() { printf '[%4ds] %s\n' "$SECONDS" "$*" >&2; }

mkdir -p "$RESULTS"/events "$RESULTS"/statements "$RESULTS"/workloads || exit 1
RESULTS=$(cd "$RESULTS" && pwd)
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/cuprof-pybench.XXXXXX") || exit 1
trap 'rm -rf "$BUILD"' EXIT
exec 2> >(tee -a "$RESULTS/run.log" >&2)

SIM=()
BARE_ENV=()
TOOLS=none
NOOP=
setup() {
	log "python bench: $MODE, budget ${BUDGET}s, parts $PARTS, results in $RESULTS"
	pin_setup
	log "pinning: $PIN_DESC (BENCH_PIN=${BENCH_PIN:-auto})"
	if [ ! -x "$CUPROF" ]; then
		log "no cuprof binary at $CUPROF (go build -o bin/cuprof ./cmd/cuprof): cuprof runs skipped"
	else
		[ "$SELFTEST" = 1 ] && SIM=(--sim)
		# The first record builds and caches the shim (and the simulated driver).
		if "$CUPROF" record "${SIM[@]}" "${EXTRA[@]}" -o "$BUILD/warm.cuprof" -- "$PY" -c pass >"$BUILD/warm.log" 2>&1; then
			TOOLS=$TOOLS,cuprof
		else
			log "cuprof record failed on python -c pass: cuprof runs skipped"; sed 's/^/    /' "$BUILD/warm.log" >&2
		fi
		if has cuprof "$TOOLS" && "$CUPROF" record "${SIM[@]}" "${EXTRA[@]}" "$STACKS_FLAG" -o "$BUILD/warm2.cuprof" -- \
			"$PY" -c pass >"$BUILD/warm2.log" 2>&1; then
			TOOLS=$TOOLS,stacks
		else
			log "cuprof record $STACKS_FLAG failed: stacks-only runs skipped"; sed 's/^/    /' "$BUILD/warm2.log" >&2
		fi
	fi
	if [ "$SELFTEST" = 1 ]; then
		# Bare runs load the simulated driver by name from the library path
		# cuprof record --sim gives its child (the simulated driver this
		# cuprof builds, not an older one in the cache).
		local libpath
		libpath=$("$CUPROF" record --sim -o "$BUILD/path.cuprof" -- sh -c 'printf %s "$LD_LIBRARY_PATH"' 2>/dev/null)
		if [ -z "$libpath" ] || [ ! -e "${libpath%%:*}/libcuda.so.1" ]; then
			log "selftest: cuprof record --sim gave no simulated driver on the library path ('$libpath')"
			exit 1
		fi
		BARE_ENV=("LD_LIBRARY_PATH=$libpath")
	fi
	if [ "$GATE" = on ] && ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
		# 3.10/3.11: cuprof's profile function slows all Python code, the
		# probe's loop too, so the gate would turn cuprof's runs away
		log "start gate: off (Python before 3.12: cuprof's profile hook slows the probe itself)"
		GATE=off
	fi
	if [ "$GATE" = on ]; then
		local floor="" r i
		# 16 processes over about 4 s: in run H1 the 8 of the first 2 s all
		# landed in a slow phase of the host (floor 44.7 ns; 29.9 five
		# seconds later), and a floor read slow lets slow processes through
		for i in $(seq 1 16); do
			[ "$i" = 1 ] || sleep 0.25
			r=$("${PIN_PROG[@]}" "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from speedprobe import probe_ns; print(probe_ns(5))' \
				"$ROOT/bench/lib" 2>/dev/null) || continue
			floor=$(awk -v a="$floor" -v b="$r" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
		done
		if [ -n "$floor" ]; then
			export BENCH_CALM_FLOOR_NS=$floor
			log "start gate: floor $floor ns an iteration (fastest of 16 probe processes); slow starts retried up to $GATE_TRIES times"
		else
			log "start gate: no probe reading; off"
			GATE=off
		fi
	fi
	if "$PY" -c 'import torch' >/dev/null 2>&1; then TOOLS=$TOOLS,torchprof_stack; fi
	if gcc -O2 -shared -fPIC -o "$BUILD/noop_hook.so" "$HERE/noop_hook.c" -ldl 2>"$BUILD/gcc.log"; then
		NOOP=$BUILD/noop_hook.so
	else
		log "noop_hook.c did not build: no C-level no-op hooks"
	fi
	log "tools: $TOOLS"
	"$PY" - "$MODE" "$BUDGET" "$TOOLS" "$CUPROF" "$STACKS_FLAG" "$PIN_DESC" "${BENCH_CALM_FLOOR_NS:-}" >"$RESULTS/env.json" <<'PYEOF'
import json, os, platform, subprocess, sys
mode, budget, tools, cuprof, stacks, pin, floor = sys.argv[1:8]
def out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"unavailable: {e}"
versions = {}
for mod in ("cuda.core", "cupy", "torch"):
    try:
        m = __import__(mod, fromlist=["_"])
        versions[mod] = getattr(m, "__version__", "?")
    except Exception as e:  # noqa: BLE001
        versions[mod] = f"absent ({type(e).__name__})"
json.dump({"mode": mode, "budget_s": int(budget), "tools": tools.split(","), "python": platform.python_version(),
           "implementation": platform.python_implementation(), "machine": platform.node(),
           "cpu": out(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]),
           "gpu": out(["sh", "-c", "nvidia-smi -L 2>/dev/null | head -1"]), "cuprof": out([cuprof, "--version"]),
           "stacks_flag": stacks, "pin": pin, "calm_floor_ns": float(floor) if floor else None,
           "versions": versions}, sys.stdout, indent=1)
PYEOF
}

# run_one TOOL BASE LIMIT CMD...: CMD under TOOL (none, cuprof, stacks,
# torchprof_stack: the command itself takes --tool), stdout/stderr to
# BASE.stdout/.stderr, BASE.run.json with exit status and wall time; the
# cuprof trace at BASE.cuprof.
run_one() {
	local tool=$1 base=$2 limit=$3
	shift 3
	local -a pre=() envs=("${BARE_ENV[@]}")
	case $tool in
	none | torchprof_stack) ;;
	cuprof) pre=("$CUPROF" record "${SIM[@]}" "${EXTRA[@]}" -o "$base.cuprof" --); envs=() ;;
	stacks) pre=("$CUPROF" record "${SIM[@]}" "${EXTRA[@]}" "$STACKS_FLAG" -o "$base.cuprof" --); envs=() ;;
	off) pre=("$CUPROF" record "${SIM[@]}" "${EXTRA[@]}" --python=off -o "$base.cuprof" --); envs=() ;;
	esac
	if [ "$SECONDS" -ge "$BUDGET" ]; then
		log "skip $tool $(basename "$base"): over the ${BUDGET}s budget"
		printf '{"tool": "%s", "skipped": "over the %ss budget"}\n' "$tool" "$BUDGET" >"$base.run.json"
		return 1
	fi
	local left=$((BUDGET + 30 - SECONDS))
	if [ "$left" -lt "$limit" ]; then limit=$((left > 10 ? left : 10)); fi
	local t0 t1 rc tries=0
	local -a last=()
	[ ${#pre[@]} -gt 0 ] && pre=("${PIN_TOOL[@]}" "${pre[@]}")
	while :; do
		tries=$((tries + 1))
		# the last try runs whatever the host's mode (its start reading is in its JSON)
		[ "$tries" -ge "$GATE_TRIES" ] && last=(BENCH_CALM_FLOOR_NS=)
		t0=$(date +%s.%N)
		env "${envs[@]}" "${last[@]}" timeout -k 5 "$limit" "${pre[@]}" "${PIN_PROG[@]}" "$@" >"$base.stdout" 2>"$base.stderr"
		rc=$?
		t1=$(date +%s.%N)
		# 75: the start gate found the host in its slow mode (speedprobe.py)
		[ "$rc" = 75 ] && [ "$GATE" = on ] && [ "$tries" -lt "$GATE_TRIES" ] || break
		log "$tool $(basename "$base"): slow start, try $((tries + 1))"
		rm -f "$base.cuprof"
	done
	[ "$rc" = 0 ] || log "$tool $(basename "$base"): exit status $rc (see $base.stderr)"
	printf '{"tool": "%s", "rc": %d, "wall_s": %s, "timeout_s": %d, "tries": %d}\n' "$tool" "$rc" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" "$limit" "$tries" >"$base.run.json"
	return "$rc"
}

# analyse_trace BASE [frames.py flags...]: report (JSON) and frames of
# BASE.cuprof, then the trace and its dump are deleted (they are large).
analyse_trace() {
	local base=$1
	shift
	[ -s "$base.cuprof" ] || { log "$(basename "$base"): no trace"; return 0; }
	timeout -k 5 120 "$CUPROF" report --format json "$base.cuprof" >"$base.report.json" 2>"$base.report.stderr" ||
		log "$(basename "$base"): cuprof report failed (see $base.report.stderr)"
	if [ $# -gt 0 ] && [ "${PYBENCH_DUMP:-0}" = 1 ]; then
		if timeout -k 5 120 "$CUPROF" dump "$base.cuprof" >"$BUILD/dump.txt" 2>"$base.dump.stderr"; then
			"$PY" "$HERE/frames.py" "$BUILD/dump.txt" "$@" --out "$base.frames.json" 2>>"$RESULTS/run.log" ||
				log "$(basename "$base"): frames.py failed"
		else
			log "$(basename "$base"): cuprof dump failed (see $base.dump.stderr)"
		fi
		rm -f "$BUILD/dump.txt"
	fi
	stat -c %s "$base.cuprof" >"$base.trace_bytes"
	rm -f "$base.cuprof"
}

part_events() {
	local r tool base
	local -a noop=()
	[ -n "$NOOP" ] && noop=(--noop-lib "$NOOP")
	for r in $(seq 1 "$ROUNDS"); do
		for tool in none cuprof stacks; do
			has "$tool" "$TOOLS" || continue
			base=$RESULTS/events/$tool-$r
			log "events round $r: $tool"
			local -a skip=()
			{ has torchprof_stack "$TOOLS" && torchprof_round "$r"; } || skip=(--skip torchprof_stack)
			if run_one "$tool" "$base" 120 "$PY" "$HERE/events.py" --tool "$tool" --calls "$EV_CALLS" \
				--chains "$EV_CHAINS" --rounds "$EV_ROUNDS" "${noop[@]}" "${skip[@]}" --out "$base.json"; then
				[ "$tool" = none ] || analyse_trace "$base" --events "$base.json"
			fi
		done
	done
}

part_statements() {
	local r tool base numbers only=()
	[ -n "$ST_ONLY" ] && only=(--only "$ST_ONLY")
	log "statements: calibrating (bare)"
	run_one none "$RESULTS/statements/calibrate" 120 "$PY" "$HERE/statements.py" --tool none \
		--target "$ST_TARGET" --repeat 1 --no-body "${only[@]}" --out "$RESULTS/statements/calibrate.json" || return 0
	numbers=$("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({r["id"]: r["number"] for r in d["results"] if "number" in r}))' "$RESULTS/statements/calibrate.json")
	for r in $(seq 1 "$ROUNDS"); do
		for tool in none cuprof stacks torchprof_stack; do
			has "$tool" "$TOOLS" || continue
			[ "$tool" = torchprof_stack ] && ! torchprof_round "$r" && continue
			base=$RESULTS/statements/$tool-$r
			log "statements round $r: $tool"
			if run_one "$tool" "$base" 150 "$PY" "$HERE/statements.py" --tool "$tool" --numbers "$numbers" \
				--repeat "$ST_REPEAT" "${only[@]}" --out "$base.json"; then
				case $tool in cuprof | stacks) analyse_trace "$base" --statements "$base.json" ;; esac
			fi
		done
	done
}

part_workload() {
	local name=$1 script=$2 tool steps base
	base=$RESULTS/workloads/$name-none
	log "workload $name: bare, calibrating to ${WL_SECONDS}s"
	run_one none "$base" 200 "$PY" "$script" --tool none --seconds "$WL_SECONDS" --out "$base.json" || return 0
	steps=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["steps"])' "$base.json") || return 0
	# off: cuprof record --python=off, the driver calls' share of the cost.
	for tool in cuprof stacks off torchprof_stack; do
		if [ "$tool" = off ]; then has cuprof "$TOOLS" || continue; else has "$tool" "$TOOLS" || continue; fi
		base=$RESULTS/workloads/$name-$tool
		log "workload $name: $tool ($steps steps)"
		if run_one "$tool" "$base" 240 "$PY" "$script" --tool "$tool" --steps "$steps" --out "$base.json"; then
			case $tool in cuprof | stacks | off) analyse_trace "$base" ;; esac
		fi
	done
	# Later rounds: bare, cuprof and stacks only again (NAME-TOOL.rR), each
	# judged against its own round's bare run.
	local r
	for r in $(seq 2 "$WL_ROUNDS"); do
		for tool in none cuprof stacks; do
			has "$tool" "$TOOLS" || continue
			base=$RESULTS/workloads/$name-$tool.r$r
			log "workload $name round $r: $tool ($steps steps)"
			if run_one "$tool" "$base" 240 "$PY" "$script" --tool "$tool" --steps "$steps" --out "$base.json"; then
				[ "$tool" = none ] || analyse_trace "$base"
			fi
		done
	done
	# A second bare run, last, to see the drift between runs.
	base=$RESULTS/workloads/$name-none2
	log "workload $name: bare again ($steps steps)"
	run_one none "$base" 200 "$PY" "$script" --tool none --steps "$steps" --out "$base.json" || true
}

part_workloads() {
	local w
	for w in ${WORKLOADS//,/ }; do
		case $w in
		torch) if "$PY" -c 'import torch' 2>/dev/null; then
			part_workload torch_mlp "$ROOT/bench/suite/workload_torch.py"
		else
			log "workload torch_mlp: no torch, skipped"
		fi ;;
		cupy) if "$PY" -c 'import cupy' 2>/dev/null; then
			part_workload cupy_pipeline "$ROOT/bench/suite/workload_cupy.py"
		else
			log "workload cupy_pipeline: no cupy, skipped"
		fi ;;
		minicore) part_workload minicore "$HERE/workload_minicore.py" ;;
		esac
	done
}

setup
has events "$PARTS" && part_events
has statements "$PARTS" && part_statements
has workloads "$PARTS" && part_workloads
log "summary"
"$PY" "$HERE/summarize.py" "$RESULTS" || log "summarize.py failed"
[ -f "$RESULTS/results.md" ] && cat "$RESULTS/results.md"
log "done in ${SECONDS}s; results in $RESULTS"
