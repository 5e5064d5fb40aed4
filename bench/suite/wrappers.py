#!/usr/bin/env python3
"""Summarizes a wrappers.sh run: python3 wrappers.py OUT

Per loops.c case: the median over rounds of each process's median ns per
iteration under no tool, the old build and the new one; what each build adds
over no tool (the median of per-round differences); and new - old per round,
its median with a 95 % bootstrap interval (bench/lib/paired.py). Prints a
Markdown table; a case with no paired rounds says so.
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import paired  # noqa: E402


def rounds(out, tool, case):
    got = {}
    for p in glob.glob(os.path.join(out, "loops", tool, case + ".r*.json")):
        m = re.search(r"\.r(\d+)\.json$", p)
        try:
            d = json.load(open(p))
        except (OSError, ValueError):
            continue
        if m and d.get("failures", 0) == 0 and "median_ns" in d:
            got[int(m.group(1))] = float(d["median_ns"])
    return got


def main():
    if len(sys.argv) != 2:
        print("usage: wrappers.py OUT", file=sys.stderr)
        return 2
    out = sys.argv[1]
    cases = sorted({os.path.basename(p).split(".r")[0] for p in glob.glob(os.path.join(out, "loops", "none", "*.json"))})
    if not cases:
        print(f"wrappers.py: no loops results under {out}/loops/none", file=sys.stderr)
        return 1
    print("| case | rounds | none | old | new | added by old | added by new | new - old [95 % CI] |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for c in cases:
        n, o, w = rounds(out, "none", c), rounds(out, "old", c), rounds(out, "new", c)
        d, (lo, hi), k = paired.summary(w, o)
        if k == 0:
            print(f"| {c} | 0 | | | | | | no paired rounds |")
            continue
        ao, _, _ = paired.summary(o, n)
        an, _, _ = paired.summary(w, n)
        print(f"| {c} | {k} | {paired.median(list(n.values())):.1f} | {paired.median(list(o.values())):.1f} | "
              f"{paired.median(list(w.values())):.1f} | {ao:+.1f} | {an:+.1f} | {d:+.1f} [{lo:+.1f}, {hi:+.1f}] |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
