#!/usr/bin/env python3
"""Summarizes a selftime.sh run: python3 selftime.py OUT [--api API] [--frame FRAME]

For each variant (pass, rec, rec2) and round, from OUT/VARIANT.rN.json (cuprof
report --format json): the frame's self time per call and driver calls per
call, the API's recorded median and count, and its passed-through count.
Prints the per-round table, then the medians over rounds and the paired
differences pass - rec (what recording the call took out of the frame's self
time) and rec2 - rec (two equal runs: the method's own spread), each with a
95 % bootstrap interval over rounds (bench/lib/paired.py), beside the API's
recorded time per call (the median over rounds of each run's median).

With --split-ns X, the runs are also split by the process's speed: a run
whose median cuStreamCreateWithPriority (every variant records it) is under
X ns is "fast". Within each speed, the variants' medians over runs and the
difference pass - rec with a 95 % bootstrap interval (runs resampled within
each variant: the runs are not paired once split).
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import paired  # noqa: E402

VARIANTS = ("pass", "rec", "rec2")


def one(path, api, frame):
    """What one report says, or None when it has no such frame."""
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        return None
    fr = [f for f in r.get("frames") or [] if f["frame"].endswith(frame) and f["calls"] > 0]
    if not fr:
        return None
    f = max(fr, key=lambda f: f["calls"])
    row = {"self": f["self_ns"] / f["calls"], "driver_calls": f["driver_calls"] / f["calls"], "calls": f["calls"]}
    a = [x for x in r.get("apis") or [] if x["api"] == api]
    row["api_median"] = a[0]["median_ns"] if a else None
    row["api_count"] = a[0]["count"] if a else 0
    row["passed"] = sum(p["calls"] for p in r.get("passed_through") or [] if p["name"] == api)
    c = [x for x in r.get("apis") or [] if x["api"] == "cuStreamCreateWithPriority"]
    row["create_median"] = c[0]["median_ns"] if c else None
    return row


def unpaired_ci(a, b, n=4000, seed=1, level=0.95):
    """The percentile interval of median(a) - median(b), each resampled."""
    import random
    if not a or not b:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    vals = sorted(paired.median([rng.choice(a) for _ in a]) - paired.median([rng.choice(b) for _ in b])
                  for _ in range(n))
    return vals[int((1 - level) / 2 * (n - 1))], vals[int((1 + level) / 2 * (n - 1))]


def load(out, api, frame):
    runs = {v: {} for v in VARIANTS}
    for v in VARIANTS:
        for p in glob.glob(os.path.join(out, f"{v}.r*.json")):
            m = re.search(r"\.r(\d+)\.json$", p)
            row = one(p, api, frame)
            if m and row:
                runs[v][int(m.group(1))] = row
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--api", default="cuCtxGetStreamPriorityRange")
    ap.add_argument("--frame", default="Device.create_stream")
    ap.add_argument("--split-ns", type=float, default=0,
                    help="split the runs by cuStreamCreateWithPriority's median: under this is fast")
    a = ap.parse_args(argv)
    runs = load(a.out, a.api, a.frame)
    if not any(runs.values()):
        print(f"selftime.py: no report with a {a.frame} frame under {a.out}", file=sys.stderr)
        return 1
    print(f"Per round: {a.frame} self ns per call (driver calls per call); rec's {a.api} median ns\n")
    print("| round | pass | rec | rec2 | pass - rec | rec2 - rec | recorded call (rec) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rounds = sorted(set().union(*[set(r) for r in runs.values()]))
    for k in rounds:
        cells = []
        for v in VARIANTS:
            x = runs[v].get(k)
            cells.append(f"{x['self']:.0f} ({x['driver_calls']:.2f})" if x else "-")
        d1 = (runs["pass"][k]["self"] - runs["rec"][k]["self"]) if k in runs["pass"] and k in runs["rec"] else None
        d2 = (runs["rec2"][k]["self"] - runs["rec"][k]["self"]) if k in runs["rec2"] and k in runs["rec"] else None
        rc = runs["rec"].get(k, {}).get("api_median")
        print(f"| {k} | " + " | ".join(cells) + f" | {'-' if d1 is None else f'{d1:+.0f}'} | "
              f"{'-' if d2 is None else f'{d2:+.0f}'} | {'-' if rc is None else rc} |")
    self_of = {v: {k: x["self"] for k, x in runs[v].items()} for v in VARIANTS}
    m1, ci1, n1 = paired.summary(self_of["pass"], self_of["rec"])
    m2, ci2, n2 = paired.summary(self_of["rec2"], self_of["rec"])
    rec_call = [x["api_median"] for x in runs["rec"].values() if x["api_median"] is not None]
    print()
    print("| | rounds | median | 95 % interval |")
    print("| --- | ---: | ---: | --- |")
    for v in VARIANTS:
        print(f"| {v}: self ns per call | {len(self_of[v])} | {paired.median(list(self_of[v].values())):.1f} | |")
    print(f"| pass - rec (the drop when the call is recorded) | {n1} | {m1:+.1f} | [{ci1[0]:+.1f}, {ci1[1]:+.1f}] |")
    print(f"| rec2 - rec (two equal runs) | {n2} | {m2:+.1f} | [{ci2[0]:+.1f}, {ci2[1]:+.1f}] |")
    print(f"| {a.api} recorded, ns per call (rec) | {len(rec_call)} | {paired.median(rec_call):.1f} | |")
    if a.split_ns:
        print(f"\nBy process speed (fast: cuStreamCreateWithPriority median under {a.split_ns:g} ns; runs unpaired)\n")
        print("| speed | runs pass / rec / rec2 | pass | rec | rec2 | pass - rec [95 % CI] | rec2 - rec [95 % CI] | recorded call (rec) |")
        print("| --- | --- | ---: | ---: | ---: | --- | --- | ---: |")
        for name, fast in (("fast", True), ("slow", False)):
            sel = {v: [x for x in runs[v].values() if x["create_median"] is not None
                       and (x["create_median"] < a.split_ns) == fast] for v in VARIANTS}
            med = {v: paired.median([x["self"] for x in sel[v]]) for v in VARIANTS}
            ci1 = unpaired_ci([x["self"] for x in sel["pass"]], [x["self"] for x in sel["rec"]])
            ci2 = unpaired_ci([x["self"] for x in sel["rec2"]], [x["self"] for x in sel["rec"]])
            rc = paired.median([x["api_median"] for x in sel["rec"] if x["api_median"] is not None])
            print(f"| {name} | {len(sel['pass'])} / {len(sel['rec'])} / {len(sel['rec2'])} | {med['pass']:.1f} | "
                  f"{med['rec']:.1f} | {med['rec2']:.1f} | {med['pass'] - med['rec']:+.1f} [{ci1[0]:+.1f}, {ci1[1]:+.1f}] | "
                  f"{med['rec2'] - med['rec']:+.1f} [{ci2[0]:+.1f}, {ci2[1]:+.1f}] | {rc:.1f} |")
    passed = [x["passed"] for x in runs["pass"].values()]
    counted = [x["api_count"] for x in runs["pass"].values()]
    print(f"\npass runs: {a.api} passed through {min(passed) if passed else 0}-{max(passed) if passed else 0} calls a run, "
          f"recorded {max(counted) if counted else 0}; rec runs recorded "
          f"{min((x['api_count'] for x in runs['rec'].values()), default=0)}-"
          f"{max((x['api_count'] for x in runs['rec'].values()), default=0)}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
