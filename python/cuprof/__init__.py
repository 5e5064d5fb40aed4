"""Start and stop cuprof's capture ranges from the program.

Under ``cuprof record --capture-range=profiler-api`` the shim records only
between ``start()`` and ``stop()`` (or inside ``with capture(name):``), as it
does between cuProfilerStart and cuProfilerStop. The module reaches the
preloaded shim through its C ABI (``cuprof_capture_start``,
``cuprof_capture_stop``, ``cuprof_capture_mode``) with ctypes: nothing is
compiled. Without ``cuprof record``, or under another capture mode, every call
does nothing and the first one warns once.

``%load_ext cuprof`` in IPython adds ``%cuprof STATEMENT`` and ``%%cuprof
[NAME]`` (load_ipython_extension).
"""

import contextlib
import ctypes
import threading
import warnings

__all__ = ["start", "stop", "capture", "recording", "mode", "load_ipython_extension"]

_lock = threading.Lock()
_abi = None  # (start, stop, mode, active) or False when the shim is absent
_warned = False

# What cuprof_capture_mode returns.
_MODES = {0: "all", 1: "profiler-api", 2: "nvtx", 3: "window"}


def _shim():
    global _abi
    if _abi is None:
        with _lock:
            if _abi is None:
                try:
                    lib = ctypes.CDLL(None)
                    start = lib.cuprof_capture_start
                    stop = lib.cuprof_capture_stop
                    mode_fn = lib.cuprof_capture_mode
                    active = lib.cuprof_active
                except (AttributeError, OSError):
                    _abi = False
                else:
                    start.argtypes, start.restype = [ctypes.c_char_p], ctypes.c_int
                    stop.argtypes, stop.restype = [], ctypes.c_int
                    mode_fn.argtypes, mode_fn.restype = [], ctypes.c_int
                    active.argtypes, active.restype = [], ctypes.c_int
                    _abi = (start, stop, mode_fn, active)
    return _abi


def _warn(why):
    global _warned
    if not _warned:
        _warned = True
        warnings.warn("cuprof: %s; cuprof.start/stop/capture do nothing" % why, RuntimeWarning, stacklevel=4)


def recording():
    """True when this process runs under ``cuprof record``."""
    abi = _shim()
    return bool(abi) and abi[3]() == 1


def mode():
    """How the process is recorded: None (not recorded), "all" (everything),
    "profiler-api" (start/stop decide), "nvtx" or "window"."""
    abi = _shim()
    if not abi or abi[3]() != 1:
        return None
    return _MODES.get(abi[2](), "all")


def _edge(on, name):
    abi = _shim()
    if not abi:
        _warn("this process is not recorded (run it under cuprof record --capture-range=profiler-api)")
        return False
    r = abi[0](name.encode("utf-8", "replace")[:255] if name else None) if on else abi[1]()
    if r == 1:
        return True
    if r < 0:
        _warn("this process is not recorded (run it under cuprof record --capture-range=profiler-api)")
    elif abi[2]() == 0:
        _warn("cuprof record records everything here (give it --capture-range=profiler-api)")
    else:
        _warn("cuprof record was given --capture-range=%s, not profiler-api" % _MODES.get(abi[2](), "?"))
    return False


def start(name=None):
    """Open a capture range (named ``name``, else "cuprof.start"); True when
    the shim opened one, False when this does nothing."""
    return _edge(True, name)


def stop():
    """Close the capture range; True when the shim closed one."""
    return _edge(False, None)


class capture(contextlib.ContextDecorator):
    """``with cuprof.capture("name"):`` (or ``@cuprof.capture("name")``)
    records the block as one capture range."""

    def __init__(self, name=None):
        self.name = name

    def __enter__(self):
        start(self.name)
        return self

    def __exit__(self, *exc):
        stop()
        return False


def load_ipython_extension(ipython):
    """``%load_ext cuprof``: ``%cuprof STATEMENT`` runs one statement under
    capture, ``%%cuprof [NAME]`` the cell."""

    def cuprof_magic(line, cell=None):
        if cell is None:
            with capture("%cuprof " + line.strip()):
                return ipython.run_cell(line)
        with capture(line.strip() or "%%cuprof"):
            return ipython.run_cell(cell)

    ipython.register_magic_function(cuprof_magic, magic_kind="line_cell", magic_name="cuprof")
