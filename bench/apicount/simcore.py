"""Device.create_stream in cuda.core 1.2's shape, over ctypes, for
bench/apicount/paired.py on the CPU machine's simulated driver
(PAIRED_SIM=1): the frame asks cuCtxGetStreamPriorityRange and calls
cuStreamCreateWithPriority; the Stream it returns is destroyed
(cuStreamDestroy_v2) when it is let go of, outside the frame, as cuda.core's
finalizer does. What it is for: the paired blocks' arithmetic (bare - rec -
call, and the ablation blocks) where a GPU is not to be had; the frame is
Python and ctypes here, not Cython, so its self time is several times
cuda.core's and only the differences between blocks carry over.

Where the real cuda.core can be had (an environment of internal/pyvenv,
docs/python.md "Real libraries"), it serves instead: run paired.sh with
PY=that environment's python and without PAIRED_SIM, and cuda.core's own
Device.create_stream runs on the simulated driver. This imitation stays for
machines without the package index (bench/suite/selftest.sh's step runs
under the system python3, which has no cuda.core).
"""
import ctypes

_cu = ctypes.CDLL("libcuda.so.1")
_range = _cu.cuCtxGetStreamPriorityRange
_create = _cu.cuStreamCreateWithPriority
_destroy = _cu.cuStreamDestroy_v2
_NONBLOCKING = 1


def _check(r, what):
    if r != 0:
        raise RuntimeError("%s: CUresult %d" % (what, r))


class Stream:
    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        _destroy(self.handle)


class Device:
    def __init__(self, ordinal=0):
        self._ordinal = ordinal
        self._ctx = None

    def set_current(self):
        _check(_cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        _check(_cu.cuDeviceGet(ctypes.byref(dev), self._ordinal), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        _check(_cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _check(_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self._ctx = ctx

    def create_stream(self):
        least, greatest = ctypes.c_int(), ctypes.c_int()
        _check(_range(ctypes.byref(least), ctypes.byref(greatest)), "cuCtxGetStreamPriorityRange")
        h = ctypes.c_void_p()
        _check(_create(ctypes.byref(h), _NONBLOCKING, greatest.value), "cuStreamCreateWithPriority")
        return Stream(h)
