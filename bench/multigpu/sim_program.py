#!/usr/bin/env python3
"""The multigpu examples' pattern through ctypes on the driver API directly.

The same rounds as examples/python/multigpu_cudacore.py (make current, create
a stream, allocate on it and on the legacy stream, synchronize the stream and
the device), and the same JSON, but needing only libcuda.so.1: on a machine
without a GPU, `cuprof record` runs it against the simulated driver (two
devices by default), which lets run.sh and check.py be tried on a CPU:

  bench/multigpu/run.sh --programs bench/multigpu/sim_program.py --no-otlp OUT
"""

import argparse
import ctypes
import json
import os
import sys


class Driver:
    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def __call__(self, name, *args):
        r = getattr(self.lib, name)(*args)
        if r != 0:
            raise RuntimeError(f"{name} returned {r}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="0,1")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    ordinals = [int(d) for d in args.devices.split(",") if d != ""]
    cu = Driver()
    cu("cuInit", ctypes.c_uint(0))
    ctx = {}
    for d in ordinals:
        dev = ctypes.c_int()
        cu("cuDeviceGet", ctypes.byref(dev), ctypes.c_int(d))
        c = ctypes.c_void_p()
        cu("cuDevicePrimaryCtxRetain", ctypes.byref(c), dev)
        ctx[d] = c
    known = {d: {"set_current": 0, "allocations": [], "streams": [], "stream_syncs": 0, "syncs": 0}
             for d in ordinals}
    keep = {d: {"ptrs": [], "streams": []} for d in ordinals}
    for r in range(args.rounds):
        for d in ordinals:
            k = known[d]
            cu("cuCtxSetCurrent", ctx[d])
            k["set_current"] += 1
            s = ctypes.c_void_p()
            cu("cuStreamCreate", ctypes.byref(s), ctypes.c_uint(1))
            keep[d]["streams"].append(s)
            k["streams"].append(hex(s.value))
            for stream, label in ((s, hex(s.value)), (ctypes.c_void_p(0), "default")):
                size = 4096 * (d + 1) + 256 * r + (0 if label != "default" else 64)
                p = ctypes.c_ulonglong()
                cu("cuMemAllocAsync", ctypes.byref(p), ctypes.c_size_t(size), stream)
                keep[d]["ptrs"].append((p.value, stream))
                k["allocations"].append({"ptr": hex(p.value), "size": size, "stream": label})
            cu("cuStreamSynchronize", s)
            k["stream_syncs"] += 1
            cu("cuCtxSynchronize")
            k["syncs"] += 1
    for d in ordinals:
        cu("cuCtxSetCurrent", ctx[d])
        known[d]["set_current"] += 1
        for p, stream in keep[d]["ptrs"]:
            cu("cuMemFreeAsync", ctypes.c_ulonglong(p), stream)
        cu("cuCtxSynchronize")
        known[d]["syncs"] += 1
        for s in keep[d]["streams"]:
            cu("cuStreamDestroy_v2", s)
    doc = {"program": "sim_program", "pid": os.getpid(), "rank": os.environ.get("RANK"), "devices": ordinals,
           "rounds": args.rounds, "per_device": {str(d): known[d] for d in ordinals}}
    text = json.dumps(doc, indent=1)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
