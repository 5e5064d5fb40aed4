"""What a Python frame and a C-level frame cost cuprof's callbacks when the
program's own work between two calls evicts the caches, as a CUDA library's
calls do: a Python function `wrap` calls a ctypes function (cuCtxGetCurrent
of the simulated driver), and between two calls the loop copies SIZE bytes
(a bytearray slice assignment: no call, so no event of its own).

  cuprof record --sim -- valgrind --tool=cachegrind --cache-sim=yes \\
      --cachegrind-out-file=cg.out python3 bench/python/cold_cache.py SIZE CALLS
  cg_annotate --threshold=0 --show=Ir,D1mr,D1mw,DLmr cg.out | grep -E 'py(thon|_[a-z]+)\.[ch]:'

Compare SIZE 1 (hot caches) with SIZE 262144 (the first-level data cache
evicted at every call): the shim's functions run the same instructions and
miss the cache once for every distinct line they touch. Without valgrind it
prints the thread CPU time per iteration (ns), which on a shared machine
moves more than the callbacks' share of it.
"""

import ctypes
import sys
import time


def main(argv):
    size, calls = int(argv[1]), int(argv[2])
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuInit(0)
    dev = ctypes.c_int()
    lib.cuDeviceGet(ctypes.byref(dev), 0)
    ctx = ctypes.c_void_p()
    lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    lib.cuCtxSetCurrent(ctx)
    f = lib.cuCtxGetCurrent
    out = ctypes.c_void_p()
    ref = ctypes.byref(out)
    a, b = bytearray(max(size, 1)), bytearray(max(size, 1))

    def wrap(n):
        return f(ref)

    def run(n):
        for _ in range(n):
            wrap(10)
            a[:] = b

    t = time.thread_time_ns()
    run(calls)
    print((time.thread_time_ns() - t) / calls)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
