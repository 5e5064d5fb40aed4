"""The driver API through ctypes, shaped like cuda.bindings.driver.

Each binding returns a tuple whose first element is a CUresult (an IntEnum),
followed by the outputs, as cuda-python's generated bindings do: building
that tuple and the enum is part of what a wrapper in their style pays per
call. The raw ctypes functions are in CU for callers that check the integer
themselves (minicore.lean).
"""

import ctypes
import enum
import os


class CUresult(enum.IntEnum):
    """The CUresult codes the wrappers can meet (others keep their integer)."""

    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_NOT_INITIALIZED = 3
    CUDA_ERROR_DEINITIALIZED = 4
    CUDA_ERROR_NO_DEVICE = 100
    CUDA_ERROR_INVALID_DEVICE = 101
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_NOT_SUPPORTED = 801
    CUDA_ERROR_UNKNOWN = 999

    @classmethod
    def _missing_(cls, value):
        # A code this table lacks still becomes a member, like cuda-python's.
        if not isinstance(value, int):
            return None
        m = int.__new__(cls, value)
        m._name_ = f"CUresult_{value}"
        m._value_ = value
        return m


class CUstream_flags(enum.IntEnum):
    CU_STREAM_DEFAULT = 0
    CU_STREAM_NON_BLOCKING = 1


class _Handle:
    """An opaque driver handle (cuda-python's CUstream, CUcontext...)."""

    __slots__ = ("_ptr",)

    def __init__(self, ptr=0):
        self._ptr = int(ptr or 0)

    def __int__(self):
        return self._ptr

    def __index__(self):
        return self._ptr

    def __eq__(self, other):
        return type(other) is type(self) and other._ptr == self._ptr

    def __hash__(self):
        return hash((type(self), self._ptr))

    def __repr__(self):
        return f"<{type(self).__name__} 0x{self._ptr:x}>"


class CUdevice(_Handle):
    __slots__ = ()


class CUcontext(_Handle):
    __slots__ = ()


class CUstream(_Handle):
    __slots__ = ()


class CUdeviceptr(_Handle):
    __slots__ = ()


def _load():
    # CUPROF_EXAMPLE_LIBCUDA lets the example run on a driver library that is
    # not the loader's libcuda.so.1 (cuprof record --sim needs nothing: it
    # puts the simulated driver first on the library path).
    lib = ctypes.CDLL(os.environ.get("CUPROF_EXAMPLE_LIBCUDA") or "libcuda.so.1")
    p, u, i, sz = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_size_t
    P = ctypes.POINTER
    sigs = {
        # name in this module: (exported symbol, argument types)
        "cuInit": ("cuInit", [u]),
        "cuDeviceGet": ("cuDeviceGet", [P(i), i]),
        "cuDevicePrimaryCtxRetain": ("cuDevicePrimaryCtxRetain", [P(p), i]),
        "cuDevicePrimaryCtxRelease": ("cuDevicePrimaryCtxRelease_v2", [i]),
        "cuCtxSetCurrent": ("cuCtxSetCurrent", [p]),
        "cuStreamCreate": ("cuStreamCreate", [P(p), u]),
        "cuStreamDestroy": ("cuStreamDestroy_v2", [p]),
        "cuMemAllocAsync": ("cuMemAllocAsync", [P(ctypes.c_uint64), sz, p]),
        "cuMemFreeAsync": ("cuMemFreeAsync", [ctypes.c_uint64, p]),
        "cuGetErrorName": ("cuGetErrorName", [i, P(ctypes.c_char_p)]),
    }
    ns = {}
    for name, (symbol, argtypes) in sigs.items():
        f = getattr(lib, symbol)
        f.argtypes = argtypes
        f.restype = ctypes.c_int
        ns[name] = f
    return type("CU", (), ns)


CU = _load()
"""The raw functions: CU.cuStreamCreate(byref(c_void_p), flags) -> int."""


def cuInit(flags):
    return (CUresult(CU.cuInit(flags)),)


def cuDeviceGet(ordinal):
    d = ctypes.c_int()
    err = CUresult(CU.cuDeviceGet(ctypes.byref(d), ordinal))
    return err, CUdevice(d.value)


def cuDevicePrimaryCtxRetain(dev):
    c = ctypes.c_void_p()
    err = CUresult(CU.cuDevicePrimaryCtxRetain(ctypes.byref(c), int(dev)))
    return err, CUcontext(c.value)


def cuDevicePrimaryCtxRelease(dev):
    return (CUresult(CU.cuDevicePrimaryCtxRelease(int(dev))),)


def cuCtxSetCurrent(ctx):
    return (CUresult(CU.cuCtxSetCurrent(int(ctx) or None)),)


def cuStreamCreate(flags):
    s = ctypes.c_void_p()
    err = CUresult(CU.cuStreamCreate(ctypes.byref(s), int(flags)))
    return err, CUstream(s.value)


def cuStreamDestroy(stream):
    return (CUresult(CU.cuStreamDestroy(int(stream) or None)),)


def cuMemAllocAsync(size, stream):
    d = ctypes.c_uint64()
    err = CUresult(CU.cuMemAllocAsync(ctypes.byref(d), size, int(stream) or None))
    return err, CUdeviceptr(d.value)


def cuMemFreeAsync(ptr, stream):
    return (CUresult(CU.cuMemFreeAsync(int(ptr), int(stream) or None)),)


def cuGetErrorName(error):
    s = ctypes.c_char_p()
    err = CUresult(CU.cuGetErrorName(int(error), ctypes.byref(s)))
    return err, s.value
