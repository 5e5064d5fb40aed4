#!/usr/bin/env python3
"""A CPU analog of a CuPy-like pipeline's Python side: dense wrapper frames.

Each step makes an array object and runs 8 FFT-like calls through small
Python wrappers in the style of cupy/fft/_fft.py (shape cooking, a plan
cache, type conversion, a dtype name getter called as a property), each
reaching the driver through ctypes (cuCtxGetCurrent): about 160 frames a
step, nearly every one on a path to a driver call, as in CuPy's pipeline.

    dense_wrappers.py STEPS     prints the median of 5 segments of STEPS steps,
                                in the thread's CPU time (seconds)

Run bare (LD_LIBRARY_PATH to a driver), under `cuprof record [--sim]` and
with --python=stacks, interleaved; the CPU pycost notes in bench/python/results/2026-12-01-h200/tables.md quote it.
"""
import ctypes
import os
import sys
import time


def _driver():
    lib = ctypes.CDLL(os.environ.get("CUPROF_EXAMPLE_LIBCUDA") or "libcuda.so.1")
    lib.cuInit(0)
    out = ctypes.c_void_p()
    return lib.cuCtxGetCurrent, ctypes.byref(out)


get, ref = _driver()
_cache = {}


class Plan:
    def __init__(self, n, kind):
        self.n = n
        self.kind = kind

    def run(self, x):
        get(ref)  # the "kernel": one driver call
        return x


class Arr:
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = shape
        self.dtype = dtype

    @property
    def name(self):  # called from C (the attribute lookup), as numpy's dtype.name
        return _name_get(self.dtype)


def _kind_name(d):
    return {"f": "float", "i": "int"}.get(d[0], "x")


def _name_includes_bit_suffix(d):
    if d is None:
        return False
    return isinstance(d, str) and len(d) > 1


def _name_get(d):
    name = _kind_name(d)
    if _name_includes_bit_suffix(d):
        name += "{}".format(int(d[1:]) * 8)
    return name


def _cook_shape(a, s, axes):
    if s is None:
        return a
    s, axes = tuple(s), tuple(axes)
    for sz, ax in zip(s, axes):
        if sz is not None and len(a.shape) > ax and a.shape[ax] != sz:
            a = Arr(tuple(sz if i == ax else d for i, d in enumerate(a.shape)), a.dtype)
    return a


def _convert_fft_type(dtype, value_type):
    if value_type == "C2C":
        return "Z2Z" if dtype == "c16" else "C2C"
    return "R2C"


def get_plan(n, kind):
    key = (n, kind)
    p = _cache.get(key)
    if p is None:
        p = _cache[key] = Plan(n, kind)
    return p


def _exec_fft(a, direction, value_type, norm, axis):
    fft_type = _convert_fft_type(a.dtype, value_type)
    n = a.shape[axis]
    if not isinstance(n, int) or n < 1:
        raise ValueError(n)
    plan = get_plan(n, fft_type)
    out = Arr(a.shape, a.dtype)
    plan.run(out)
    if norm == "ortho":
        out = Arr(out.shape, out.dtype)
    _ = out.name
    return out


def _fft(a, s, axes, norm, direction, value_type="C2C"):
    a = _cook_shape(a, s, axes)
    for axis in reversed(axes):
        a = _exec_fft(a, direction, value_type, norm, axis)
    return a


def rfft(a):
    return _fft(a, (a.shape[-1],), (-1,), None, "f", "R2C")


def empty(shape, dtype="f4"):
    get(ref)  # the allocation: one driver call
    return Arr(shape if isinstance(shape, tuple) else (shape,), dtype)


def iteration(i):
    x = empty(1024)
    z = x
    for _ in range(8):
        y = rfft(x)
        z = empty(len(y.shape))
    return sorted([i % 7, len(z.shape), 3])[0]


def run(first, count):
    for i in range(first, first + count):
        iteration(i)


def main(argv):
    steps, segs = (int(argv[0]) if argv else 2000), 5
    run(0, 200)  # warm-up
    ts = []
    for k in range(segs):
        t0 = time.thread_time()
        run(k * steps, steps)
        ts.append(time.thread_time() - t0)
    ts.sort()
    print("%.4f" % ts[segs // 2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
