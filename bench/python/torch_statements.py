#!/usr/bin/env python3
"""Times small PyTorch statements with timeit, one process per tool, to find
where a training step's host cost under cuprof comes from (torch_mlp ran 1.18-1.26x bare under cuprof on the H200 in some runs).

  torch_statements.py --tool LABEL [--numbers JSON] [--repeat 5] [--out FILE]

The tool is only a label: cuprof attaches from outside the process. Each
statement is calibrated to about --target seconds a repetition unless
--numbers gives its loop count (from a bare run, so every tool does the same
work); the JSON gives each statement's median microseconds per call.
"""

import argparse
import json
import os
import statistics
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchout import write_json  # noqa: E402

STATEMENTS = [
    ("record_function", "with record_function('s'):\n    pass"),
    ("dynamo_disable", "dis()"),
    ("add_", "a.add_(1)"),
    ("linear", "lin(x)"),
    ("empty", "torch.empty(10, device='cuda')"),
    ("step", "opt.step()"),
    ("zero_grad", "opt.zero_grad(set_to_none=False)"),
]


def setup():
    import torch
    from torch.autograd.profiler import record_function

    dev = "cuda"
    lin = torch.nn.Linear(1024, 1024).to(dev)
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    model(x).sum().backward()
    opt.step()
    dis = torch._dynamo.disable(lambda: None)
    a = torch.zeros(16, device=dev)
    torch.cuda.synchronize()
    return {"torch": torch, "record_function": record_function, "lin": lin, "x": x, "opt": opt, "dis": dis, "a": a}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default="none")
    ap.add_argument("--target", type=float, default=0.03)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--numbers", default="")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    numbers = json.loads(a.numbers) if a.numbers else {}
    ns = setup()
    torch = ns["torch"]
    rows = []
    for sid, stmt in STATEMENTS:
        timer = timeit.Timer(stmt, globals=ns)
        number = int(numbers.get(sid) or 0)
        if not number:
            number = 1
            while timer.timeit(number) < a.target and number < 10_000_000:
                number *= 2
        timer.timeit(max(1, number // 10))
        torch.cuda.synchronize()
        times = []
        for _ in range(a.repeat):
            times.append(timer.timeit(number) / number * 1e6)
            torch.cuda.synchronize()
        rows.append({"id": sid, "statement": stmt, "number": number, "us_per_call": times,
                     "median_us": statistics.median(times)})
    write_json({"suite": "torch-statements", "tool": a.tool, "torch": torch.__version__, "results": rows}, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
