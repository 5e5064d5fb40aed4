"""The wrapper-overhead seed on ctypes: minicore.core (options object,
weakref.finalize per object, handle_return after every driver call, in the
style of cuda.core 0.3) against minicore.lean (the same driver calls, one
integer check each). Same table as the other seed scripts; the difference
between a heavy and a lean row is the wrapper's own time, since both make
the same driver calls.

    python3 wrappers_ctypes.py [-n 1000] [--json FILE]
    cuprof record --sim -- python3 wrappers_ctypes.py     # no GPU needed
    cuprof record -- python3 wrappers_ctypes.py           # on a GPU machine

Each variant is a module-level function (lean_stream, heavy_stream, ...):
under cuprof their frames hold the driver calls, and their inclusive time per
call is what this script measures with time.perf_counter_ns.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _percall import header, measure, row  # noqa: E402
from minicore import core, lean  # noqa: E402


def lean_stream():
    lean.stream_destroy(lean.stream_create())


def heavy_stream():
    s = DEV.create_stream()
    s.close()


def heavy_stream_options():
    s = DEV.create_stream(options=core.StreamOptions(nonblocking=True))
    s.close()


def heavy_stream_finalized():
    DEV.create_stream()  # collected at once: the finalizer destroys it


def lean_alloc():
    lean.free(lean.alloc(10, LEAN_STREAM), LEAN_STREAM)


def heavy_alloc():
    buf = DEV.memory_resource.allocate(10, stream=STREAM)
    buf.close(STREAM)


# (function, row label) in the order printed; heavy rows follow their lean one.
VARIANTS = [
    (lean_stream, "lean: stream_create + stream_destroy"),
    (heavy_stream, "heavy: dev.create_stream() + close()"),
    (heavy_stream_options, "heavy: create_stream(options=...) + close()"),
    (heavy_stream_finalized, "heavy: create_stream(), finalizer destroys"),
    (lean_alloc, "lean: alloc(10, s) + free"),
    (heavy_alloc, "heavy: mr.allocate(10, stream=s) + close(s)"),
]

DEV = STREAM = LEAN_STREAM = None


def show_errors(ordinal):
    """Makes each wrapper take its error path once (an invalid device, on
    purpose: the trace then shows what each wrapper's check costs)."""
    for name, fn in (("heavy", lambda: core.Device(ordinal)), ("lean", lambda: lean.device_get(ordinal))):
        try:
            fn()
        except (core.CUDAError, lean.CUDAError) as e:
            str(e)  # the message, as a caller would build it: the lean error looks its code's name up
            print(f"{name} wrapper: device {ordinal} refused, as this seed means it to be "
                  f"({type(e).__module__}.{type(e).__name__} raised; the check's cost is in the trace)")
        else:
            print(f"{name} wrapper: device {ordinal} was not refused (unexpected)")


def main(argv=None):
    global DEV, STREAM, LEAN_STREAM
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1000, help="timed calls per variant")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--json", help="also write the per-variant times (ns) to this file")
    a = ap.parse_args(argv)
    if a.n <= 0 or a.warmup < 0:
        ap.error("-n must be positive and --warmup not negative")

    DEV = core.Device(a.device)
    DEV.set_current()
    lean.init()
    lean.set_current(lean.device_get(a.device))
    STREAM = DEV.create_stream()
    LEAN_STREAM = lean.stream_create()
    show_errors(9999)
    print(f"device {a.device} (ctypes, libcuda.so.1), {a.n} calls per variant\n")
    header()
    results = []
    for fn, label in VARIANTS:
        r = measure(label, fn, a.n, a.warmup)
        r["function"] = fn.__name__
        results.append(r)
        row(r)
    STREAM.close()
    lean.stream_destroy(LEAN_STREAM)
    by = {r["function"]: r for r in results}
    print()
    for heavy, light in (("heavy_stream", "lean_stream"), ("heavy_alloc", "lean_alloc")):
        d = by[heavy]["p50"] - by[light]["p50"]
        print(f"{heavy} - {light}: {d / 1000:+.2f}us per call at the median (the wrapper's own time; same driver calls)")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"python": sys.version.split()[0], "calls": a.n, "variants": results}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
