#!/usr/bin/env bash
# bench/apicount/run.sh NEW_CUPROF OLD_CUPROF OUT: on the GPU machine, counts
# every driver call per API with a CUPTI callback (cupti_apicount.c) in the
# same process as `NEW_CUPROF record`, for the programs of programs.py and
# bench/suite's CuPy workload, and compares with what cuprof recorded
# (compare.py, into OUT/compare.txt). Then records cuda.core's
# dev.create_stream() with NEW and OLD cuprof, alternating, and writes each
# trace's Device.create_stream frame and the driver calls under it
# (OUT/create_stream.txt; APICOUNT_CS_ROUNDS rounds, 3, 0 for none). Run
# from the repository root. APICOUNT_N sizes the seed statements (2000);
# APICOUNT_LIST picks the programs and their sizes (below).
set -u
NEW=$1 OLD=$2 OUT=$3
D=$(cd "$(dirname "$0")" && pwd)
PY=${PY:-python3}
N=${APICOUNT_N:-2000}
mkdir -p "$OUT"
CUPTI_LIB=${CUPTI_LIB:-/usr/local/cuda-13.0/targets/x86_64-linux/lib}
gcc -O2 -shared -fPIC -I/usr/local/cuda/include "$D/cupti_apicount.c" \
	-L"$CUPTI_LIB" -lcupti -Wl,-rpath,"$CUPTI_LIB" -o "$OUT/libcupti_apicount.so" || exit 1
FUNCS=${FUNCS:-trace/spec/cuda_functions.txt}
: > "$OUT/compare.txt"
count() { # name, then the command
	local name=$1
	shift
	CUDA_INJECTION64_PATH="$OUT/libcupti_apicount.so" CUPROF_APICOUNT_FILE="$OUT/$name.cupti" \
		"$NEW" record -o "$OUT/$name.cuprof" -- "$@" > "$OUT/$name.log" 2>&1
	echo "exit $?" >> "$OUT/$name.log"
	"$NEW" report --format json "$OUT/$name.cuprof" > "$OUT/$name.report.json" 2>> "$OUT/$name.log"
	"$PY" "$D/compare.py" "$FUNCS" "$OUT/$name.cupti" "$OUT/$name.report.json" "$name" >> "$OUT/compare.txt"
}
# APICOUNT_LIST: the programs, NAME:SIZE each (programs.py's names, and
# cupy_wl / torch_wl for bench/suite's workloads, SIZE their steps).
LIST=${APICOUNT_LIST:-"create_stream:$N allocate:$N cp_stream:$N cp_empty:$N graph:1000 expandable:300 mlp:50 cupy_wl:100"}
for item in $LIST; do
	name=${item%%:*} size=${item#*:}
	case $name in
	expandable) PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True count "$name-$size" "$PY" "$D/programs.py" expandable "$size" ;;
	cupy_wl) count "$name-$size" "$PY" bench/suite/workload_cupy.py --steps "$size" ;;
	torch_wl) count "$name-$size" "$PY" bench/suite/workload_torch.py --steps "$size" ;;
	*) count "$name-$size" "$PY" "$D/programs.py" "$name" "$size" ;;
	esac
done
# create_stream: new against old, alternating.
: > "$OUT/create_stream.txt"
for ((round = 1; round <= ${APICOUNT_CS_ROUNDS:-3}; round++)); do
	for tool in new old; do
		bin=$NEW
		[ "$tool" = old ] && bin=$OLD
		"$bin" record -o "$OUT/cs-$tool-$round.cuprof" -- "$PY" "$D/programs.py" create_stream 5000 \
			> "$OUT/cs-$tool-$round.log" 2>&1
		"$NEW" report --format json "$OUT/cs-$tool-$round.cuprof" > "$OUT/cs-$tool-$round.json"
		"$PY" - "$OUT/cs-$tool-$round.json" "$tool" "$round" >> "$OUT/create_stream.txt" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
for f in r.get("frames", []) or []:
    if f["frame"].endswith("Device.create_stream"):
        print(f"{sys.argv[2]} round {sys.argv[3]}: {f['frame']} calls {f['calls']} self/call {f['self_ns']/f['calls']:.0f} ns "
              f"driver calls/call {f['driver_calls']/f['calls']:.2f} driver ns/call {f['driver_ns']/f['calls']:.0f} "
              f"inclusive/call {f['inclusive_ns']/f['calls']:.0f} ns")
for a in r.get("apis", []):
    if a["api"] in ("cuCtxGetStreamPriorityRange", "cuStreamCreateWithPriority", "cuStreamDestroy"):
        print(f"{sys.argv[2]} round {sys.argv[3]}:   {a['api']} {a['count']} calls, mean {a['mean_ns']:.0f} ns")
PYEOF
	done
done
