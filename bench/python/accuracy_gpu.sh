#!/bin/sh
# Issue 41's table on the GPU machine: bench/python/accuracy.py on the real
# driver, each statement against a lean ctypes wrapper of stream create and
# destroy (examples/python/minicore/lean.py): cuda.core's create_stream and
# CuPy's Stream, cuda.core's mr.allocate and CuPy's empty, a PyTorch step,
# and minicore's cuda.core-style wrapper; bare and recorded, full and
# --python=stacks, interleaved rounds. No Go there: a cuprof built here.
#
#   CUPROF=bin/cuprof bench/python/accuracy_gpu.sh OUT_DIR [accuracy.py options]
#
# CUPROF: the prebuilt cuprof binary (default bin/cuprof); PYTHON: the
# interpreter with cuda.core, CuPy and PyTorch (default python3);
# ACC_ROUNDS (9), ACC_NUMBER (2000). With ACC_SIM=1 it runs the same
# statements on the simulated driver where they can (the ctypes ones only:
# minicore and the lean base), as its test here does.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: accuracy_gpu.sh OUT_DIR [accuracy.py options]}
shift
mkdir -p "$out"
CUPROF=${CUPROF:-$root/bin/cuprof}
PYTHON=${PYTHON:-python3}
export CUPROF
[ -x "$CUPROF" ] || { echo "accuracy_gpu.sh: no cuprof binary at $CUPROF: set CUPROF" >&2; exit 2; }
spec=$out/pairs.json
if [ "${ACC_SIM:-0}" = 1 ]; then
	cat >"$spec" <<'JSON'
{"setup": ["from minicore import core, lean",
           "dev = core.Device(0); dev.set_current(); lean.init(); lean.set_current(lean.device_get(0))"],
 "pairs": {"base": "lean.stream_destroy(lean.stream_create())",
           "minicore": "dev.create_stream().close()"},
 "judge": "program"}
JSON
	sim=""
else
	# Which libraries this interpreter has: a pair whose library is missing
	# is left out (said on stderr), the rest run.
	have() { "$PYTHON" -c "import $1" >/dev/null 2>&1 || { echo "accuracy_gpu.sh: no $1 for $PYTHON: its pairs left out" >&2; return 1; }; }
	setup='"from minicore import core, lean", "lean.init(); lean.set_current(lean.device_get(0))", "mdev = core.Device(0); mdev.set_current()"'
	pairs='"base": "lean.stream_destroy(lean.stream_create())", "minicore": "mdev.create_stream().close()"'
	if have cuda.core; then
		setup="$setup"', "from cuda.core import Device", "dev = Device(0); dev.set_current(); s = dev.create_stream(); mr = dev.memory_resource"'
		pairs="$pairs"', "cudacore": "dev.create_stream().close()", "cudacore_alloc": "mr.allocate(10, stream=s).close(s)"'
	fi
	if have cupy; then
		setup="$setup"', "import cupy as cp", "cp.cuda.Device(0).use()"'
		pairs="$pairs"', "cupy": "cp.cuda.Stream()", "cupy_empty": "cp.empty(10)"'
	fi
	if have torch; then
		setup="$setup"', "import torch", "torch.empty(1, device=\"cuda\")"'
		pairs="$pairs"', "torch": "torch.empty(10, device=\"cuda\")"'
	fi
	printf '{"setup": [%s],\n "pairs": {%s},\n "judge": "program"}\n' "$setup" "$pairs" >"$spec"
	sim="--real"
fi
exec "$PYTHON" "$here/accuracy.py" $sim --setup-json "$spec" --pythons "$(command -v "$PYTHON")" \
	--rounds "${ACC_ROUNDS:-9}" --number "${ACC_NUMBER:-2000}" --out "$out" "$@"
