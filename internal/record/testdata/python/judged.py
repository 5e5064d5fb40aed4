# A helper judged cheap after many activations elsewhere that wrote nothing,
# then calling the driver within --python-threshold activations of its
# judgement: its frame must be on that call's stack (docs/python.md: a
# cheap helper's events stop like those of code that does not lead to CUDA,
# after --python-threshold more activations). argv[1]: the threshold.
import ctypes
import sys
import time

import cuda


def maybe(x, call=False):
    if call:
        c = ctypes.c_void_p()
        cuda.check(cuda.cu.cuCtxGetCurrent(ctypes.byref(c)))
    return x + 1


def wrapper(i):
    c = ctypes.c_void_p()
    cuda.check(cuda.cu.cuCtxGetCurrent(ctypes.byref(c)))
    return maybe(i)


def outside(n):
    total = 0
    for i in range(n):
        total += maybe(i)
    return total


def main():
    cuda.init()
    th = int(sys.argv[1])
    for i in range(5):
        wrapper(i)  # maybe is written as wrapper's helper; the cut-off's clock starts
    outside(2 * th)  # activations that wrote nothing, more than the threshold
    time.sleep(0.005)  # the clock's rate is known from the next helper on
    for i in range(th):
        wrapper(i)  # maybe is judged cheap at the last of these
    maybe(0, True)
    print("done")


main()
