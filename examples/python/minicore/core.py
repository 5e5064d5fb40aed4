"""A stream and buffer wrapper in the style of cuda.core 0.3.

What each call pays, as cuda.core 0.3 did (the overheads cuda-python's
developers measured with Python flame graphs):

- options: create_stream(options=...) accepts None, a dict or a StreamOptions
  dataclass and turns it into a validated StreamOptions every call
  (check_or_create_options, the dataclass __init__ and __post_init__);
- finalize: every Stream and Buffer registers weakref.finalize(obj, close)
  from a small members object, so that the handle is released when the
  object is collected;
- check: every driver call returns a tuple (CUresult, outputs...) that
  handle_return unpacks and checks through _check_error/_check_driver_error,
  which on failure names the code with cuGetErrorName and raises CUDAError.

The driver calls are the same as minicore.lean's.
"""

import threading
import weakref
from dataclasses import dataclass
from typing import Optional

from . import driver
from .driver import CUresult, CUstream_flags


class CUDAError(Exception):
    """A driver call failed; the message starts with the CUresult's name."""


def _check_driver_error(error):
    if error == CUresult.CUDA_SUCCESS:
        return
    name_err, name = driver.cuGetErrorName(error)
    if name_err != CUresult.CUDA_SUCCESS:
        raise CUDAError(f"UNEXPECTED ERROR CODE: {int(error)}")
    raise CUDAError(f"{name.decode()}: {_EXPLANATIONS.get(int(error), 'see the CUDA driver documentation')}")


def _check_error(error, handle=None):
    if isinstance(error, CUresult):
        _check_driver_error(error)
    else:
        raise RuntimeError(f"unknown error type {type(error).__name__}: {error!r}")


def handle_return(result, handle=None):
    """Checks the result tuple of a binding; returns its outputs."""
    _check_error(result[0], handle=handle)
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]


_EXPLANATIONS = {
    int(CUresult.CUDA_ERROR_INVALID_VALUE): "one or more of the parameters is not within its range",
    int(CUresult.CUDA_ERROR_OUT_OF_MEMORY): "the device cannot allocate enough memory",
    int(CUresult.CUDA_ERROR_INVALID_DEVICE): "the device ordinal is not a valid CUDA device",
    int(CUresult.CUDA_ERROR_INVALID_CONTEXT): "no context is bound to the calling thread",
    int(CUresult.CUDA_ERROR_INVALID_HANDLE): "the resource handle is not valid",
}


def check_or_create_options(cls, options, options_description, *, keep_none=False):
    """Returns options as a cls instance: None or a dict builds one."""
    if options is None:
        if keep_none:
            return options
        options = cls()
    elif isinstance(options, dict):
        options = cls(**options)
    if not isinstance(options, cls):
        raise TypeError(f"The {options_description} must be provided as an object of type {cls.__name__} "
                        f"or as a dict with valid {options_description}. The provided object is {options}.")
    return options


@dataclass
class StreamOptions:
    """How a stream is created: non-blocking, and its priority (None: default)."""

    nonblocking: bool = True
    priority: Optional[int] = None

    def __post_init__(self):
        if not isinstance(self.nonblocking, bool):
            raise TypeError(f"nonblocking must be a bool, not {type(self.nonblocking).__name__}")
        if self.priority is not None and not (-5 <= self.priority <= 0):
            raise ValueError(f"priority={self.priority} is out of range [-5, 0]")


class Stream:
    """A CUDA stream owned by Python: closed by close() or when collected."""

    class _MembersNeededForFinalize:
        __slots__ = ("handle", "owner", "builtin")

        def __init__(self, stream_obj, handle, owner, builtin):
            self.handle = handle
            self.owner = owner
            self.builtin = builtin
            weakref.finalize(stream_obj, self.close)

        def close(self):
            if self.owner is None:
                if self.handle and not self.builtin:
                    handle_return(driver.cuStreamDestroy(self.handle))
            else:
                self.owner = None
            self.handle = None

    __slots__ = ("__weakref__", "_mnff", "_nonblocking", "_priority", "_device_id")

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Stream objects cannot be instantiated directly; use Device.create_stream()")

    @classmethod
    def _init(cls, device_id, options=None):
        self = object.__new__(cls)
        self._mnff = Stream._MembersNeededForFinalize(self, None, None, False)
        options = check_or_create_options(StreamOptions, options, "Stream options")
        flags = CUstream_flags.CU_STREAM_NON_BLOCKING if options.nonblocking else CUstream_flags.CU_STREAM_DEFAULT
        self._mnff.handle = handle_return(driver.cuStreamCreate(flags))
        self._nonblocking = options.nonblocking
        self._priority = options.priority
        self._device_id = device_id
        return self

    @property
    def handle(self):
        return self._mnff.handle

    def close(self):
        self._mnff.close()


class Buffer:
    """Device memory allocated by a memory resource on a stream."""

    class _MembersNeededForFinalize:
        __slots__ = ("ptr", "size", "mr")

        def __init__(self, buffer_obj, ptr, size, mr):
            self.ptr = ptr
            self.size = size
            self.mr = mr
            weakref.finalize(buffer_obj, self.close)

        def close(self, stream=None):
            if self.ptr and self.mr is not None:
                self.mr.deallocate(self.ptr, self.size, stream)
                self.ptr = 0
                self.mr = None

    __slots__ = ("__weakref__", "_mnff")

    @classmethod
    def _init(cls, ptr, size, mr):
        self = object.__new__(cls)
        self._mnff = Buffer._MembersNeededForFinalize(self, ptr, size, mr)
        return self

    @property
    def handle(self):
        return self._mnff.ptr

    @property
    def size(self):
        return self._mnff.size

    def close(self, stream=None):
        """Frees the memory, stream-ordered on stream (default: the legacy stream)."""
        self._mnff.close(stream)


class _LegacyStream:
    handle = driver.CUstream(0)


class DeviceMemoryResource:
    """Stream-ordered allocation from the device's current memory pool."""

    def __init__(self, device_id):
        self._dev_id = device_id

    def allocate(self, size, stream=None):
        if stream is None:
            stream = _LegacyStream
        ptr = handle_return(driver.cuMemAllocAsync(size, stream.handle))
        return Buffer._init(ptr, size, self)

    def deallocate(self, ptr, size, stream=None):
        if stream is None:
            stream = _LegacyStream
        handle_return(driver.cuMemFreeAsync(ptr, stream.handle))

    @property
    def device_id(self):
        return self._dev_id


_tls = threading.local()
_init_lock = threading.Lock()
_initialized = False


def _init_driver():
    global _initialized
    with _init_lock:
        if not _initialized:
            handle_return(driver.cuInit(0))
            _initialized = True


class Device:
    """A CUDA device; one object per ordinal and thread, like cuda.core's."""

    __slots__ = ("_id", "_handle", "_ctx", "_mr")

    def __new__(cls, device_id=0):
        _init_driver()
        devices = getattr(_tls, "devices", None)
        if devices is None:
            devices = _tls.devices = {}
        dev = devices.get(device_id)
        if dev is None:
            handle = handle_return(driver.cuDeviceGet(device_id))
            dev = object.__new__(cls)
            dev._id = device_id
            dev._handle = handle
            dev._ctx = None
            dev._mr = DeviceMemoryResource(device_id)
            devices[device_id] = dev
        return dev

    @property
    def device_id(self):
        return self._id

    @property
    def memory_resource(self):
        return self._mr

    def set_current(self):
        """Makes the device's primary context current on this thread."""
        if self._ctx is None:
            self._ctx = handle_return(driver.cuDevicePrimaryCtxRetain(self._handle))
        handle_return(driver.cuCtxSetCurrent(self._ctx))

    def create_stream(self, obj=None, options=None):
        """Creates a Stream (options: None, a dict or a StreamOptions)."""
        if obj is not None:
            raise NotImplementedError("wrapping foreign streams is not part of this example")
        return Stream._init(self._id, options=options)

    def allocate(self, size, stream=None):
        return self._mr.allocate(size, stream)
