# A wrapper that calls the driver, then two helpers that do not: a cheap one
# (an addition, in a helper of its own) and a dear one (50 us of busy waiting). Both are written as
# the wrapper's helpers for their first calls; after --python-threshold of
# them only the dear one still is (python_test.go's TestPythonCheapHelpers).
import ctypes
import sys
import time

import cuda


def tiny(x):
    return x + 1


def cheap(x):
    return tiny(x)


def dear(x):
    end = time.perf_counter_ns() + 50_000
    while time.perf_counter_ns() < end:
        pass
    return x


def wrapper(i):
    c = ctypes.c_void_p()
    cuda.check(cuda.cu.cuCtxGetCurrent(ctypes.byref(c)))
    return cheap(i) + dear(i)


def main():
    cuda.init()
    n = int(sys.argv[1])
    total = 0
    for i in range(n):
        total += wrapper(i)
    print("done", n, total)


main()
