#!/usr/bin/env bash
# Checks what of bench/python can be checked without a GPU: shell syntax
# (bash -n, shellcheck when installed), the Python compiles (with
# examples/python/minicore and the seed), frames.py and summarize.py tests,
# noop_hook.c builds with -Werror, and, when CUPROF names a cuprof binary,
# run.sh --selftest (cuprof record --sim; the minicore statements and
# workload only) and the shape of its results.
#
#   bench/python/selftest.sh          (CUPROF=bin/cuprof for the run)
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-python3}
# A relative CUPROF is relative to where this was started, not to HERE.
case ${CUPROF:-} in
*/*) CUPROF=$(cd "$(dirname "$CUPROF")" && pwd)/$(basename "$CUPROF") ;;
esac
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
		sed 's/^/      /' "$TMP/out" | tail -30
	fi
}
cd "$HERE" || exit 1
step "bash -n run.sh selftest.sh ab_chain.sh" bash -n run.sh selftest.sh ab_chain.sh
if command -v shellcheck >/dev/null; then
	step "shellcheck run.sh selftest.sh ab_chain.sh" shellcheck run.sh selftest.sh ab_chain.sh
fi
step "python files compile" "$PY" -c 'import os, py_compile, sys
for f in sys.argv[2:]:
    py_compile.compile(f, doraise=True, cfile=os.path.join(sys.argv[1], os.path.basename(f) + "c"))' \
	"$TMP" ./*.py "$ROOT"/examples/python/minicore/*.py "$ROOT"/examples/python/wrappers_ctypes.py
step "frames.py and summarize.py tests" "$PY" -m unittest discover -s . -p 'test_*.py'
step "docs/images/flamegraph.py tests" "$PY" -m unittest discover -s "$ROOT/docs/images" -p 'test_*.py'
step "noop_hook.c builds (-Werror)" gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$TMP/noop_hook.so" noop_hook.c -ldl
if [ -n "${CUPROF:-}" ] && [ ! -x "$CUPROF" ]; then
	step "CUPROF=$CUPROF is an executable" false
elif [ -n "${CUPROF:-}" ]; then
	step "run.sh --selftest (simulated driver)" ./run.sh --selftest "$TMP/res"
	step "results: events, statements and workload rows, goals judged" "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
modes = [r["mode"] for r in d["events"]["rows"]]
assert {"bare", "cprofile", "setprofile_py", "setprofile_c", "cuprof"} <= set(modes), modes
ids = [r["id"] for r in d["statements"] if r["none_us"] is not None and r["cuprof_us"] is not None]
assert ids == ["minicore.create_stream", "minicore.allocate"], d["statements"]
assert [w["workload"] for w in d["workloads"]] == ["minicore"] and d["workloads"][0]["cuprof_ratio"], d["workloads"]
status = {g["status"] for g in d["goals"]}
assert status <= {"met", "missed", "undecided", "not judged"} and len(d["goals"]) >= 4, d["goals"]' "$TMP/res/results.json"
	step "results.md has the goal table" grep -q '^| goal | status |' "$TMP/res/results.md"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
