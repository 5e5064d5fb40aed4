# Functions made and dropped one after another: CPython gives a new code
# object the address of one freed before it, and each must still be named as
# itself (cuprof finds a code's state by its address; a dead code's entry
# goes with it). Prints how many of the code objects reused an address.
import ctypes
import gc

import cuda


def main():
    cuda.init()
    seen = set()
    reused = 0
    for k in range(40):
        ns = {"cu": cuda.cu, "ctypes": ctypes}
        src = "def made_%d():\n    c = ctypes.c_void_p()\n    cu.cuCtxGetCurrent(ctypes.byref(c))\n" % k
        exec(compile(src, "<made>", "exec"), ns)
        f = ns["made_%d" % k]
        a = id(f.__code__)
        reused += a in seen
        seen.add(a)
        f()
        del f, ns
        gc.collect()  # a function and its globals are a cycle
    print("reused", reused)


main()
