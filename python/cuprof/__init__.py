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

``pass_through(*apis)`` changes, while the program runs, which driver APIs
pass through unrecorded (counted, not timed), as ``cuprof record
--pass-through`` sets them at start (``cuprof_pass_through``);
``passing_through(*apis)`` does it for a block; ``passed_through()`` says
which do now.
"""

__version__ = "0.2.0"

import contextlib
import ctypes
import threading
import warnings

__all__ = ["__version__", "start", "stop", "capture", "recording", "mode", "pass_through", "passed_through", "passing_through",
           "load_ipython_extension"]

_lock = threading.Lock()
_abi = None  # (start, stop, mode, active, pass, pass_list) or False when the shim is absent
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
                    # a shim older than the runtime pass-through lacks these
                    pass_fn = getattr(lib, "cuprof_pass_through", None)
                    list_fn = getattr(lib, "cuprof_pass_through_list", None)
                    if pass_fn is not None and list_fn is not None:
                        pass_fn.argtypes, pass_fn.restype = [ctypes.c_char_p], ctypes.c_int
                        list_fn.argtypes, list_fn.restype = [ctypes.c_char_p, ctypes.c_size_t], ctypes.c_int
                    else:
                        pass_fn = list_fn = None
                    _abi = (start, stop, mode_fn, active, pass_fn, list_fn)
    return _abi


def _warn(why):
    global _warned
    if not _warned:
        _warned = True
        warnings.warn("cuprof: %s; cuprof.start/stop/capture/pass_through do nothing" % why, RuntimeWarning, stacklevel=4)


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


# cuprof_pass_through_list's answer when the buffer is too small
# (CUPROF_PASS_TOO_SMALL in cuprof.h).
_PASS_TOO_SMALL = -5

# What cuprof_pass_through returns on an error.
_PASS_ERRORS = {
    -2: "no driver API of that name in cuprof's API table (give base names such as cuCtxGetDevice)",
    -3: "it creates, destroys, retains or releases an object or switches the context: "
        "cuprof follows objects and contexts through those, so they cannot pass through",
    -4: "called from a signal handler during a change",
}


def _pass_abi():
    abi = _shim()
    if not abi or abi[3]() != 1:
        _warn("this process is not recorded (run it under cuprof record)")
        return None
    if abi[4] is None:
        _warn("the cuprof shim loaded here is too old for pass_through")
        return None
    return abi


def passed_through():
    """The driver APIs that pass through unrecorded now, as a tuple of base
    names in the API table's order; None when the process is not recorded."""
    abi = _pass_abi()
    if abi is None:
        return None
    size = 4096
    while True:
        buf = ctypes.create_string_buffer(size)
        n = abi[5](buf, size)
        if n == _PASS_TOO_SMALL:
            size *= 4
            continue
        if n < 0:
            return None
        return tuple(x for x in buf.value.decode("ascii").split(",") if x)


def pass_through(*apis):
    """Hand the calls of ``apis`` (base names of cuprof's API table, such as
    "cuCtxGetStreamPriorityRange") to the driver unrecorded from now on, in
    place of the APIs passed through before; ``pass_through()`` records
    every call again. The calls are counted, not timed: their time is their
    callers' (a Python frame's self time), and the trace holds their counts
    at each change. Returns the tuple of APIs passed through before, so
    ``pass_through(*old)`` puts it back; None (and a warning, once) when the
    process is not recorded. Raises ValueError for a name the table lacks
    and for an API that creates, destroys or switches objects or contexts.
    """
    names = []
    for a in apis:
        if not isinstance(a, str):
            raise TypeError("cuprof.pass_through wants API names (str), got %r" % (a,))
        names.extend(x.strip() for x in a.split(",") if x.strip())
    before = passed_through()
    if before is None:
        return None
    abi = _shim()
    r = abi[4](",".join(names).encode("ascii", "replace"))
    if r < 0:
        if r == -1:
            _warn("this process is not recorded (run it under cuprof record)")
            return None
        raise ValueError("cuprof.pass_through(%s): %s" % (", ".join(repr(n) for n in names),
                                                           _PASS_ERRORS.get(r, "error %d" % r)))
    return before


class passing_through(contextlib.ContextDecorator):
    """``with cuprof.passing_through("cuCtxGetDevice"):`` passes those APIs
    through inside the block (in place of the set before it) and puts the
    set before it back at its end."""

    def __init__(self, *apis):
        self.apis = apis
        self._before = None

    def __enter__(self):
        self._before = pass_through(*self.apis)
        return self

    def __exit__(self, *exc):
        if self._before is not None:
            pass_through(*self._before)
        return False


def load_ipython_extension(ipython):
    """``%load_ext cuprof``: ``%cuprof STATEMENT`` runs one statement under
    capture, ``%%cuprof [NAME]`` the cell."""

    # The statement or cell runs as IPython runs any cell (its value is
    # displayed as Out[n]); the magic itself returns None, so that IPython
    # does not display run_cell's ExecutionResult after it.
    def cuprof_magic(line, cell=None):
        if cell is None:
            with capture("%cuprof " + line.strip()):
                ipython.run_cell(line)
            return None
        with capture(line.strip() or "%%cuprof"):
            ipython.run_cell(cell)
        return None

    ipython.register_magic_function(cuprof_magic, magic_kind="line_cell", magic_name="cuprof")
