#!/usr/bin/env bash
# Checks what of bench/multigpu can be checked without a GPU: shell syntax,
# Python compiles (with the examples), check.py and otlp_sink.py tests,
# launch.py, and, when CUPROF names a cuprof binary, the whole run.sh on
# sim_program.py against cuprof's simulated driver (two devices): one- and
# two-process records, OTLP export to the local sink, attribution checks; and
# the same for the Go example (examples/multigpu): MULTIGPU_GO or bin/multigpu
# when present, else built with Go into a temporary directory when Go is
# installed, else skipped.
#
#   bench/multigpu/selftest.sh          (CUPROF=bin/cuprof for the full run)
set -u -o pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
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
		sed 's/^/      /' "$TMP/out" | tail -30
	fi
}
cd "$HERE" || exit 1
step "bash -n run.sh selftest.sh" bash -n run.sh selftest.sh
if command -v shellcheck >/dev/null; then
	step "shellcheck run.sh selftest.sh" shellcheck run.sh selftest.sh
fi
step "python files compile" "$PY" -c 'import os, py_compile, sys
for f in sys.argv[2:]:
    py_compile.compile(f, doraise=True, cfile=os.path.join(sys.argv[1], os.path.basename(f) + "c"))' \
	"$TMP" ./*.py "$ROOT"/examples/python/multigpu_*.py
step "check.py and otlp_sink.py tests" "$PY" -m unittest discover -s . -p 'test_*.py'
step "launch.py substitutes rank and device" sh -c "'$PY' launch.py --nprocs 2 --devices 1,0 -- \
	sh -c 'echo \$RANK/\$WORLD_SIZE {rank} {device}' | sort | tr '\n' ' ' | grep -qx '0/2 0 1 1/2 1 0 '"
if [ -n "${CUPROF:-}" ] && [ -x "$CUPROF" ]; then
	step "run.sh on sim_program.py (simulated driver, devices 0,1)" \
		./run.sh --programs "$HERE/sim_program.py" --devices 0,1 --rounds 2 "$TMP/res"
	step "two-process run: one OTLP resource per process" \
		grep -q 'OTLP: .* 2 resources' "$TMP/res/two-sim_program.check-otlp.txt"
	goprog=${MULTIGPU_GO:-$ROOT/bin/multigpu}
	if [ ! -x "$goprog" ] && command -v go >/dev/null; then
		goprog=$TMP/multigpu
		step "go build ./examples/multigpu" sh -c "cd '$ROOT' && go build -o '$goprog' ./examples/multigpu"
	fi
	if [ -x "$goprog" ]; then
		step "run.sh on the Go example (simulated driver, devices 0,1)" \
			env MULTIGPU_GO="$goprog" ./run.sh --programs go --devices 0,1 --rounds 2 "$TMP/res-go"
		step "Go example: calls on both devices, two OTLP resources" sh -c \
			"grep -q 'dev 1: 6/6 allocations on the right device' '$TMP/res-go/go.check-otlp.txt' &&
			grep -q 'OTLP: .* 2 resources' '$TMP/res-go/two-go.check-otlp.txt'"
	else
		echo "skip  run.sh on the Go example (no bin/multigpu and no Go to build it)"
	fi
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
