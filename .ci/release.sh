#!/usr/bin/env bash
# CI stage: the release artifacts (release/build.sh) built, installed and run
# as a user would, on a PATH with no Go and no C compiler: a wheel per
# CPython that pyenv holds, `cuprof demo`, `cuprof record --sim` on a Python
# program and `cuprof timeit --sim`; then the same with the arm64 artifacts
# under qemu-aarch64, and the capture, ring and Python-frame tests of
# internal/record cross-compiled for arm64 and run under qemu.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

bash .ci/arm64.sh
t0=$(now)
bash release/build.sh
echo "release artifacts built in $(since "$t0")"
ver=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/cuprof/__init__.py)

# The user's PATH: the venv's bin and a few shell tools, no go, gcc or cc.
nocc=$work/bin
mkdir -p "$nocc"
for c in sh bash env ls cat head tail grep rm mkdir mktemp uname id sleep date; do ln -s "$(command -v "$c")" "$nocc/$c"; done
cat >"$work/prog.py" <<'PY'
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
cuda.cuDeviceGet(ctypes.byref(dev), 0)
cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
cuda.cuCtxSetCurrent(ctx)
for _ in range(100):
    s = ctypes.c_void_p()
    cuda.cuStreamCreate(ctypes.byref(s), 0)
    cuda.cuStreamDestroy_v2(s)
print("prog done")
PY

# smoke RUNNER PYTHON CUPROF: the three commands, compilers out of reach.
smoke() {
	local py=$1 cuprof=$2 home=$3
	mkdir -p "$home"
	(cd "$home" && env -i HOME="$home" PATH="$(dirname "$cuprof"):$nocc" CUPROF_CACHE_DIR="$home/cache" \
		QEMU_LD_PREFIX="${QEMU_LD_PREFIX:-}" bash -ec '
		for c in go gcc cc; do if command -v $c >/dev/null; then echo "$c is on PATH"; exit 1; fi; done
		t0=$(date +%s%N)
		cuprof demo 2>&1 | { read -r first; echo "first line of cuprof demo after $(( ($(date +%s%N) - t0) / 1000000 )) ms: $first"; cat >/dev/null; }
		cuprof record --sim -o prog.cuprof -- '"$py"' '"$work/prog.py"'
		cuprof report prog.cuprof | grep -q cuStreamCreate
		cuprof timeit --sim --python '"$py"' -n 100 -r 3 -s "import ctypes; c = ctypes.CDLL(\"libcuda.so.1\"); c.cuInit(0); v = ctypes.c_int()" \
			"c.cuDriverGetVersion(ctypes.byref(v))" | head -5
		ls cache | grep -q prebuilt || { echo "the C parts were not taken from the prebuilt ones"; exit 1; }
		ls cache | grep -v -e prebuilt -e pyboot && { echo "something was compiled"; exit 1; } || true
	')
}

pyroot=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}
for v in $(grep -v '^#' internal/record/testdata/python/versions); do
	py=$pyroot/versions/$v/bin/python3
	[ -x "$py" ] || { echo "CPython $v: not installed, wheel smoke skipped"; continue; }
	echo "== wheel on CPython $v (x86-64)"
	venv=$work/venv-$v
	"$py" -m venv "$venv"
	t0=$(now)
	"$venv/bin/pip" install -q --disable-pip-version-check --no-index "dist/cuprof-$ver-py3-none-manylinux_2_34_x86_64.whl"
	echo "pip install of the wheel: $(since "$t0")"
	"$venv/bin/python" -c 'import cuprof; print("cuprof module", cuprof.__version__)'
	smoke "$venv/bin/python" "$venv/bin/cuprof" "$work/home-$v"
done

echo "== arm64 artifacts under qemu-aarch64"
a64py=/opt/arm64root/usr/bin/python3.11
site=$work/arm64-site
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-index --no-deps --only-binary=:all: \
	--platform manylinux_2_34_aarch64 --target "$site" "dist/cuprof-$ver-py3-none-manylinux_2_34_aarch64.whl"
file -b "$site/bin/cuprof" | grep -q aarch64
PYTHONPATH=$site $a64py -c 'import cuprof; print("cuprof module (arm64 CPython)", cuprof.__version__)'
smoke "$a64py" "$site/bin/cuprof" "$work/home-arm64"

echo "== internal/record under qemu-aarch64 (capture, ring, Python frames on Debian's arm64 CPython 3.11)"
t0=$(now)
GOARCH=arm64 CGO_ENABLED=1 CC=aarch64-linux-gnu-gcc go test -c -o "$work/record-arm64.test" ./internal/record
echo "built in $(since "$t0")"
t0=$(now)
# qemu's virtual counter ticks at 62.5 MHz: successive calls share a tick
# and the trace's tie rule (later End first) reorders them, so the tests
# take CLOCK_MONOTONIC there (docs/capture.md, "Platforms"). Left out, each
# for its reason: TestPyLibs* run x86-64 virtual environments of real
# cuda.core; TestPythonModule* pip-installs the module (Debian's
# minimal arm64 CPython has no pip: the wheel's smoke run above installs
# it); TestCaptureWindow times its window in wall-clock terms qemu
# stretches; TestInPlace* measure shadows, taken on the tick clock only;
# TestRingBeyondFileSizeLimit and TestRingOnAFullFileSystem shrink limits
# that qemu's own loading of the shim then meets; TestForkWithoutAtforkHandlers
# needs MADV_WIPEONFORK, which qemu-user ignores (a _Fork child is then
# caught at its first chunk claim, as on kernels before 4.14: 3,861 of its
# 5,000 calls kept under emulation).
(cd internal/record && CC=aarch64-linux-gnu-gcc CUPROF_CACHE_DIR="$work/a64cache" CUPROF_CLOCK=monotonic \
	CUPROF_TEST_EMULATED=1 CUPROF_TEST_PYTHON=3.11.2=$a64py \
	"$work/record-arm64.test" -test.short -test.timeout 30m \
	-test.skip 'TestPyLibs|TestPythonModule|TestCaptureWindow|TestInPlace|TestRingBeyondFileSizeLimit|TestRingOnAFullFileSystem|TestForkWithoutAtforkHandlers')
echo "internal/record under qemu-aarch64: passed in $(since "$t0")"
