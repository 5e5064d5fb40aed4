#!/usr/bin/env bash
# Checks what of the suite can be checked without a GPU:
#   shell syntax (bash -n, shellcheck when installed), Python compiles, the
#   tables.py unit and golden tests (plain and archived runs), bench/lib's
#   tests (the run archives and the layout of every results folder), loops.c and the CUPTI tools compile with
#   -Werror (the CUPTI ones against testdata/cupti_stub/cupti.h), every loop
#   case runs against testdata/fake_driver.c, seeds.py runs with a stand-in
#   CuPy, run.sh --dry-run (full and goals modes: rounds, rotation), and, when
#   CUPROF names a cuprof binary, the shim tool's in-process drainer, then
#   run.sh --mode quick --parts loops under no tool, the shim alone and cuprof
#   against cuprof's simulated driver, then tables.py on the result.
#
#   bench/suite/selftest.sh            (CUPROF=bin/cuprof to include cuprof)
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-python3}
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
step() {
	local what=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then
		pass=$((pass + 1))
		echo "ok    $what"
	else
		fail=$((fail + 1))
		echo "FAIL  $what"
		sed 's/^/      /' "$TMP/out" | tail -20
	fi
}
cd "$HERE" || exit 1

step "bash -n run.sh selftest.sh wrappers.sh wrapinstr.sh ../drivercost/run.sh ../apicount/*.sh" bash -n run.sh selftest.sh wrappers.sh \
	wrapinstr.sh ../drivercost/run.sh ../apicount/run.sh ../apicount/selftime.sh ../apicount/paired.sh ../apicount/incalib.sh \
	../apicount/inplace.sh
if command -v shellcheck >/dev/null; then
	step "shellcheck run.sh selftest.sh" shellcheck run.sh selftest.sh
fi
step "python files compile" "$PY" -c 'import os, py_compile, sys
for f in sys.argv[2:]:
    py_compile.compile(f, doraise=True, cfile=os.path.join(sys.argv[1], os.path.basename(f) + "c"))' "$TMP" ./*.py
step "tables.py tests" "$PY" -m unittest discover -s . -p 'test_*.py'
step "bench/lib tests (run archives; every results folder is raw.tar.xz, tables.md, env.json)" \
	"$PY" -m unittest discover -s ../lib -p 'test_*.py'
step "bench/apicount tests (selftime.py, paired_stats.py, inplace_stats.py)" "$PY" -m unittest discover -s ../apicount -p 'test_*.py'
step "loops.c builds (-Werror)" gcc -O2 -std=gnu11 -Wall -Wextra -Werror -I../../cudawrap/shim -o "$TMP/loops" loops.c \
	-ldl -lpthread
step "fake driver builds" gcc -O2 -Wall -shared -fPIC -o "$TMP/libfake.so" testdata/fake_driver.c
for tool in cupti_callback cupti_activity; do
	step "$tool.c builds against the CUPTI stub (-Werror)" gcc -O2 -std=gnu11 -Wall -Wextra -Werror -shared -fPIC \
		-Itestdata/cupti_stub -o "$TMP/lib$tool.so" "$tool.c" -lpthread
	step "$tool exports InitializeInjection" sh -c "nm -D --defined-only '$TMP/lib$tool.so' | grep -q ' T InitializeInjection\$'"
done
step "fake libcupti builds" gcc -O2 -Wall -Werror -shared -fPIC -Wl,-soname,libcupti.so.13 \
	-o "$TMP/libcupti.so.13" testdata/fake_cupti.c
step "CUPTI driver builds" gcc -O2 -Wall -Werror -o "$TMP/drive" testdata/cupti_drive.c -L"$TMP" -l:libcupti.so.13 \
	-Wl,-rpath,"$TMP" -ldl -lpthread
drive() {
	local tool=$1 want=$2
	gcc -O2 -Wall -Werror -shared -fPIC -Itestdata/cupti_stub -o "$TMP/real-$tool.so" "$tool.c" -L"$TMP" \
		-l:libcupti.so.13 -Wl,-rpath,"$TMP" -lpthread &&
		CUPROF_BENCH_COUNT_FILE="$TMP/$tool.count.json" "$TMP/drive" "$TMP/real-$tool.so" 1000 &&
		"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
want = json.loads(sys.argv[2])
assert all(d[k] == v for k, v in want.items()), d' "$TMP/$tool.count.json" "$want"
}
step "cupti_callback counts API entries from two threads (fake CUPTI)" \
	drive cupti_callback '{"events": 2000, "threads": 2, "domains": "driver"}'
step "cupti_activity counts flushed records at exit (fake CUPTI)" \
	drive cupti_activity '{"events": 4, "driver": 2, "runtime": 1, "dropped": 1, "buffers": 1}'
step "run.sh builds the CUPTI tools (stub header, fake libcupti without libcupti.so)" sh -c \
	"CUPROF_BENCH_LIBCUDA='$TMP/libfake.so' CUDA_INC=testdata/cupti_stub CUPTI_LIB='$TMP' CUPROF=/nonexistent \
	./run.sh --quick --parts loops --tools none,cupti_cb,cupti_act '$TMP/cupti-res' >/dev/null 2>&1 &&
	grep -q 'tools available: none,cupti_cb,cupti_act' '$TMP/cupti-res/run.log' &&
	test -s '$TMP/cupti-res/loops/cupti_act/alloc_free_async.r1.json'"

run_case() {
	CUPROF_BENCH_LIBCUDA="$TMP/libfake.so" "$TMP/loops" --case "$1" --iters 1000 --reps 3 --out "$TMP/$1.json" &&
		"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["case"] == sys.argv[2] and d["failures"] == 0 and len(d["ns_per_iter"]) == 3, d
assert d["min_ns"] <= d["median_ns"] <= d["max_ns"], d' "$TMP/$1.json" "$1"
}
for c in $("$TMP/loops" --list | cut -f1); do
	step "loop $c on the fake driver" run_case "$c"
done
step "loops rejects an unknown case" sh -c "! '$TMP/loops' --case nope 2>/dev/null"
step "seeds.py with a stand-in CuPy" sh -c "PYTHONPATH=testdata/fakemods '$PY' seeds.py --target 0.002 --repeat 2 \
	--out '$TMP/seeds.json' 2>/dev/null && '$PY' -c 'import json, sys
d = json.load(open(sys.argv[1]))
ok = [r for r in d[\"results\"] if \"median_us\" in r]
assert [r[\"id\"] for r in ok] == [\"cupy.empty\", \"cupy.empty_sync\", \"cupy.Stream\"], ok' '$TMP/seeds.json'"
step "run.sh --dry-run" sh -c "./run.sh --dry-run '$TMP/dry' 2>&1 | grep -q 'loops --case alloc_free_sync_thresholdmax'"
# Goals mode: 5 rounds of each case, every tool in every round (nsys in the
# first two), the order turned by one each round.
dry_goals() {
	./run.sh --mode goals --dry-run "$TMP/dry-goals" >"$TMP/goals.txt" 2>&1 || return 1
	"$PY" - "$TMP/goals.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
orders = {}
for ln in lines:
    m = re.search(r"loops round (\d+) (\w+): (.*)$", ln)
    if m:
        orders[(int(m.group(1)), m.group(2))] = m.group(3).split()
assert orders, lines[:20]
cases = sorted({c for _, c in orders})
assert "stream_create_destroy" not in cases and len(cases) == 8, cases
for (r, c), order in orders.items():
    assert set(order) >= {"none", "shim", "cuprof", "cupti_cb"}, (r, c, order)
    assert ("nsys" in order) == (r <= 2 and c in ("ctx_get_current", "ctx_set_current", "get_error_name",
                                                   "event_create_destroy", "alloc_free_async")), (r, c, order)
for c in cases:
    firsts = {orders[(r, c)][0] for r in range(1, 6)}
    assert len(firsts) >= 3, (c, firsts)  # rotated: not always the same tool first
assert max(r for r, _ in orders) == 5
wl = [ln for ln in lines if "workload_torch.py --tool" in ln]
assert sum("--tool cuprof" in ln for ln in wl) == 3 and sum("--tool none" in ln for ln in wl) == 4, wl
assert not any("cupti" in ln for ln in wl), wl
PY
}
step "run.sh --mode goals --dry-run: rounds, rotation, tools" dry_goals
if [ -n "${CUPROF:-}" ] && [ -x "$CUPROF" ]; then
	# A private build cache: the simulated driver and shim found below are
	# this cuprof's, not an older build's left in the user's cache.
	export CUPROF_CACHE_DIR="$TMP/cache"
	step "cuprof record --sim works" "$CUPROF" record --sim -o "$TMP/warm.cuprof" -- true
	sim=$(find "$CUPROF_CACHE_DIR" -path '*/sim-*/libcuda.so' 2>/dev/null | head -1)
	shim=$(find "$CUPROF_CACHE_DIR" -path '*/shim-*/libcuprof.so' 2>/dev/null | head -1)
	if [ -n "$sim" ] && [ -n "$shim" ]; then
		drained() {
			mkdir -m 700 "$TMP/rings" && CUPROF_BENCH_LIBCUDA="$sim" CUPROF_DIR="$TMP/rings" LD_PRELOAD="$shim" \
				CUPROF_BENCH_DRAIN_US=500 CUPROF_BUFFER=1048576 "$TMP/loops" --case ctx_get_current --iters 100000 \
				--reps 3 --out "$TMP/drained.json" && "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["failures"] == 0 and d["drained_chunks"] > 0, d' "$TMP/drained.json"
		}
		step "loops' in-process drainer frees the shim's chunks (1 MiB ring, 310k calls)" drained
	fi
	if [ -n "$sim" ]; then
		step "run.sh --mode quick --parts loops (none, shim, cuprof; simulated driver)" env CUPROF_BENCH_LIBCUDA="$sim" \
			./run.sh --mode quick --rounds 2 --parts loops --tools none,shim,cuprof "$TMP/res"
		step "tables.py has accuracy rows" grep -q '^| .alloc_free_async. | .* ns |' "$TMP/res/tables.md"
		step "every case has 2 rounds under each tool" sh -c "test \$(ls '$TMP/res/loops/none/'*.r[12].json \
			'$TMP/res/loops/shim/'*.r[12].json '$TMP/res/loops/cuprof/'*.r[12].json | wc -l) = 54"
		step "tables.py judges the shim gap" grep -q 'cuprof within 3 ns of the shim alone\|cuprof - shim <= 3 ns' "$TMP/res/tables.md"
		step "wrappers.sh: two builds side by side (one cuprof twice; simulated driver)" env CUPROF_BENCH_LIBCUDA="$sim" \
			WRAP_ITERS_DIV=200 WRAP_REPS=1 WRAP_CASES="ctx_get_current alloc_free_async" BENCH_PIN=off \
			./wrappers.sh "$CUPROF" "$CUPROF" "$TMP/wr" 2
		step "wrappers.md pairs 2 rounds of each case" sh -c "grep -q '^| ctx_get_current | 2 |' '$TMP/wr/wrappers.md' &&
			grep -q '^| alloc_free_async | 2 |' '$TMP/wr/wrappers.md'"
		if command -v valgrind >/dev/null; then
			step "wrapinstr.sh: one build twice counts the same instructions per call" env WRAP_CASES=ctx_get_current \
				WRAPINSTR_ITERS=2000 ./wrapinstr.sh "$CUPROF" "$CUPROF" "$TMP/wi"
			step "wrapinstr.md: cuCtxGetCurrent, new - old +0.0" grep -q '^| ctx_get_current | cuCtxGetCurrent | .* | +0.0 |$' "$TMP/wi/wrapinstr.md"
		fi
		if command -v go >/dev/null; then
			step "bench/apicount/blocks builds" sh -c "cd '$HERE/../..' && go build -o '$TMP/blocks' ./bench/apicount/blocks"
			step "paired.sh on the simulated driver (PAIRED_SIM=1: simcore.py's frame; 1 process x 3 cycles of 50)" \
				env PAIRED_SIM=1 BENCH_PIN=off bash ../apicount/paired.sh "$CUPROF" "$TMP/blocks" "$TMP/pa" 1 3 50
			step "paired.md: the call recorded under the frame in rec, passed through in pass" grep -q \
				'^Driver calls per activation (median over blocks): pass 1.00, rec 2.00, rec2 2.00; the API.s calls recorded: pass 0, rec 150, rec2 150; counted as passed through: pass 150, rec 0, rec2 0.$' \
				"$TMP/pa/paired.md"
		fi
		step "drivercost/run.sh on the simulated driver" env CUPROF_BENCH_LIBCUDA="$sim" DRIVERCOST_ITERS=3 \
			DRIVERCOST_BATCHES=3 ../drivercost/run.sh "$TMP/dc"
		step "drivercost.json has every family's rows" "$PY" -c 'import json, sys
rows = {r["api"] for r in json.load(open(sys.argv[1]))["rows"]}
missing = {"cuGraphLaunch", "cuMemMap", "cuLibraryLoadData", "cuOccupancyMaxActiveClusters", "cuIpcOpenMemHandle"} - rows
assert not missing, missing' "$TMP/dc/drivercost.json"
	fi
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
