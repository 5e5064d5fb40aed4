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

import os
import sys
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


# The start gate. On the H200 VM a process runs Python in one of two modes,
# fast (the probe reads 26-31 ns an iteration) or slow (41-70 ns), mostly for
# its whole life: in run F (2026-12-01, bench/python/results/2026-12-01i-h200)
# 26 of 48 statement processes were slow, bare as often as cuprof, and a
# slow bare process against a fast cuprof one (or the reverse) moved a
# round's ratio by up to 1.7x. So a measuring process reads the probe before
# anything else and, when the reading is over GATE times the floor that
# run.sh measured at the start of the run (the fastest of 16 short
# probe-only processes over 4 s), exits at once with SLOW_START_EXIT; run.sh starts it again, a
# few times at most, and counts the tries. The gate is the same for every
# tool, bare included, and fixed before the runs it applies to (the gap
# between the modes in run F lay between 1.2x and 1.5x the floor).
GATE = 1.25
SLOW_START_EXIT = 75
GATE_ENV = "BENCH_CALM_FLOOR_NS"


def start_gate(environ=None, read=None):
    """Returns the probe reading at this process's start (the fastest over
    about 30 ms: a process's first milliseconds may share the CPU with its
    parent, cuprof record's recorder starting), or exits with SLOW_START_EXIT when the environment's
    BENCH_CALM_FLOOR_NS is set and the reading is over GATE times it (run.sh
    leaves it unset for a process's last try; read: the probe, for tests)."""
    env = os.environ if environ is None else environ
    if read is None:
        def read():
            end = time.perf_counter() + 0.03
            best = probe_ns(tries=1)
            while time.perf_counter() < end:
                best = min(best, probe_ns(tries=1))
            return best
    reading = read()
    try:
        floor = float(env.get(GATE_ENV, "") or 0)
    except ValueError:
        floor = 0.0
    if floor > 0 and reading > GATE * floor:
        print(f"speedprobe: slow start ({reading:.1f} ns an iteration, floor {floor:.1f}): exiting for a retry",
              file=sys.stderr)
        sys.exit(SLOW_START_EXIT)
    return reading
