#!/usr/bin/env python3
"""events.py's chain, timed in the thread's CPU time: for a loaded machine.

    chain_cputime.py [bare|cprofile|monitoring_c] [--noop-lib LIB]

Prints two numbers: ns per Python call of a chain of 51 nested calls whose
innermost calls the driver through ctypes (cuCtxGetCurrent), and ns per call
of an empty function; each the minimum of 15 repetitions of
time.thread_time_ns, so that time the thread spends descheduled (other jobs on
a shared machine) is not counted. Run it bare (LD_LIBRARY_PATH to a driver,
the simulated one on a CPU machine), under `cuprof record [--sim]` and in the
modes named, interleaved, and take the minimum over processes; docs/python.md
("Costs") quotes such a run. The driver call is made from a function, not at
module level: a module that calls the driver itself makes the functions two
levels under it cuprof helpers (docs/python.md, "scope").
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import events  # noqa: E402 - the same chain, leaf and C no-op tool


def timed(f, n):
    t0 = time.thread_time_ns()
    f(n)
    return time.thread_time_ns() - t0


def main(argv):
    mode = argv[0] if argv and not argv[0].startswith("-") else "bare"
    noop = argv[argv.index("--noop-lib") + 1] if "--noop-lib" in argv else None
    depth = 50
    sys.setrecursionlimit(max(sys.getrecursionlimit(), depth + 100))
    chain = events.make_chain(depth, events.driver_leaf())
    ms = {m.name: m for m in events.modes(noop, {"torchprof_stack"})}
    if mode not in ms:
        print(f"chain_cputime.py: no mode {mode} here (have {', '.join(ms)})", file=sys.stderr)
        return 2
    ms[mode].start()

    def chains(n):
        for _ in range(n):
            chain(depth)

    def empties(n):
        f = events.empty
        for _ in range(n):
            f()

    best_chain = min(timed(chains, 300) / 300 / (depth + 1) for _ in range(15))
    best_empty = min(timed(empties, 20000) / 20000 for _ in range(15))
    ms[mode].stop()
    print(f"{best_chain:.1f} {best_empty:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
