"""The tempbuffer seed comparison with CuPy (14), allocating through CUDA's
stream-ordered allocator (cupy.cuda.MemoryAsyncPool, i.e. cudaMallocAsync
from the device's current pool): a new stream per call (the
TemporaryStorageBuffer way) against a long-lived stream, with the pool's
release threshold at its maximum (threshold 0 is CuPy's size limit, see
below), without and with a synchronize.

    python3 tempbuffer_cupy.py [-n 1000]
    cuprof record -- python3 tempbuffer_cupy.py
"""

import argparse

import cupy as cp

from _percall import header, measure, row

# CuPy's MemoryAsyncPool uses the pool's release threshold as its size limit
# (MemoryAsyncPool.set_limit): at threshold 0 every allocation fails with
# OutOfMemoryError (seen on the H200 with CuPy 14.2). So CuPy can only run the
# threshold-max rows; its default keeps the threshold at the maximum.

MAX = 2**64 - 1
RELEASE_THRESHOLD = 4  # cudaMemPoolAttrReleaseThreshold


def set_release_threshold(ordinal, value):
    pool = cp.cuda.runtime.deviceGetMemPool(ordinal)
    cp.cuda.runtime.memPoolSetAttribute(pool, RELEASE_THRESHOLD, value)


def temp_buffer(dev, size, sync):
    dev.use()
    s = cp.cuda.Stream()
    with s:
        a = cp.empty(size, dtype=cp.int8)
        del a
    if sync:
        cp.cuda.runtime.deviceSynchronize()
    del s


def direct(s, size, sync):
    with s:
        a = cp.empty(size, dtype=cp.int8)
        del a
    if sync:
        cp.cuda.runtime.deviceSynchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="timed calls per variant")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--size", type=int, default=10)
    ap.add_argument("--device", type=int, default=0)
    a = ap.parse_args()

    dev = cp.cuda.Device(a.device)
    dev.use()
    cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
    long_lived = cp.cuda.Stream()
    name = cp.cuda.runtime.getDeviceProperties(a.device)["name"].decode()
    print(f"device {a.device}: {name} (CuPy {cp.__version__}, MemoryAsyncPool), {a.size}-byte allocations, {a.n} calls per variant\n")
    header()
    for temp in (True, False):
        for threshold in (MAX,):
            for sync in (False, True):
                set_release_threshold(a.device, threshold)
                cp.cuda.runtime.deviceSynchronize()
                label = ("tempbuffer (set+stream+alloc+destroy)" if temp else "direct alloc on a stream")
                label += " thr=" + ("max" if threshold == MAX else "0") + (" +sync" if sync else "")
                if temp:
                    fn = lambda: temp_buffer(dev, a.size, sync)
                else:
                    fn = lambda: direct(long_lived, a.size, sync)
                row(measure(label, fn, a.n, a.warmup))


if __name__ == "__main__":
    main()
