"""The speed probe of the Python benchmarks: how fast this process runs
plain Python right now, read between repetitions so that a slow spell of the
host can be told from a slow tool.

On the H200 VM a process runs Python fast or slow (a loop iteration 27-31 ns
against 40-48 ns, with every statement alike) for its whole life or for long
spells (bench/suite/results/2026-12-01f-host-diagnostic). The loop touches no
library and no tool: under cuprof its function never leads to CUDA, so its
hooks are turned off after the first calls. The summaries show, beside what
they judge, the calm spans: those whose readings on both sides are within
CALM_TOL of the run's fastest reading (bench/python/summarize.py,
bench/suite/tables.py; loops.c's probes are read by the same rule).
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


# How far above the run's fastest reading a calm reading may be.
CALM_TOL = 1.10


def is_calm(reading, floor):
    """Whether one reading ran at the run's uncontended speed."""
    return reading <= CALM_TOL * floor


def calm_spans(calm_readings):
    """The indices k of the spans (a repetition or segment, between readings
    k and k+1) whose readings on both sides are calm, given each reading's
    is_calm."""
    return [k for k in range(len(calm_readings) - 1) if calm_readings[k] and calm_readings[k + 1]]
