#!/usr/bin/env bash
# The real Python CUDA libraries on the simulated driver (docs/python.md,
# "Real libraries"): makes the environment of every CPython the tests run
# on from internal/pyvenv/requirements.txt (pip, the package index; kept in
# $CUPROF_PYLIBS_VENVS or ~/.cache/cuprof-ci between runs), lists what each
# holds, and runs the seed statements' test on them, verbosely, so that the
# log shows each CPython's result. `go test ./...` runs it again with the
# other tests of the real libraries (numba-cuda, the capture module and
# IPython, timeit; TestPyLibs*, TestTimeitPyLibs), and makes any missing
# environment itself; with CI=true a missing index fails them instead of
# skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# step NAME PATTERN GO-TEST-ARGS...: runs go test -v, prints the lines of
# its log that PATTERN selects, and on failure the log's end.
step() {
	local name=$1 pattern=$2 status=0
	shift 2
	echo "== real Python libraries: $name"
	go test -count=1 -v "$@" >"$log" 2>&1 || status=$?
	grep -E -e "$pattern" "$log" || true
	if [ "$status" -ne 0 ]; then
		echo "== $name failed; the end of its log:"
		tail -60 "$log"
		exit "$status"
	fi
}

step "environments (internal/pyvenv/requirements.txt)" '^\s*(--- |ok|FAIL)|[A-Za-z0-9]==[0-9]|environment |not installed' \
	-run 'TestEnvironments' ./internal/pyvenv
step "the seed statements on each CPython" '^\s*(--- |ok|FAIL|panic)' \
	-run 'TestPyLibsSeed' ./internal/record
