# A small ctypes wrapper over the (simulated) driver, in the style of
# cuda.core 0.3: an options object, weakref.finalize, a Python error check
# after each call. Imported by the test programs of python_test.go.
import ctypes
import weakref

cu = ctypes.CDLL("libcuda.so.1")


class CUDAError(Exception):
    pass


def check(r):
    if r != 0:
        raise CUDAError("CUresult %d" % r)


def init():
    check(cu.cuInit(0))
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0))
    ctx = ctypes.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
    check(cu.cuCtxSetCurrent(ctx))
    return ctx


class StreamOptions:
    def __init__(self, nonblocking=True, priority=0):
        self.flags = 1 if nonblocking else 0
        self.priority = priority


def _destroy(handle):
    check(cu.cuStreamDestroy_v2(handle))


class Stream:
    def __init__(self, options=None):
        options = options or StreamOptions()
        h = ctypes.c_void_p()
        check(cu.cuStreamCreate(ctypes.byref(h), options.flags))
        self.handle = h
        self._finalizer = weakref.finalize(self, _destroy, h)

    def close(self):
        self._finalizer()


def create_stream():
    return Stream()
