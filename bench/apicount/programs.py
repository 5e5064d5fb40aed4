#!/usr/bin/env python3
"""The programs whose driver calls bench/apicount counts: python3 programs.py NAME [N].

  create_stream  cuda.core dev.create_stream(), N times (timeit)
  allocate       cuda.core mr.allocate(10, stream=s), N times (timeit)
  cp_stream      cp.cuda.Stream(), N times
  cp_empty       cp.empty(10, dtype=cp.int8), N times
  graph          a torch CUDA graph captured once and replayed N times
  expandable     torch allocating and freeing tensors of growing sizes with
                 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (set by the caller)
  mlp            N training steps of a small torch MLP with AdamW
"""
import sys
import timeit


def main():
    name = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    if name in ("create_stream", "allocate"):
        from cuda.core import Device
        dev = Device()
        dev.set_current()
        if name == "create_stream":
            t = timeit.timeit("dev.create_stream()", globals={"dev": dev}, number=n)
        else:
            s = dev.create_stream()
            mr = dev.memory_resource
            t = timeit.timeit("mr.allocate(10, stream=s)", globals={"mr": mr, "s": s}, number=n)
            dev.sync()
    elif name in ("cp_stream", "cp_empty"):
        import cupy as cp
        stmt = "cp.cuda.Stream()" if name == "cp_stream" else "cp.empty(10, dtype=cp.int8)"
        t = timeit.timeit(stmt, globals={"cp": cp}, number=n)
        cp.cuda.runtime.deviceSynchronize()
    elif name == "graph":
        import torch
        x = torch.randn(256, 256, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                y = x @ x + 1
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = x @ x + 1
        torch.cuda.synchronize()
        start = timeit.default_timer()
        for _ in range(n):
            g.replay()
        torch.cuda.synchronize()
        t = timeit.default_timer() - start
        del g
    elif name == "expandable":
        import torch
        start = timeit.default_timer()
        keep = []
        for i in range(n):
            a = torch.empty((1 << 20) * (1 + i % 64), dtype=torch.uint8, device="cuda")
            if i % 3 == 0:
                keep.append(a)
            if len(keep) > 16:
                keep.clear()
                torch.cuda.empty_cache()
        torch.cuda.synchronize()
        t = timeit.default_timer() - start
    elif name == "mlp":
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
        opt = torch.optim.AdamW(model.parameters())
        x = torch.randn(64, 512, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        start = timeit.default_timer()
        for _ in range(n):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        t = timeit.default_timer() - start
    else:
        sys.exit(f"programs.py: unknown program {name!r} (see the docstring)")
    print(f"{name} n={n} {t / n * 1e6:.2f} us per iteration")


if __name__ == "__main__":
    main()
