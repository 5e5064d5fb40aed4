#!/usr/bin/env python3
"""Alternates work between GPUs with PyTorch, and says what it did.

For each round and each device in --devices: torch.cuda.set_device, take a
stream (torch.cuda.Stream, served from torch's per-device stream pool), on it
allocate a tensor (through the caching allocator, so the pointer lies inside a
driver allocation rather than equal to one) and fill it (a kernel launch),
synchronize the stream, then the device. Tensors stay alive until the end.

The JSON printed (or written to --out) is what the program knows, for
bench/multigpu/check.py: per device, the set_device calls, the tensors'
pointers and sizes, the streams' handles, and the synchronizes.

  cuprof record -o multi.cuprof -- python3 examples/python/multigpu_torch.py --devices 0,1
"""

import argparse
import json
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="0,1", help="comma-separated device ordinals (default 0,1)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", help="write the JSON here instead of stdout")
    args = ap.parse_args(argv)
    ordinals = [int(d) for d in args.devices.split(",") if d != ""]

    import torch

    known = {d: {"set_current": 0, "allocations": [], "streams": [], "stream_syncs": 0, "syncs": 0}
             for d in ordinals}
    keep = []
    for r in range(args.rounds):
        for d in ordinals:
            k = known[d]
            torch.cuda.set_device(d)
            k["set_current"] += 1
            stream = torch.cuda.Stream(device=d)
            k["streams"].append(hex(stream.cuda_stream))
            with torch.cuda.stream(stream):
                # 1-3 MiB: large enough for the allocator's large-block pool.
                n = (1 << 20) * (d + 1) + 4096 * r
                t = torch.empty(n, dtype=torch.uint8, device=torch.device("cuda", d))
                t.fill_(r + 1)
            keep.append(t)
            k["allocations"].append({"ptr": hex(t.data_ptr()), "size": n, "stream": hex(stream.cuda_stream)})
            stream.synchronize()
            k["stream_syncs"] += 1
            torch.cuda.synchronize(d)
            k["syncs"] += 1
    del keep

    doc = {
        "program": "multigpu_torch",
        "pid": os.getpid(),
        "rank": os.environ.get("RANK"),
        "devices": ordinals,
        "rounds": args.rounds,
        # The caching allocator hands out pieces of larger driver allocations.
        "pointers_inside_allocations": True,
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
