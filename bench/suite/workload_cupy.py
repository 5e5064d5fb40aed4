#!/usr/bin/env python3
"""A CuPy array pipeline: the second realistic workload of cuprof's suite.

Each iteration makes a random signal, filters it with elementwise kernels and
an FFT, sorts it, reduces it and reads a scalar back (a synchronize). Every
--stream-every iterations the work moves to a new non-blocking stream, as
pipelines that overlap batches do. Timed in --segments equal segments like
workload_torch.py; --seconds calibrates, --steps fixes the iteration count.
--tool torchprof (torchprof_stack) wraps the timed segments in torch.profiler
(CPU+CUDA; with_stack=True) when PyTorch is installed; any other value is a
label (cuprof attaches from outside the process).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from speedprobe import probe_ns, start_gate  # noqa: E402 - bench/lib: the host's speed between segments


def iteration(cp, n, i):
    x = cp.random.random(n, dtype=cp.float32)
    y = cp.sin(x * 6.2831853) * 2.0 + cp.sqrt(x)
    f = cp.fft.rfft(y)
    f[n // 8 :] = 0
    z = cp.fft.irfft(f, n)
    s = cp.sort(z)
    return float(s[n // 2] + z.mean() + i * 0.0)


def run(cp, n, first, count, stream_every):
    last = None
    stream = None
    for i in range(first, first + count):
        if stream_every and i % stream_every == 0:
            stream = cp.cuda.Stream(non_blocking=True)
        if stream is not None:
            with stream:
                last = iteration(cp, n, i)
        else:
            last = iteration(cp, n, i)
    return last


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="none")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--segments", type=int, default=5)
    ap.add_argument("--size", type=int, default=1 << 18)
    ap.add_argument("--stream-every", type=int, default=100)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    start_probe = start_gate()  # before cupy loads: a slow start exits for a retry

    t_start = time.perf_counter()
    import cupy as cp

    cp.cuda.Device(0).use()
    cp.random.seed(0)
    step = 0
    run(cp, args.size, step, 20, args.stream_every)  # warm-up: kernel compilation, FFT plans, pool
    step += 20
    cp.cuda.runtime.deviceSynchronize()
    steps = args.steps
    calibration = None
    if steps <= 0:
        t0 = time.perf_counter()
        run(cp, args.size, step, 100, args.stream_every)
        per_step = (time.perf_counter() - t0) / 100
        step += 100
        steps = max(args.segments, int(args.seconds / per_step))
        calibration = {"per_step_s": per_step, "target_s": args.seconds}
    per_segment = max(1, steps // args.segments)
    steps = per_segment * args.segments
    setup_s = time.perf_counter() - t_start

    prof = None
    if args.tool in ("torchprof", "torchprof_stack"):
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       with_stack=args.tool == "torchprof_stack")
        prof.__enter__()
    segments = []
    last = None
    probes = [probe_ns()]  # segment k lies between readings k and k+1
    for _ in range(args.segments):
        t0 = time.perf_counter()
        last = run(cp, args.size, step, per_segment, args.stream_every)
        cp.cuda.runtime.deviceSynchronize()
        segments.append(time.perf_counter() - t0)
        probes.append(probe_ns())
        step += per_segment
    events = None
    stop_s = None
    if prof is not None:
        t0 = time.perf_counter()
        prof.__exit__(None, None, None)
        stop_s = time.perf_counter() - t0
        try:
            events = len(prof.profiler.kineto_results.events())
        except Exception:  # noqa: BLE001 - private path moved: use the public one
            events = len(prof.events())

    doc = {
        "suite": "workload",
        "workload": "cupy_pipeline",
        "tool": args.tool,
        "cupy": cp.__version__,
        "steps": steps,
        "segments": args.segments,
        "segment_s": segments,
        "probe_ns": probes,
        "start_probe_ns": start_probe,
        "median_segment_s": statistics.median(segments),
        "work_s": sum(segments),
        "setup_s": setup_s,
        "calibration": calibration,
        "profiler_stop_s": stop_s,
        "events": events,
        "last_value": last,
        "pid": os.getpid(),
        "config": {"size": args.size, "stream_every": args.stream_every},
    }
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
