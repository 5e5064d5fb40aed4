#!/usr/bin/env bash
# Checks what of the suite can be checked without a GPU:
#   shell syntax (bash -n, shellcheck when installed), Python compiles, the
#   tables.py unit and golden tests, loops.c and the CUPTI tools compile with
#   -Werror (the CUPTI ones against testdata/cupti_stub/cupti.h), every loop
#   case runs against testdata/fake_driver.c, seeds.py runs with a stand-in
#   CuPy, run.sh --dry-run, and, when CUPROF names a cuprof binary, run.sh
#   --quick --parts loops under no tool and cuprof against cuprof's simulated
#   driver, then tables.py on the result.
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

step "bash -n run.sh selftest.sh" bash -n run.sh selftest.sh
if command -v shellcheck >/dev/null; then
	step "shellcheck run.sh selftest.sh" shellcheck run.sh selftest.sh
fi
step "python files compile" "$PY" -c 'import os, py_compile, sys
for f in sys.argv[2:]:
    py_compile.compile(f, doraise=True, cfile=os.path.join(sys.argv[1], os.path.basename(f) + "c"))' "$TMP" ./*.py
step "tables.py tests" "$PY" -m unittest discover -s . -p 'test_*.py'
step "loops.c builds (-Werror)" gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$TMP/loops" loops.c -ldl
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
	test -s '$TMP/cupti-res/loops/cupti_act/alloc_free_async.json'"

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
if [ -n "${CUPROF:-}" ] && [ -x "$CUPROF" ]; then
	step "cuprof record --sim works" "$CUPROF" record --sim -o "$TMP/warm.cuprof" -- true
	sim=$(find "${XDG_CACHE_HOME:-$HOME/.cache}/cuprof" -path '*/sim-*/libcuda.so' 2>/dev/null | head -1)
	if [ -n "$sim" ]; then
		step "run.sh --quick --parts loops (none, cuprof; simulated driver)" env CUPROF_BENCH_LIBCUDA="$sim" \
			./run.sh --quick --parts loops --tools none,cuprof "$TMP/res"
		step "tables.py has accuracy rows" grep -q '^| .alloc_free_async. | .* ns |' "$TMP/res/tables.md"
	fi
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
