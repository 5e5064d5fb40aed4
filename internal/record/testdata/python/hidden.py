# A function that calls a helper N times, then the driver: recorded with
# --python=stacks, the helper's activations are pushed and not written, the
# first --python-threshold of them, and after that its code is turned off
# (python_test.go's TestPythonHiddenCounts counts them in work's frame,
# with cuda.check's one activation, which calls no driver either).
import ctypes
import sys

import cuda


def tiny(x):
    return x + 1


def work(n):
    total = 0
    for i in range(n):
        total = tiny(total)
    c = ctypes.c_void_p()
    cuda.check(cuda.cu.cuCtxGetCurrent(ctypes.byref(c)))
    return total


def main():
    cuda.init()
    cuda.cu.cuCtxGetCurrent  # ctypes' CDLL.__getattr__ (Python) runs here, once
    print("done", work(int(sys.argv[1])))


if __name__ == "__main__":
    main()
