#!/usr/bin/env python3
"""Summarizes a wrapinstr.sh run: python3 wrapinstr.py OUT

From OUT/{old,new}-CASE.annotate (callgrind_annotate --inclusive=yes) and
the loop's JSON: per wrapper function the shim's instructions per call (its
inclusive count less the simulated driver function of the same name's, over
the calls made), old and new side by side. Prints a Markdown table.
"""
import glob
import json
import os
import re
import sys

LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(\S+?):(\w+)(?: \[(.*)\])?\s*$")


def counts(path):
    """(shim, driver): function name -> inclusive instructions."""
    shim, drv = {}, {}
    for line in open(path):
        m = LINE.match(line)
        if not m:
            continue
        n, src, fn, obj = int(m.group(1).replace(",", "")), m.group(2), m.group(3), m.group(4) or ""
        if not fn.startswith("cu"):
            continue
        if src.endswith("interpose.c"):
            shim[fn] = max(shim.get(fn, 0), n)
        elif src == "???" and "libcuda" in obj:
            drv[fn] = max(drv.get(fn, 0), n)
    return shim, drv


def per_call(out, build, case):
    ann = os.path.join(out, f"{build}-{case}.annotate")
    js = os.path.join(out, f"{build}-{case}.json")
    if not (os.path.exists(ann) and os.path.exists(js)):
        return {}
    d = json.load(open(js))
    calls = d["iters"] * d["reps"] + d["warmup_iters"]
    shim, drv = counts(ann)
    # Only the wrappers the loop calls every iteration (not its set-up's).
    return {fn: (n - drv[fn]) / calls for fn, n in shim.items() if fn in drv and n - drv[fn] >= calls}


def main():
    if len(sys.argv) != 2:
        print("usage: wrapinstr.py OUT", file=sys.stderr)
        return 2
    out = sys.argv[1]
    cases = sorted({os.path.basename(p)[4:-len(".annotate")] for p in glob.glob(os.path.join(out, "new-*.annotate"))})
    if not cases:
        print(f"wrapinstr.py: no callgrind results under {out}", file=sys.stderr)
        return 1
    print("| case | wrapper | old instructions/call | new instructions/call | new - old |")
    print("| --- | --- | ---: | ---: | ---: |")
    for c in cases:
        o, n = per_call(out, "old", c), per_call(out, "new", c)
        for fn in sorted(set(o) | set(n)):
            a, b = o.get(fn), n.get(fn)
            diff = f"{b - a:+.1f}" if a is not None and b is not None else ""
            print(f"| {c} | {fn} | {'' if a is None else f'{a:.1f}'} | {'' if b is None else f'{b:.1f}'} | {diff} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
