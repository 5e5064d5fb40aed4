#!/usr/bin/env python3
"""Summarizes inplace.sh's cheap loops: python3 inplace_stats.py OUT

Reads OUT/loops.jsonl (one line per run: round, case, tool none/old/new and
loops.c's result) and OUT/meta.txt (each recorded run's trace meta) and
prints, per case, the median over rounds of the loop's median ns per
iteration under each tool, what each tool adds over none (median of the
per-round differences) and new - old per round (the sampling's cost to
every call, side by side), and the in-place corrections the new recordings
measured in these tight loops (where the calibrator's loop is the same
kind of loop, so about 0 is right).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import paired  # noqa: E402


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0]
    runs = {}
    with open(os.path.join(out, "loops.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["result"] is None:
                continue
            runs.setdefault((r["case"], r["round"]), {})[r["tool"]] = r["result"]["median_ns"]
    inplace = {}
    meta = os.path.join(out, "meta.txt")
    if os.path.exists(meta):
        with open(meta) as f:
            for line in f:
                m = re.match(r"(\d+) (\S+) new .*inplace_ns=(\S+)", line)
                if m:
                    inplace.setdefault(m.group(2), []).append(float(m.group(3)))
    news = ["new"] + (["new2"] if any("new2" in v for v in runs.values()) else [])
    head = "| case | rounds | none | old | " + " | ".join(news) + " | added by old | " + \
        " | ".join("added by " + n for n in news) + " | " + " | ".join(n + " - old [95 %]" for n in news) + \
        " | in-place correction (new) |"
    print(head)
    print("| --- | ---: |" + " ---: |" * (2 + 2 * len(news) + 1) + " --- |" * len(news) + " --- |")
    for c in sorted({c for c, _ in runs}):
        tools = {"none", "old"} | set(news)
        rs = [v for (cc, _), v in sorted(runs.items()) if cc == c and tools <= set(v)]
        med = {t: paired.median([r[t] for r in rs]) for t in tools}
        adds = [paired.median([r[t] - r["none"] for r in rs]) for t in ["old"] + news]
        cells = []
        for n in news:
            d = [r[n] - r["old"] for r in rs]
            lo, hi = paired.bootstrap_ci(d)
            cells.append("%+.1f [%+.1f, %+.1f]" % (paired.median(d), lo, hi))
        ip = inplace.get(c, [])
        ips = "%+.1f to %+.1f ns" % (min(ip), max(ip)) if ip else ""
        print("| %s | %d | %.1f | %.1f | %s | %s | %s | %s |" % (
            c, len(rs), med["none"], med["old"], " | ".join("%.1f" % med[n] for n in news),
            " | ".join("%.1f" % a for a in adds), " | ".join(cells), ips))
    return 0


if __name__ == "__main__":
    sys.exit(main())
