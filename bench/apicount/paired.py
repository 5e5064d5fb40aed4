#!/usr/bin/env python3
"""create_stream in paired blocks, one process: python3 paired.py CYCLES [N] [WARM]

Run under `cuprof record --capture-range=profiler-api --pass-through
cuFuncIsLoaded` (bench/apicount/paired.sh). It calls cuda.core's
dev.create_stream() WARM times (2000) in a capture range "warm", then
CYCLES cycles of three blocks of N calls each (200): "pass" with
cuCtxGetStreamPriorityRange passed through (cuprof.pass_through: the call
unrecorded, its time the frame's own), "rec" and "rec2" with it recorded
(two equal blocks: the method's own difference); with PAIRED_OPEN=1 a fourth,
"open", records it with nothing passed through (the capture gate's plain open
path, CUPROF_GATE_OPEN, where the others take CUPROF_GATE_SOME: rec - open is
what that path costs the frame's recorded calls); with PAIRED_BARE=1 a block
"bare", in which the shim's wrapper of the API jumps straight to the driver
(cuprof_bench_bare, which only a cuprof built with bench/apicount/bare.patch
applied exports): the call as a program without cuprof makes it, the
baseline that "pass" only approximates (pass - bare is what a passed-through
call costs the frame); with PAIRED_ABLATE=1 (and the same build) two more,
"prologue" and "clocks", in which the wrapper jumps to a part of itself that
records nothing: the prologue alone (the driver's function, the capture gate,
the thread's state), and that with the guard and the two clock reads around
the call (prologue - bare and clocks - bare are what those parts cost the
frame in place); with PAIRED_SIM=1, the frame is bench/apicount/simcore.py's
Device.create_stream over the simulated driver, for the CPU machine. The
order of the blocks turns by one each cycle. Each block is one capture range named "MODE
CYCLE"; the set changes between blocks, while nothing is recorded, and
cuFuncIsLoaded (never called here) stays in it so that every block takes the
same path through the shim's gate. Nothing is timed here: the trace holds
it all (bench/apicount/blocks reads it).
"""
import os
import sys

import cuprof

API = "cuCtxGetStreamPriorityRange"
CONTROL = "cuFuncIsLoaded"
MODES = ("pass", "rec", "rec2") + (("open",) if os.environ.get("PAIRED_OPEN") == "1" else ()) + (
    ("bare",) if os.environ.get("PAIRED_BARE") == "1" else ()) + (
    ("prologue", "clocks") if os.environ.get("PAIRED_ABLATE") == "1" else ())
SETS = {"pass": (CONTROL, API), "rec": (CONTROL,), "rec2": (CONTROL,), "open": (), "bare": (CONTROL,),
        "prologue": (CONTROL,), "clocks": (CONTROL,)}
# the blocks that patch the wrapper, and cuprof_bench_bare's mode for each
PATCHED = {"bare": 1, "prologue": 2, "clocks": 3}


def bare_switch():
    """The shim's cuprof_bench_bare(on), or exit when the shim lacks it."""
    import ctypes
    try:
        fn = ctypes.CDLL(None).cuprof_bench_bare
    except AttributeError:
        sys.exit("paired.py: PAIRED_BARE=1 needs a cuprof built with bench/apicount/bare.patch (cuprof_bench_bare)")
    fn.argtypes = [ctypes.c_int]

    def switch(mode):
        if fn(mode) != 0:
            sys.exit("paired.py: cuprof_bench_bare(%d) failed" % mode)
    return switch


def main():
    cycles = int(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    warm = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    if os.environ.get("PAIRED_SIM") == "1":  # the CPU machine's simulated driver (simcore.py)
        from simcore import Device
    else:
        from cuda.core import Device
    dev = Device()
    dev.set_current()
    if cuprof.mode() != "profiler-api":
        sys.exit("paired.py: run me under cuprof record --capture-range=profiler-api")
    cuprof.pass_through(CONTROL)
    create = dev.create_stream
    bare = bare_switch() if set(PATCHED) & set(MODES) else None
    with cuprof.capture("warm"):
        for _ in range(warm):
            create()
    for c in range(cycles):
        for k in range(len(MODES)):
            mode = MODES[(k + c) % len(MODES)]
            cuprof.pass_through(*SETS[mode])
            if mode in PATCHED:
                bare(PATCHED[mode])
            cuprof.start("%s %d" % (mode, c))
            for _ in range(n):
                create()
            cuprof.stop()
            if mode in PATCHED:
                bare(0)
    cuprof.pass_through(CONTROL)
    print("paired.py: %d cycles of %d blocks of %d create_stream" % (cycles, len(MODES), n))


if __name__ == "__main__":
    main()
