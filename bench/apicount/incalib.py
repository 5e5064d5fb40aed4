#!/usr/bin/env python3
"""The shim's calibration run inside the program's own process: python3 incalib.py [N] [CALLS]

Run under `cuprof record` (bench/apicount/incalib.sh). It calls the shim's
cuprof_calibrate (the routine the recorder's cuprof-calib runs in a process of
its own, for trace meta's overhead) from this process through ctypes, N
iterations per round (20000), first before any cuda.core work, then after
CALLS (20000) dev.create_stream() calls, and prints one JSON line with both
results in ns: added (wrapped - plain per call, what the analysis takes out of
enclosing frames per recorded call) and inside (inside - plain). The tick rate
is measured against time.perf_counter_ns over 0.2 s. The calibration's own
records (3N per round, API id 0) go into the trace; the trace is for its meta
only.
"""
import ctypes
import json
import sys
import time


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    lib = ctypes.CDLL(None)
    cal = lib.cuprof_calibrate
    cal.argtypes, cal.restype = [ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)], ctypes.c_int
    now = lib.cuprof_now
    now.argtypes, now.restype = [], ctypes.c_uint64
    t0, a = time.perf_counter_ns(), now()
    time.sleep(0.2)
    b, t1 = now(), time.perf_counter_ns()
    rate = (b - a) / (t1 - t0)  # ticks per ns

    def calib():
        out = (ctypes.c_uint64 * 8)()
        if cal(n, out) == 0:
            return None
        plain, wrapped, inside = (out[i] / out[3] / rate for i in range(3))
        return {"added_ns": round(wrapped - plain, 1), "inside_ns": round(inside - plain, 1)}

    first = calib()
    from cuda.core import Device
    dev = Device()
    dev.set_current()
    for _ in range(calls):
        dev.create_stream()
    after = calib()
    print(json.dumps({"ticks_per_ns": round(rate, 4), "first": first, "after": after}))


if __name__ == "__main__":
    main()
