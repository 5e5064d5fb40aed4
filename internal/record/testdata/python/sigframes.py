# Python frames written while a native timer's signal handler records spans
# on the same thread (testdata/python/sigtick.c, its path in argv[1]): a
# handler that lands while a frame is being written must neither lose its
# span uncounted nor garble the thread's records. Prints how many spans the
# handler made.
import ctypes
import sys

import cuda


def leaf(i):
    return i


def mid(i):
    return leaf(i) + leaf(i)


def main():
    cuda.init()
    lib = ctypes.CDLL(sys.argv[1])
    n = int(sys.argv[2])
    if lib.tick_start(10) != 0:
        print("no timer")
        return
    total = 0
    for i in range(n):
        total += mid(i)
    lib.tick_stop.restype = ctypes.c_long
    print("handled", lib.tick_stop(), "total", total)


main()
