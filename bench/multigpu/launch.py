#!/usr/bin/env python3
"""Starts one process per rank, like torchrun without the rendezvous.

  launch.py --nprocs N [--devices 0,1] -- CMD ARG...

Every "{rank}" in CMD's arguments becomes the rank, every "{device}" the
rank's device (--devices, cycled; default: the rank); each child gets RANK,
LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE in its environment. Runs under
`cuprof record` so that all children land in one trace (they inherit its
LD_PRELOAD). Exits with the first non-zero child status, else 0.
"""

import argparse
import os
import subprocess
import sys


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print("usage: launch.py --nprocs N [--devices LIST] -- CMD ARG...", file=sys.stderr)
        return 2
    split = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nprocs", type=int, required=True)
    ap.add_argument("--devices", default="", help="comma-separated device per rank, cycled (default: the rank)")
    args = ap.parse_args(argv[:split])
    cmd = argv[split + 1:]
    if not cmd or args.nprocs < 1:
        print("launch.py: need --nprocs >= 1 and a command after --", file=sys.stderr)
        return 2
    devices = [d for d in args.devices.split(",") if d]
    children = []
    for rank in range(args.nprocs):
        device = devices[rank % len(devices)] if devices else str(rank)
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(args.nprocs),
                   LOCAL_WORLD_SIZE=str(args.nprocs))
        argv_r = [a.replace("{rank}", str(rank)).replace("{device}", device) for a in cmd]
        children.append(subprocess.Popen(argv_r, env=env))
    status = 0
    for rank, p in enumerate(children):
        rc = p.wait()
        if rc != 0:
            print(f"launch.py: rank {rank} (pid {p.pid}) exited with {rc}", file=sys.stderr)
            status = status or (rc if rc > 0 else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
