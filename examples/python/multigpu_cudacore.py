#!/usr/bin/env python3
"""Alternates work between GPUs with cuda.core, and says what it did.

For each round and each device in --devices: make the device current, create
a stream, allocate a buffer on that stream and one on the device's default
stream (stream-ordered pool allocations), synchronize the stream, then the
device. Everything stays alive until the end, so no handle is reused; then it
is freed device by device.

The JSON printed (or written to --out) is what the program knows, for
bench/multigpu/check.py to compare with cuprof's trace: per device, how many
times it was made current, the allocations (pointer, size, stream) and streams
(handle) it got, and how many stream and device synchronizes it made.

  cuprof record -o multi.cuprof -- python3 examples/python/multigpu_cudacore.py --devices 0,1
"""

import argparse
import json
import os
import sys


def as_int(handle):
    """The integer value of a cuda.core / cuda.bindings handle or pointer."""
    try:
        return int(handle)
    except TypeError:
        return int(handle.getPtr())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="0,1", help="comma-separated device ordinals (default 0,1)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    args = ap.parse_args(argv)
    ordinals = [int(d) for d in args.devices.split(",") if d != ""]

    from cuda.core import Device

    devices = {d: Device(d) for d in ordinals}
    known = {d: {"set_current": 0, "allocations": [], "streams": [], "stream_syncs": 0, "syncs": 0}
             for d in ordinals}
    keep = {d: {"buffers": [], "streams": []} for d in ordinals}
    for r in range(args.rounds):
        for d in ordinals:
            dev = devices[d]
            k = known[d]
            dev.set_current()
            k["set_current"] += 1
            stream = dev.create_stream()
            keep[d]["streams"].append(stream)
            k["streams"].append(hex(as_int(stream.handle)))
            # Sizes differ per device and round so a trace reader can tell them apart.
            for s, on in ((stream, "created"), (dev.default_stream, "default")):
                size = 4096 * (d + 1) + 256 * r + (0 if on == "created" else 64)
                buf = dev.memory_resource.allocate(size, stream=s)
                keep[d]["buffers"].append(buf)
                k["allocations"].append({
                    "ptr": hex(as_int(buf.handle)),
                    "size": size,
                    "stream": hex(as_int(s.handle)) if on == "created" else "default",
                })
            stream.sync()
            k["stream_syncs"] += 1
            dev.sync()
            k["syncs"] += 1
    # Free device by device, with the device current.
    for d in ordinals:
        dev = devices[d]
        dev.set_current()
        k = known[d]
        k["set_current"] += 1
        for buf in keep[d]["buffers"]:
            buf.close()
        dev.sync()
        k["syncs"] += 1
        for s in keep[d]["streams"]:
            s.close()

    doc = {
        "program": "multigpu_cudacore",
        "pid": os.getpid(),
        "rank": os.environ.get("RANK"),
        "devices": ordinals,
        "rounds": args.rounds,
        "per_device": {str(d): known[d] for d in ordinals},
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
