#!/usr/bin/env bash
# bench/drivercost/run.sh OUT: on the GPU machine, builds drivercost.c with
# gcc and empty.cu into a cubin with nvcc (for the device's own architecture),
# then runs drivercost pinned to one CPU (taskset, when there is one) with no
# tool attached. Writes OUT/drivercost.json (every row) and OUT/drivercost.txt
# (the table it printed). DRIVERCOST_ITERS and DRIVERCOST_BATCHES set its
# --iters and --batches; CUPROF_BENCH_LIBCUDA another driver library (then no
# cubin is built: the simulated driver takes any image).
set -u -o pipefail
OUT=${1:?usage: bench/drivercost/run.sh OUT}
D=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT" || exit 1
gcc -O2 -Wall -Wextra -Werror -o "$OUT/drivercost" "$D/drivercost.c" -ldl || exit 1
img=()
if [ -z "${CUPROF_BENCH_LIBCUDA:-}" ]; then
	NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
	arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d . | tr -d ' ')
	"$NVCC" -cubin -arch="sm_${arch:-90}" -o "$OUT/empty.cubin" "$D/empty.cu" || exit 1
	img=(--image "$OUT/empty.cubin")
fi
pin=()
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 4 ]; then pin=(taskset -c 2); fi
"${pin[@]}" "$OUT/drivercost" --iters "${DRIVERCOST_ITERS:-200}" --batches "${DRIVERCOST_BATCHES:-200}" \
	"${img[@]}" --out "$OUT/drivercost.json" | tee "$OUT/drivercost.txt"
