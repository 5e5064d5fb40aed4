#!/usr/bin/env bash
# cuda.core's own test suite on the simulated driver, without and with
# `cuprof record`: the same tests must pass, fail, skip and error in both
# runs, and the trace's per-API call counts must equal the simulated
# driver's own counters (CUPROF_SIM_CALL_COUNTS) in the recorded run.
#
# usage: cudacore_suite.sh -c CUPROF -p PYTHON -r CUDA_PYTHON_CHECKOUT [-o OUTDIR] [TEST PATH...]
#   CUPROF   a cuprof binary (go build -o bin/cuprof ./cmd/cuprof)
#   PYTHON   the interpreter of an environment with cuda-core, cuda-bindings,
#            numpy and pytest (internal/pyvenv's: ~/.cache/cuprof-ci/venv-*/bin/python)
#   CUDA_PYTHON_CHECKOUT  a checkout of NVIDIA/cuda-python (cuda-core ships
#            no source distribution with its tests on PyPI): its cuda_core/tests
#            and cuda_python_test_helpers are used
#   TEST PATH  relative to cuda_core (default: the driver-level files below)
# Writes OUTDIR/summary.md (the tables of docs/cudacore-suite.md) and keeps
# both runs' logs, JUnit files and driver call counts, the trace and its
# report there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cuprof="" py="" repo="" out=""
while getopts "c:p:r:o:" o; do
	case $o in
	c) cuprof=$OPTARG ;;
	p) py=$OPTARG ;;
	r) repo=$OPTARG ;;
	o) out=$OPTARG ;;
	*) sed -n '6,13p' "$0" | sed 's/^# *//' >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ -x "$cuprof" ] || { echo "cudacore_suite.sh: no cuprof binary at '$cuprof' (-c PATH)" >&2; exit 2; }
[ -x "$py" ] || { echo "cudacore_suite.sh: no Python at '$py' (-p PATH)" >&2; exit 2; }
[ -d "$repo/cuda_core/tests" ] || { echo "cudacore_suite.sh: no cuda_core/tests under '$repo' (-r CHECKOUT)" >&2; exit 2; }
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/test_stream.py tests/test_event.py tests/test_context.py tests/test_device.py
	tests/test_memory.py tests/memory tests/graph)
out=${out:-$(mktemp -d)}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A private build cache: the simulated driver of the bare run is the one
# this cuprof builds and records against.
export CUPROF_CACHE_DIR="$work/cache"
"$cuprof" record --sim -o "$work/warm.cuprof" -- true >/dev/null 2>&1
sim=$(find "$CUPROF_CACHE_DIR" -path '*/sim-*/libcuda.so.1' | head -1)
[ -n "$sim" ] || { echo "cudacore_suite.sh: cuprof built no simulated driver" >&2; exit 1; }

export PYTHONPATH="$repo/cuda_python_test_helpers${PYTHONPATH:+:$PYTHONPATH}"
pytest=("$py" -m pytest -q -p no:cacheprovider -p no:randomly -p no:warnings --continue-on-collection-errors)
rm -rf "$out/bare-counts" "$out/rec-counts"
mkdir -m 700 "$out/bare-counts" "$out/rec-counts"
echo "== bare, on $sim"
(cd "$repo/cuda_core" && CUPROF_SIM_CALL_COUNTS="$out/bare-counts" LD_LIBRARY_PATH="$(dirname "$sim")" \
	"${pytest[@]}" --junitxml="$out/bare.xml" "${tests[@]}" >"$out/bare.log" 2>&1) || true
tail -1 "$out/bare.log"
echo "== under cuprof record"
(cd "$repo/cuda_core" && CUPROF_SIM_CALL_COUNTS="$out/rec-counts" \
	"$cuprof" record --sim -o "$out/suite.cuprof" -- "${pytest[@]}" --junitxml="$out/rec.xml" "${tests[@]}" \
	>"$out/rec.log" 2>&1) || true
grep -E 'passed|failed' "$out/rec.log" | tail -1
"$cuprof" report --format json "$out/suite.cuprof" >"$out/report.json"
"$py" "$here/suite_compare.py" "$out/bare.xml" "$out/rec.xml" "$out/report.json" "$out/bare-counts" "$out/rec-counts" \
	| tee "$out/summary.md"
