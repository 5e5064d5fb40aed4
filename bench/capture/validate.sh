#!/bin/sh
# On a GPU machine: the capture overhead benchmark against the real driver,
# then the seed statements (CuPy and cuda.core one-liners, below) under
# `cuprof record`, checking that they still print their results and that
# their traces hold the expected calls.
#
#   bench/capture/validate.sh CUPROF_BINARY OUTDIR
set -u
cuprof=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
echo "== overhead (real driver)"
"$here/run.sh" -n 200000 -r 3 2>&1 | tee "$out/overhead.txt"
py=${PYTHON:-python3}
run() {
	name=$1
	shift
	echo "== $name"
	"$cuprof" record -o "$out/$name.cuprof" -- "$py" -c "$*" >"$out/$name.out" 2>&1
	echo "exit $?"
	cat "$out/$name.out"
	"$cuprof" dump "$out/$name.cuprof" >"$out/$name.txt" 2>&1
	grep -o 'api=[A-Za-z]*' "$out/$name.txt" | sort | uniq -c | sort -rn | head -25
	grep -E '^(push|pop|name|mark|start|end) ' "$out/$name.txt" | head -10
	grep -E '^(meta|drop) ' "$out/$name.txt"
}
run cupy "import cupy as cp
x = cp.empty(10, dtype=cp.int8); cp.cuda.runtime.deviceSynchronize()
s = cp.cuda.Stream(); e = cp.cuda.Event()
cp.cuda.nvtx.RangePush('cupy-step'); y = cp.arange(1000).sum(); cp.cuda.nvtx.RangePop()
print('cupy ok', int(y))"
run torch "import torch
x = torch.empty(10, device='cuda'); torch.cuda.synchronize()
s = torch.cuda.Stream(); e = torch.cuda.Event(); torch.cuda.set_device(0)
torch.cuda.nvtx.range_push('torch-step'); y = (torch.arange(1000, device='cuda') * 2).sum().item(); torch.cuda.nvtx.range_pop()
print('torch ok', y)"
run cudacore "from cuda.core import Device
d = Device(); d.set_current()
s = d.create_stream(); mr = d.memory_resource
b = mr.allocate(10, stream=s); b.close(s); d.sync(); s.close()
print('cuda.core ok')"
run bindings "from cuda.bindings import runtime as cudart
err, p = cudart.cudaMallocAsync(10, None); cudart.cudaFreeAsync(p, None); cudart.cudaDeviceSynchronize()
print('bindings ok', err)"
