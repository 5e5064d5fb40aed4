# Python frames written while a native timer's signal handler records spans
# on the same thread (testdata/python/sigtick.c, its path in argv[1]): a
# handler that lands while a frame is being written must neither lose its
# span uncounted nor garble the thread's records. The loop runs until the
# handler has run argv[2] times (the timer's period in microseconds in
# argv[3]), however fast the machine is; prints how many spans the handler
# made and how many times the loop ran.
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
    want, period = int(sys.argv[2]), int(sys.argv[3])
    # Read as an attribute, not called: no frame of its own.
    handled = ctypes.c_long.in_dll(lib, "tick_handled")
    if lib.tick_start(period) != 0:
        print("no timer")
        return
    total = 0
    i = 0
    while handled.value < want:
        total += mid(i)
        i += 1
    lib.tick_stop.restype = ctypes.c_long
    print("handled", lib.tick_stop(), "loops", i, "total", total)


main()
