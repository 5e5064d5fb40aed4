"""Wrappers of different shapes around the same driver calls, for
bench/python/accuracy.py: each makes one cuStreamCreate and one
cuStreamDestroy through minicore's ctypes bindings, as minicore.lean does,
and differs from it only in the Python around the calls.

  deep     a stack of 12 wrapper layers (a decorator's, a method's, a
           classmethod's) above each call;
  chatty   40 cheap Python calls (accessors, a validator, a dict lookup)
           between the two driver calls;
  genexc   the calls made inside a generator that yields the handle, with
           a context manager around them and an exception raised and caught
           on the path (an error check that fails softly every call).
"""

import functools

from minicore import lean


# ---- deep: 12 layers above each driver call ----

def _layer(f):
    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapped


def _nest(f, depth):
    for _ in range(depth):
        f = _layer(f)
    return f


class _DeepStream:
    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    @classmethod
    def make(cls):
        return cls(_create())

    def close(self):
        _destroy(self.handle)
        self.handle = None


_create = _nest(lean.stream_create, 10)
_destroy = _nest(lean.stream_destroy, 10)


def deep():
    _DeepStream.make().close()


# ---- chatty: many cheap calls between the driver calls ----

class _Options:
    __slots__ = ("flags", "priority")

    def __init__(self, flags=1, priority=0):
        self.flags = flags
        self.priority = priority

    def get_flags(self):
        return self.flags

    def get_priority(self):
        return self.priority


_TABLE = {i: i * 2 for i in range(64)}


def _lookup(k):
    return _TABLE.get(k & 63, 0)


def _valid(v):
    return v >= 0


def chatty():
    o = _Options()
    acc = 0
    for i in range(10):
        acc += _lookup(i) + o.get_priority()
        if not _valid(acc):
            raise ValueError(acc)
    s = lean.stream_create(o.get_flags())
    for i in range(8):
        acc += _lookup(acc + i)
    lean.stream_destroy(s)
    return acc


# ---- genexc: generators, a context manager and exceptions on the path ----

class _SoftError(Exception):
    pass


def _check(handle):
    if handle:
        raise _SoftError(handle)  # "not an error": caught below


class _Scope:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _streams(n):
    for _ in range(n):
        s = lean.stream_create()
        try:
            _check(s)
        except _SoftError:
            pass
        yield s
        lean.stream_destroy(s)


def genexc():
    with _Scope():
        for _ in _streams(1):
            pass
