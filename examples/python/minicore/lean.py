"""The same driver calls as minicore.core with nothing around them.

Plain functions over the raw ctypes functions: integer handles, no options
object, no finalizer (the caller frees what it made), one integer comparison
after each call.
"""

import ctypes

from .driver import CU


class CUDAError(Exception):
    """A driver call failed with code (an int); str() names it."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code

    def __str__(self):
        s = ctypes.c_char_p()
        if CU.cuGetErrorName(self.code, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return f"CUresult {self.code}"


def init():
    r = CU.cuInit(0)
    if r:
        raise CUDAError(r)


def device_get(ordinal):
    d = ctypes.c_int()
    r = CU.cuDeviceGet(ctypes.byref(d), ordinal)
    if r:
        raise CUDAError(r)
    return d.value


def set_current(dev):
    """Retains the device's primary context and makes it current; returns it."""
    c = ctypes.c_void_p()
    r = CU.cuDevicePrimaryCtxRetain(ctypes.byref(c), dev)
    if r:
        raise CUDAError(r)
    r = CU.cuCtxSetCurrent(c)
    if r:
        raise CUDAError(r)
    return c.value


def stream_create(flags=1):
    s = ctypes.c_void_p()
    r = CU.cuStreamCreate(ctypes.byref(s), flags)
    if r:
        raise CUDAError(r)
    return s.value


def stream_destroy(stream):
    r = CU.cuStreamDestroy(stream)
    if r:
        raise CUDAError(r)


def alloc(size, stream):
    p = ctypes.c_uint64()
    r = CU.cuMemAllocAsync(ctypes.byref(p), size, stream)
    if r:
        raise CUDAError(r)
    return p.value


def free(ptr, stream):
    r = CU.cuMemFreeAsync(ptr, stream)
    if r:
        raise CUDAError(r)
