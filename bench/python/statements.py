#!/usr/bin/env python3
"""Times the seed statements with timeit, one process per tool.

  cudacore.create_stream   dev.create_stream()               (cuda.core)
  cudacore.allocate        mr.allocate(10, stream=s)          (cuda.core)
  cupy.Stream              cp.cuda.Stream()                   (CuPy)
  cupy.empty               cp.empty(10)                       (CuPy)
  minicore.create_stream   dev.create_stream()                (examples/python/minicore, ctypes)
  minicore.allocate        mr.allocate(10, stream=s)          (minicore)

Each statement is timed --repeat times with a fixed loop count (--numbers,
from the calibrating run; else calibrated here to --target seconds). The JSON
(--out) gives microseconds per call per repetition, their median, and the
CLOCK_MONOTONIC window (ns, the trace clock) of the timed loops, so that the
frames a cuprof trace holds for each statement can be picked by time.

  --tool none | cuprof | stacks   a label: cuprof attaches from outside
  --tool torchprof_stack          the timed loops run inside
                                  torch.profiler(activities=[CPU, CUDA], with_stack=True)

With --tool none each statement's body is timed too (body_us): perf_counter
read just before the statement and just after its value is made, the value
dropped only after the second read, less the cost of the two reads. That is
what the statement's own call costs, the time its frame's inclusive time
should match; timeit's time per statement also holds what happens after the
call returns, such as cuStreamDestroy when the stream dropped is destroyed
(about 2 us of cuda.core's create_stream on the H200).

Before the first repetition and after each, the speed probe (probe_ns: a
pure-Python loop, ns per iteration) is read, so that a slow spell of the
host can be told from a slow tool (summarize.py's calm statements).

A statement whose library is missing or which raises gets an error instead
of a time; the others still run. --only selects statements by id or prefix.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time
import timeit

from benchout import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from speedprobe import probe_ns, start_gate  # noqa: E402 - bench/lib, beside this folder
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "python")

# (id, library, statement, frame, module): frame is the qualname (its last
# component) of the wrapper frame whose inclusive time per call should match
# the statement's, module the prefix of its module (frames of unknown module
# match too).
STATEMENTS = [
    ("cudacore.create_stream", "cuda.core", "dev.create_stream()", "create_stream", "cuda"),
    ("cudacore.allocate", "cuda.core", "mr.allocate(10, stream=s)", "allocate", "cuda"),
    ("cupy.Stream", "cupy", "cp.cuda.Stream()", "Stream", "cupy"),
    ("cupy.empty", "cupy", "cp.empty(10)", "empty", "cupy"),
    ("minicore.create_stream", "minicore", "mdev.create_stream()", "create_stream", "minicore"),
    ("minicore.allocate", "minicore", "mmr.allocate(10, stream=ms)", "allocate", "minicore"),
]


def load(libs):
    """Imports the libraries asked for; returns (namespace, versions, errors)."""
    ns, versions, errors = {}, {}, {}
    if "cuda.core" in libs:
        try:
            try:
                from cuda.core import Device
            except ImportError:  # cuda.core before 1.0
                from cuda.core.experimental import Device
            import cuda.core

            dev = Device(0)
            dev.set_current()
            ns.update(dev=dev, mr=dev.memory_resource, s=dev.create_stream())
            versions["cuda.core"] = getattr(cuda.core, "__version__", "?")
        except Exception as e:  # noqa: BLE001 - any failure disables the library's statements
            errors["cuda.core"] = f"{type(e).__name__}: {e}"
    if "cupy" in libs:
        try:
            import cupy as cp

            cp.cuda.Device(0).use()
            cp.empty(1)
            ns["cp"] = cp
            versions["cupy"] = cp.__version__
        except Exception as e:  # noqa: BLE001
            errors["cupy"] = f"{type(e).__name__}: {e}"
    if "minicore" in libs:
        try:
            sys.path.insert(0, os.path.abspath(EXAMPLES))
            from minicore import core

            mdev = core.Device(0)
            mdev.set_current()
            ns.update(mdev=mdev, mmr=mdev.memory_resource, ms=mdev.create_stream())
            versions["minicore"] = "examples/python/minicore"
        except Exception as e:  # noqa: BLE001
            errors["minicore"] = f"{type(e).__name__}: {e}"
    return ns, versions, errors


BODY = """
def _body(_n, _pc):
    _tot = 0
    for _i in range(_n):
        _t0 = _pc()
        _r = {stmt}
        _t1 = _pc()
        _tot += _t1 - _t0
        del _r
    return _tot
"""


def body_timer(stmt, ns, pc=time.perf_counter_ns):
    """Returns body(n): ns in the statement itself per call over n calls,
    the value kept until after the second clock read (see the docstring),
    on clock pc."""
    run = {}
    exec(compile(BODY.format(stmt=stmt), "<body>", "exec"), ns, run)  # noqa: S102 - our own fixed statements
    empty = {}
    exec(compile(BODY.format(stmt="None"), "<body>", "exec"), ns, empty)  # noqa: S102

    def body(n):
        floor = min(empty["_body"](n, pc) for _ in range(3)) / n
        return run["_body"](n, pc) / n - floor

    return body


def calibrate(timer, target):
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target or number >= 10_000_000:
            return number
        guess = int(number * 1.2 * target / max(elapsed, 1e-9))
        number = max(number * 2, min(guess, number * 10))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", choices=["none", "cuprof", "stacks", "torchprof_stack"], default="none")
    ap.add_argument("--target", type=float, default=0.05, help="seconds per repetition when calibrating")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--numbers", default="", help="JSON {id: loop count} (from a calibrating run)")
    ap.add_argument("--only", default="", help="comma-separated statement ids or prefixes")
    ap.add_argument("--no-body", action="store_true", help="with --tool none: do not time the statements' bodies")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    start_probe = start_gate()  # before the libraries load: a slow start exits for a retry
    only = [s for s in a.only.split(",") if s]
    chosen = [st for st in STATEMENTS if not only or any(st[0] == o or st[0].startswith(o) for o in only)]
    numbers = json.loads(a.numbers) if a.numbers else {}

    t0 = time.perf_counter()
    ns, versions, errors = load({st[1] for st in chosen})
    prof = None
    if a.tool == "torchprof_stack":
        import torch
        from torch.profiler import ProfilerActivity, profile

        versions["torch"] = torch.__version__
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
        prof = profile(activities=acts, with_stack=True)
    setup_s = time.perf_counter() - t0

    results = []
    if prof is not None:
        prof.__enter__()
    for sid, lib, stmt, frame, module in chosen:
        row = {"id": sid, "library": lib, "statement": stmt, "frame": frame, "module": module}
        if lib in errors:
            row["error"] = f"{lib} unavailable: {errors[lib]}"
            results.append(row)
            continue
        try:
            timer = timeit.Timer(stmt, globals=ns)
            number = int(numbers.get(sid) or calibrate(timer, a.target))
            timer.timeit(max(1, number // 10))  # warm-up
            probes = [probe_ns()]
            w0 = time.monotonic_ns()
            times = []
            for _ in range(a.repeat):
                times.append(timer.timeit(number) / number * 1e6)
                probes.append(probe_ns())
            w1 = time.monotonic_ns()
            row.update(number=number, repeat=a.repeat, us_per_call=times, median_us=statistics.median(times),
                       min_us=min(times), window_ns=[w0, w1], calls=number * a.repeat, probe_ns=probes)
            if a.tool == "none" and not a.no_body:
                body = body_timer(stmt, ns)
                bodies = [body(number) / 1000 for _ in range(a.repeat)]
                row.update(body_us_per_call=bodies, body_median_us=statistics.median(bodies))
        except Exception as e:  # noqa: BLE001 - one failing statement must not stop the rest
            row["error"] = f"{type(e).__name__}: {e}"
        results.append(row)
    if prof is not None:
        t_stop = time.perf_counter()
        prof.__exit__(None, None, None)
        setup_s += time.perf_counter() - t_stop

    doc = {"suite": "python-statements", "tool": a.tool, "python": platform.python_version(),
           "versions": versions, "library_errors": errors, "setup_s": setup_s, "pid": os.getpid(),
           "start_probe_ns": start_probe, "results": results}
    write_json(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
