#!/usr/bin/env python3
"""Times the seed statements of cuprof's benchmark suite with timeit.

The statements are the small object operations CUDA library authors asked
about (cuda.core, CuPy, cuda.bindings, PyTorch). Each is calibrated so that one
repetition lasts about --target seconds, then timed --repeat times; the JSON
written to --out (or stdout) gives microseconds per call: every repetition,
their minimum and median.

  --tool none       bare
  --tool cuprof     the same statements; run this script under `cuprof record`
  --tool torchprof  the torch statements only, each inside torch.profiler
                    (CPU and CUDA activities)

A statement whose library is missing or which raises is reported with its
error instead of a time; the others still run.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time
import timeit

# (id, library, statement) in the order of the seed table.
STATEMENTS = [
    ("cudacore.allocate", "cuda.core", "mr.allocate(10, stream=dev.default_stream)"),
    ("cudacore.allocate_sync", "cuda.core", "mr.allocate(10, stream=dev.default_stream); dev.sync()"),
    ("cudacore.create_stream", "cuda.core", "dev.create_stream()"),
    ("cudacore.set_current", "cuda.core", "dev.set_current()"),
    ("cudacore.Device", "cuda.core", "Device()"),
    ("cupy.empty", "cupy", "cp.empty(10, dtype=cp.int8)"),
    ("cupy.empty_sync", "cupy", "cp.empty(10, dtype=cp.int8); cp.cuda.runtime.deviceSynchronize()"),
    ("cupy.Stream", "cupy", "cp.cuda.Stream()"),
    ("bindings.malloc_free_async", "cuda.bindings",
     "_, p = cudart.cudaMallocAsync(10, s0); cudart.cudaFreeAsync(p, s0)"),
    ("bindings.malloc_free_async_sync", "cuda.bindings",
     "_, p = cudart.cudaMallocAsync(10, s0); cudart.cudaFreeAsync(p, s0); cudart.cudaDeviceSynchronize()"),
    ("torch.empty", "torch", "torch.empty(10, device='cuda')"),
    ("torch.Stream", "torch", "torch.cuda.Stream()"),
    ("torch.Event", "torch", "torch.cuda.Event()"),
    ("torch.set_device", "torch", "torch.cuda.set_device(0)"),
]


def load_libraries():
    """Imports each library and builds the names the statements use.

    Returns (namespace, versions, errors): errors maps a library to why it
    could not be set up.
    """
    ns, versions, errors = {}, {}, {}
    try:
        from cuda.core import Device

        dev = Device(0)
        dev.set_current()
        ns.update(Device=Device, dev=dev, mr=dev.memory_resource)
        import cuda.core

        versions["cuda.core"] = getattr(cuda.core, "__version__", "?")
    except Exception as e:  # noqa: BLE001 - any failure disables the library's statements
        errors["cuda.core"] = f"{type(e).__name__}: {e}"
    try:
        import cupy as cp

        cp.cuda.Device(0).use()
        cp.empty(1)
        ns["cp"] = cp
        versions["cupy"] = cp.__version__
    except Exception as e:  # noqa: BLE001
        errors["cupy"] = f"{type(e).__name__}: {e}"
    try:
        from cuda.bindings import runtime as cudart

        err = cudart.cudaFree(0)[0]  # initializes the runtime; returns (err,)
        if int(err) != 0:
            raise RuntimeError(f"cudaFree(0) returned {err}")
        ns["cudart"] = cudart
        ns["s0"] = legacy_stream(cudart)
        import cuda.bindings

        versions["cuda.bindings"] = getattr(cuda.bindings, "__version__", "?")
    except Exception as e:  # noqa: BLE001
        errors["cuda.bindings"] = f"{type(e).__name__}: {e}"
    try:
        import torch

        torch.cuda.set_device(0)
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
        ns["torch"] = torch
        versions["torch"] = torch.__version__
    except Exception as e:  # noqa: BLE001
        errors["torch"] = f"{type(e).__name__}: {e}"
    return ns, versions, errors


def legacy_stream(cudart):
    """Returns the stream argument cuda.bindings accepts for the default stream."""
    for s0 in (0, None, cudart.cudaStream_t(0)):
        try:
            err, p = cudart.cudaMallocAsync(10, s0)
        except Exception:  # noqa: BLE001 - this spelling is refused; try the next
            continue
        if int(err) != 0:
            raise RuntimeError(f"cudaMallocAsync returned {err}")
        cudart.cudaFreeAsync(p, s0)
        return s0
    raise RuntimeError("cudaMallocAsync accepts none of 0, None, cudaStream_t(0) as its stream")


def calibrate(timer, target):
    """Returns a loop count for which timer takes at least target seconds."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target or number >= 10_000_000:
            return number
        # Aim a little past the target, grow at most 10x per step.
        guess = int(number * 1.2 * target / max(elapsed, 1e-9))
        number = max(number * 2, min(guess, number * 10))


def time_statement(stmt, ns, target, repeat):
    timer = timeit.Timer(stmt, globals=ns)
    number = calibrate(timer, target)
    times = [timer.timeit(number) / number * 1e6 for _ in range(repeat)]
    return {
        "number": number,
        "repeat": repeat,
        "us_per_call": times,
        "min_us": min(times),
        "median_us": statistics.median(times),
    }


def torch_profiler(torch):
    from torch.profiler import ProfilerActivity, profile

    return profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])


def count_profiler_events(prof):
    """Counts the events a finished torch.profiler session holds, cheaply."""
    try:
        return len(prof.profiler.kineto_results.events())
    except Exception:  # noqa: BLE001 - the private path moved; fall back to the public one
        try:
            return len(prof.events())
        except Exception:  # noqa: BLE001
            return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", choices=["none", "cuprof", "torchprof"], default="none")
    ap.add_argument("--target", type=float, default=0.05, help="seconds per repetition (default 0.05)")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions per statement (default 5)")
    ap.add_argument("--only", default="", help="comma-separated statement ids or prefixes to run")
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    ns, versions, errors = load_libraries()
    setup_s = time.perf_counter() - t0
    only = [s for s in args.only.split(",") if s]
    results = []
    for sid, lib, stmt in STATEMENTS:
        if only and not any(sid == o or sid.startswith(o) for o in only):
            continue
        if args.tool == "torchprof" and lib != "torch":
            continue
        row = {"id": sid, "library": lib, "statement": stmt}
        if lib in errors:
            row["error"] = f"{lib} unavailable: {errors[lib]}"
            results.append(row)
            continue
        try:
            if args.tool == "torchprof":
                torch = ns["torch"]
                prof = torch_profiler(torch)
                with prof:
                    row.update(time_statement(stmt, ns, args.target, args.repeat))
                    torch.cuda.synchronize()
                    t_stop = time.perf_counter()
                row["profiler_stop_s"] = time.perf_counter() - t_stop
                row["events"] = count_profiler_events(prof)
            else:
                row.update(time_statement(stmt, ns, args.target, args.repeat))
        except Exception as e:  # noqa: BLE001 - one failing statement must not stop the rest
            row["error"] = f"{type(e).__name__}: {e}"
        results.append(row)
        # Free what the statement left behind (streams, buffers) between statements.
        if "torch" in ns:
            ns["torch"].cuda.synchronize()

    doc = {
        "suite": "seeds",
        "tool": args.tool,
        "python": platform.python_version(),
        "versions": versions,
        "library_errors": errors,
        "setup_s": setup_s,
        "target_s": args.target,
        "pid": os.getpid(),
        "results": results,
    }
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    failed = [r["id"] for r in results if "error" in r]
    if failed:
        print(f"seeds: {len(failed)} statements failed: {', '.join(failed)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
