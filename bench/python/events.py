#!/usr/bin/env python3
"""Cost per Python call and per Python event of the Python-level profilers.

Two loops, each timed per call with time.perf_counter_ns:

  call    an empty Python function, called --calls times: code that never
          reaches the driver (cuprof should not tax it for long);
  chain   a chain of --depth nested Python calls whose innermost one calls the
          driver once through ctypes (cuCtxGetCurrent): every frame is on a
          path to CUDA, so a tracer that keeps them pays for each.

Under --tool none the process measures, interleaved over --rounds rounds,
  bare            nothing attached
  cprofile        cProfile.Profile().enable()
  setprofile_py   sys.setprofile with a Python no-op function
  setprofile_c    PyEval_SetProfile with a C no-op (--noop-lib, built from
                  noop_hook.c; skipped without it)
  monitoring_c    3.12+: sys.monitoring PY_START/PY_RETURN with a C no-op
                  (METH_FASTCALL, from --noop-lib) as the callback: the
                  floor of a C monitoring tool
  torchprof_stack torch.profiler(activities=[CPU, CUDA], with_stack=True)
                  (skipped without torch)
Under --tool cuprof or stacks (run under `cuprof record`) it measures only
"bare", which is then cuprof's cost; run.sh compares it with the bare rounds
of the --tool none processes. Per Python call = added time per loop call /
Python calls in it (1 for call, depth+1 for chain, the ctypes call counted);
per event = per call / 2 (an entry and an exit). JSON to --out.
"""

import argparse
import ctypes
import os
import platform
import statistics
import sys
import time

from benchout import write_json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from speedprobe import start_gate  # noqa: E402 - bench/lib: a slow start exits for a retry


def empty():
    pass


def make_chain(depth, leaf):
    """Returns f(depth) calling itself down to 0, where leaf() is called."""

    def chain(n):
        if n:
            return chain(n - 1)
        return leaf()

    return chain


def driver_leaf():
    lib = ctypes.CDLL(os.environ.get("CUPROF_EXAMPLE_LIBCUDA") or "libcuda.so.1")
    lib.cuInit.argtypes = [ctypes.c_uint]
    r = lib.cuInit(0)
    if r:
        raise RuntimeError(f"cuInit returned {r}")
    get = lib.cuCtxGetCurrent
    get.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    out = ctypes.c_void_p()
    ref = ctypes.byref(out)
    return lambda: get(ref)


def time_call(n):
    f = empty
    t0 = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - t0) / n


def time_chain(chain, depth, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        chain(depth)
    return (time.perf_counter_ns() - t0) / n


class Mode:
    """One way of attaching a profiler in this process: start() and stop()."""

    def __init__(self, name, start, stop, note=""):
        self.name, self.start, self.stop, self.note = name, start, stop, note


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


_keep = []


def c_noop_builtin(noop_lib):
    """A builtin whose C function (noop_hook.c) returns None: METH_FASTCALL."""
    lib = ctypes.CDLL(noop_lib)
    md = _MethodDef(b"noop", ctypes.cast(lib.cuprof_bench_noop_fast, ctypes.c_void_p).value, 0x80, None)
    new = ctypes.pythonapi.PyCFunction_NewEx
    new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
    new.restype = ctypes.py_object
    f = new(ctypes.addressof(md), None, None)
    _keep.append((lib, md))  # the method definition must outlive the builtin
    return f


def modes(noop_lib, skip):
    out = [Mode("bare", lambda: None, lambda: None)]
    import cProfile

    holder = {}

    def cp_start():
        holder["p"] = cProfile.Profile()
        holder["p"].enable()

    out.append(Mode("cprofile", cp_start, lambda: holder.pop("p").disable()))

    def noop(frame, event, arg):
        pass

    out.append(Mode("setprofile_py", lambda: sys.setprofile(noop), lambda: sys.setprofile(None)))
    if noop_lib:
        lib = ctypes.CDLL(noop_lib)
        addr = ctypes.cast(lib.cuprof_bench_noop_hook, ctypes.c_void_p).value
        setp = ctypes.pythonapi.PyEval_SetProfile
        setp.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        setp.restype = None
        out.append(Mode("setprofile_c", lambda: setp(addr, None), lambda: setp(None, None)))
    if sys.version_info >= (3, 12):
        mon = sys.monitoring
        cb = c_noop_builtin(noop_lib) if noop_lib else None
        tool = next((t for t in range(5, 0, -1) if mon.get_tool(t) is None), None)
        if cb is not None and tool is not None:
            def m_start():
                mon.use_tool_id(tool, "cuprof-bench")
                mon.register_callback(tool, mon.events.PY_START, cb)
                mon.register_callback(tool, mon.events.PY_RETURN, cb)
                mon.set_events(tool, mon.events.PY_START | mon.events.PY_RETURN)

            def m_stop():
                mon.set_events(tool, 0)
                mon.register_callback(tool, mon.events.PY_START, None)
                mon.register_callback(tool, mon.events.PY_RETURN, None)
                mon.free_tool_id(tool)

            out.append(Mode("monitoring_c", m_start, m_stop))
    if "torchprof_stack" not in skip:
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])

            def t_start():
                holder["t"] = profile(activities=acts, with_stack=True)
                holder["t"].__enter__()

            out.append(Mode("torchprof_stack", t_start, lambda: holder.pop("t").__exit__(None, None, None)))
        except ImportError:
            pass
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", choices=["none", "cuprof", "stacks"], default="none")
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--chains", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--noop-lib", help="shared library built from noop_hook.c")
    ap.add_argument("--skip", default="", help="comma-separated modes to leave out")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    start_probe = start_gate()
    if min(a.calls, a.depth, a.chains, a.rounds) <= 0:
        ap.error("--calls, --depth, --chains and --rounds must be positive")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), a.depth + 100))
    skip = {s for s in a.skip.split(",") if s}
    leaf = driver_leaf()
    chain = make_chain(a.depth, leaf)
    ms = [m for m in modes(a.noop_lib, skip) if m.name not in skip]
    if a.tool != "none":
        ms = ms[:1]
    # Warm-up outside any window (caches, specialization).
    time_call(a.calls // 10)
    time_chain(chain, a.depth, a.chains // 10)
    per = {m.name: {"call_ns": [], "chain_ns": [], "windows_ns": []} for m in ms}
    for _ in range(a.rounds):
        for m in ms:
            m.start()
            try:
                w0 = time.monotonic_ns()
                c = time_call(a.calls)
                w1 = time.monotonic_ns()
                h = time_chain(chain, a.depth, a.chains)
                w2 = time.monotonic_ns()
            finally:
                m.stop()
            per[m.name]["call_ns"].append(c)
            per[m.name]["chain_ns"].append(h)
            per[m.name]["windows_ns"].append([w0, w1, w2])
    for v in per.values():
        for k in ("call", "chain"):
            xs = v[k + "_ns"]
            v[k + "_median_ns"] = statistics.median(xs)
            v[k + "_spread_ns"] = (max(xs) - min(xs)) / 2
    doc = {"suite": "python-events", "tool": a.tool, "python": platform.python_version(),
           "implementation": platform.python_implementation(), "pid": os.getpid(),
           "calls": a.calls, "depth": a.depth, "chains": a.chains, "rounds": a.rounds,
           "python_calls_per_chain": a.depth + 1, "start_probe_ns": start_probe, "modes": per}
    write_json(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
