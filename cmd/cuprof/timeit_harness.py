# cuprof timeit's harness: times one statement the way Python's timeit does
# (setup and the loop compiled into one function, time.perf_counter), with a
# capture range around the timed loop only when cuprof records it.
#
#   python3 harness.py CONFIG.json INDEX autorange   -> {"number": N}
#   python3 harness.py CONFIG.json INDEX time N      -> {"seconds": T, "outer_ns": O, "cpu_seconds": C}
#
# T is the timed loop's time (time.perf_counter, as timeit); O is the time
# from just before the capture range opens to just after it closes
# (time.monotonic_ns), so T <= the recorded range <= O on one clock; C is
# the loop's CPU time on its thread (time.thread_time: what a loaded
# machine's waits leave out).
#
# CONFIG.json: {"setup": [...], "stmts": [...]}. The result is the last line
# of standard output.
import ctypes
import itertools
import json
import os
import sys
import textwrap
import time
import timeit


def capture_abi():
    """The shim's start and stop when cuprof records this process."""
    try:
        lib = ctypes.CDLL(None)
        start, stop, active = lib.cuprof_capture_start, lib.cuprof_capture_stop, lib.cuprof_active
    except (AttributeError, OSError):
        return None
    start.argtypes, start.restype = [ctypes.c_char_p], ctypes.c_int
    stop.restype = ctypes.c_int
    if active() != 1:
        return None
    return start, stop


def inner_function(setup, stmt, name):
    src = "def inner(_it, _timer, _start, _stop, _name, _mono, _cpu):\n"
    src += textwrap.indent(setup or "pass", "    ") + "\n"
    src += "    _m0 = _mono()\n    _start(_name)\n    _c0 = _cpu()\n    _t0 = _timer()\n    for _i in _it:\n"
    src += textwrap.indent(stmt or "pass", "        ") + "\n"
    src += "    _t1 = _timer()\n    _c1 = _cpu()\n    _stop()\n    _m1 = _mono()\n"
    src += "    return _t1 - _t0, _m1 - _m0, _c1 - _c0\n"
    ns = {}
    exec(compile(src, "<cuprof timeit>", "exec"), ns)
    return ns["inner"]


def main():
    # As python -m timeit: the working directory first on the path, not the
    # harness's own directory.
    sys.path[0] = os.getcwd()
    with open(sys.argv[1], encoding="utf-8") as f:
        cfg = json.load(f)
    i = int(sys.argv[2])
    setup = "\n".join(cfg["setup"])
    stmt = cfg["stmts"][i]
    if sys.argv[3] == "autorange":
        number, _ = timeit.Timer(stmt, setup).autorange()
        print(json.dumps({"number": number}))
        return 0
    number = int(sys.argv[4])
    abi = capture_abi()
    if abi:
        start, stop = abi
    else:
        start = stop = lambda *a: 0
    inner = inner_function(setup, stmt, None)
    secs, outer, cpu = inner(itertools.repeat(None, number), time.perf_counter, start, stop,
                             ("stmt %d" % (i + 1)).encode(), time.monotonic_ns, time.thread_time)
    print(json.dumps({"seconds": secs, "outer_ns": outer, "cpu_seconds": cpu}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
