"""The speed probe of the Python benchmarks: how fast this process runs
plain Python right now, read between repetitions so that a slow spell of the
host can be told from a slow tool.

On the H200 VM a process runs Python fast or slow (a loop iteration 27-31 ns
against 40-48 ns, with every statement alike) for its whole life or for long
spells (bench/suite/results/2026-12-01f-host-diagnostic). The loop touches no
library and no tool: under cuprof its function never leads to CUDA, so its
hooks are turned off after the first calls. The summaries keep what ran
within 10 % of the run's fastest reading (bench/python/summarize.py,
bench/suite/tables.py).
"""

import time


def probe_ns(tries=3, n=20000):
    """ns per iteration of a pure-Python loop of n additions, the fastest of tries."""
    best = None
    for _ in range(tries):
        t = time.perf_counter_ns()
        x = 0
        for i in range(n):
            x += i
        d = (time.perf_counter_ns() - t) / n
        best = d if best is None or d < best else best
    return round(best, 2)
