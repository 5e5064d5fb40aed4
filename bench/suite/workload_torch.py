#!/usr/bin/env python3
"""A small PyTorch training loop: the realistic workload of cuprof's suite.

An MLP learns random labels from random inputs kept on the GPU (no data
loading). The loop does what training scripts do to the driver: kernel
launches through the caching allocator, a loss read back every --log-every
steps, a CUDA event pair timing each segment. The steps are split in
--segments equal segments, each timed; the JSON gives every segment's time,
their median and sum ("work_s").

  --seconds T   calibrate: pick the step count that takes about T seconds bare
  --steps N     run exactly N steps (what the runs under a tool use, taken from
                the bare run so every tool does the same work)
  --tool torchprof  wrap the timed steps in torch.profiler (CPU+CUDA) and count
                    its events; torchprof_stack the same with with_stack=True;
                    any other tool value is only a label (cuprof and CUPTI
                    attach from outside the process)
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from speedprobe import probe_ns, start_gate  # noqa: E402 - bench/lib: the host's speed between segments


def build(torch, width, depth, batch, device):
    layers = []
    d_in = width
    for _ in range(depth):
        layers += [torch.nn.Linear(d_in, width), torch.nn.GELU()]
        d_in = width
    layers.append(torch.nn.Linear(width, 10))
    model = torch.nn.Sequential(*layers).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # A few batches kept on the device, cycled through.
    xs = [torch.randn(batch, width, device=device) for _ in range(8)]
    ys = [torch.randint(0, 10, (batch,), device=device) for _ in range(8)]
    return model, opt, xs, ys


def run_steps(torch, model, opt, xs, ys, first, n, log_every):
    loss_fn = torch.nn.functional.cross_entropy
    last = None
    for i in range(first, first + n):
        x, y = xs[i % len(xs)], ys[i % len(ys)]
        # A fresh activation buffer each step, like augmentation or masking.
        noise = torch.empty_like(x).normal_(0, 0.01)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x + noise), y)
        loss.backward()
        opt.step()
        if log_every and i % log_every == 0:
            last = loss.item()
    return last


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="none")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--segments", type=int, default=5)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    start_probe = start_gate()  # before torch loads: a slow start exits for a retry

    t_start = time.perf_counter()
    import torch

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    torch.manual_seed(0)
    model, opt, xs, ys = build(torch, args.width, args.depth, args.batch, device)
    step = 0
    run_steps(torch, model, opt, xs, ys, step, 20, args.log_every)  # warm-up: kernels, allocator
    step += 20
    torch.cuda.synchronize()

    steps = args.steps
    calibration = None
    if steps <= 0:
        t0 = time.perf_counter()
        run_steps(torch, model, opt, xs, ys, step, 100, args.log_every)
        torch.cuda.synchronize()
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
    segments, gpu_ms = [], []
    loss = None
    probes = [probe_ns()]  # segment k lies between readings k and k+1
    for _ in range(args.segments):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        loss = run_steps(torch, model, opt, xs, ys, step, per_segment, args.log_every)
        end.record()
        end.synchronize()
        segments.append(time.perf_counter() - t0)
        gpu_ms.append(start.elapsed_time(end))
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
        "workload": "torch_mlp",
        "tool": args.tool,
        "torch": torch.__version__,
        "steps": steps,
        "segments": args.segments,
        "segment_s": segments,
        "probe_ns": probes,
        "start_probe_ns": start_probe,
        "segment_gpu_ms": gpu_ms,
        "median_segment_s": statistics.median(segments),
        "work_s": sum(segments),
        "setup_s": setup_s,
        "calibration": calibration,
        "profiler_stop_s": stop_s,
        "events": events,
        "final_loss": loss,
        "pid": os.getpid(),
        "config": {"width": args.width, "depth": args.depth, "batch": args.batch, "log_every": args.log_every},
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
