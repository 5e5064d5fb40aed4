#!/usr/bin/env python3
"""A CPU-only workload for bench/python: Python work around driver calls.

Each step does what a small pipeline's host side does: some pure-Python
bookkeeping (building and sorting a few hundred records: code that never
reaches the driver), then through examples/python/minicore (ctypes, the
cuda.core 0.3 style) a stream, --buffers allocations on it, their frees and
the stream's close. It needs only a libcuda.so.1, so it runs on cuprof's
simulated driver; on the GPU it is a third workload beside the torch and
CuPy ones. Same JSON as bench/suite's workloads (segments, median segment);
--seconds calibrates, --steps fixes the step count.
"""

import argparse
import os
import statistics
import sys
import time

from benchout import write_json

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))


def bookkeeping(i, n):
    recs = [{"id": (i * 7919 + k * 104729) % 1000003, "size": 64 << (k % 8)} for k in range(n)]
    recs.sort(key=lambda r: r["id"])
    return sum(r["size"] for r in recs[: n // 2])


def step(dev, i, buffers, records):
    total = bookkeeping(i, records)
    s = dev.create_stream()
    bufs = [dev.memory_resource.allocate(256 + 64 * k, stream=s) for k in range(buffers)]
    for b in bufs:
        b.close(s)
    s.close()
    return total


def run(dev, first, count, buffers, records):
    last = None
    for i in range(first, first + count):
        last = step(dev, i, buffers, records)
    return last


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="none")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--segments", type=int, default=5)
    ap.add_argument("--buffers", type=int, default=4)
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--out")
    a = ap.parse_args(argv)

    t_start = time.perf_counter()
    from minicore import core

    dev = core.Device(0)
    dev.set_current()
    i = 0
    run(dev, i, 20, a.buffers, a.records)
    i += 20
    steps, calibration = a.steps, None
    if steps <= 0:
        t0 = time.perf_counter()
        run(dev, i, 100, a.buffers, a.records)
        per = (time.perf_counter() - t0) / 100
        i += 100
        steps = max(a.segments, int(a.seconds / per))
        calibration = {"per_step_s": per, "target_s": a.seconds}
    per_segment = max(1, steps // a.segments)
    steps = per_segment * a.segments
    setup_s = time.perf_counter() - t_start
    prof = None
    if a.tool in ("torchprof", "torchprof_stack"):
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU], with_stack=a.tool == "torchprof_stack")
        prof.__enter__()
    segments, last = [], None
    for _ in range(a.segments):
        t0 = time.perf_counter()
        last = run(dev, i, per_segment, a.buffers, a.records)
        segments.append(time.perf_counter() - t0)
        i += per_segment
    if prof is not None:
        prof.__exit__(None, None, None)
    doc = {"suite": "workload", "workload": "minicore", "tool": a.tool, "steps": steps, "segments": a.segments,
           "segment_s": segments, "median_segment_s": statistics.median(segments), "work_s": sum(segments),
           "setup_s": setup_s, "calibration": calibration, "last_value": last, "pid": os.getpid(),
           "config": {"buffers": a.buffers, "records": a.records}}
    write_json(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
