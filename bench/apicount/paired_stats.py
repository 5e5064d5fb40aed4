#!/usr/bin/env python3
"""Summarizes a paired.sh run: python3 paired_stats.py OUT

Reads OUT/pN.jsonl (bench/apicount/blocks: one line per block of one
process's trace) and pairs the blocks of each cycle: pass (the API passed
through), rec and rec2 (recorded, twice). Per cycle, from the blocks'
medians over their activations:

  drop       self(pass) - self(rec): what recording the call took out of the
             frame's self time
  null       self(rec2) - self(rec): two equal blocks, the method's own
             difference
  call       the recorded call's median duration in the rec block
  drop-call  drop less call: what is left of the drop once the call's own
             time is accounted for (the pass-through's own cost and the
             calibration's error)

  bare_drop  self(bare) - self(rec), when the run has bare blocks
             (PAIRED_BARE=1): the drop against a call with no wrapper at all
  bare-call  bare_drop less call: what recording the call leaves in the
             frame against a program that never wrapped it (0 is right)
  p          self(pass) - self(bare): what a passed-through call costs the
             frame (the bias of drop - call)
  prologue, clocks
             self(prologue) - self(bare) and self(clocks) - self(bare), when
             the run has those blocks (PAIRED_ABLATE=1): what the wrapper's
             prologue, and that with the guard and clock reads, cost the
             frame in place (the whole wrapper's cost is -(bare - rec - call)
             as recorded)

  gate       self(rec) - self(open), when the run has open blocks
             (PAIRED_OPEN=1): what the gate's CUPROF_GATE_SOME path costs the
             frame's recorded calls over the plain open one

each as cuprof reports self times (the calibrated cost of every recorded call
taken out, corrected by the program's calls measured in place), with the
calibrator's loop alone (loop_: the in-place correction left out; blocks
from before it have none) and as recorded (raw). Prints the per-process medians and, over
all cycles of all processes, the median with a 95 % bootstrap interval
(cycles resampled, bench/lib/paired.py), and the same over processes (each
process's median, processes resampled).
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import paired  # noqa: E402


def load(out):
    procs = {}
    for p in sorted(glob.glob(os.path.join(out, "p*.jsonl"))):
        m = re.search(r"p(\d+)\.jsonl$", p)
        if not m:
            continue
        cycles = {}
        with open(p) as f:
            lines = f.readlines()
        for line in lines:
            b = json.loads(line)
            if b["cycle"] < 0 or b["frames"] == 0:
                continue
            cycles.setdefault(b["cycle"], {})[b["mode"]] = b
        procs[int(m.group(1))] = {c: v for c, v in cycles.items() if set(v) >= {"pass", "rec", "rec2"}}
    return procs


# The accountings a block's times come in: its fields' prefix and the title.
ACCOUNTINGS = (
    ("", "as cuprof reports them (the calibrated cost of each recorded call taken out, corrected by the "
         "program's own calls measured in place)"),
    ("loop_", "with the calibrator's loop alone (the in-place correction, trace meta inplace_ns, left out)"),
    ("raw_", "as recorded (analysis.Raw: no calibrated cost taken out)"),
)


def diffs(cyc, acc):
    s = acc + "self_ns_median"
    a = acc + "api_ns_median"
    p, r, r2 = cyc["pass"], cyc["rec"], cyc["rec2"]
    call = r[a]
    drop = p[s] - r[s]
    d = {"drop": drop, "null": r2[s] - r[s], "call": call, "drop-call": drop - call,
         "pass": p[s], "rec": r[s]}
    if "open" in cyc:
        d["gate"] = r[s] - cyc["open"][s]
    if "bare" in cyc:
        b = cyc["bare"][s]
        d["bare_drop"] = b - r[s]
        d["bare-call"] = b - r[s] - call
        d["p"] = p[s] - b
        for part in ("prologue", "clocks"):
            if part in cyc:
                d[part] = cyc[part][s] - b
    return d


def fmt(x):
    return "%+.1f" % x


def ci(xs):
    lo, hi = paired.bootstrap_ci(xs)
    return "[%s, %s]" % (fmt(lo), fmt(hi))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0]
    procs = load(out)
    if not procs:
        print("paired_stats.py: no blocks under %s" % out)
        return 1
    keys = ("drop", "null", "call", "drop-call")
    lines = []
    blocks = [b for cyc in procs.values() for c in cyc.values() for b in c.values()]
    ins = [b["inside_ns"] for b in blocks]
    add = [b["added_ns"] for b in blocks]
    lines.append("Blocks of %d-%d frame activations; calibrated cost per recorded call (each process's own): "
                 "inside %d-%d ns, added %d-%d ns."
                 % (min(b["frames"] for b in blocks), max(b["frames"] for b in blocks), min(ins), max(ins),
                    min(add), max(add)))
    dc = {m: paired.median([b["driver_calls_per_frame"] for b in blocks if b["mode"] == m]) for m in ("pass", "rec", "rec2")}
    pt = {m: sum(b["api_passed_through"] for b in blocks if b["mode"] == m) for m in ("pass", "rec", "rec2")}
    rc = {m: sum(b["api_calls"] for b in blocks if b["mode"] == m) for m in ("pass", "rec", "rec2")}
    lines.append("Driver calls per activation (median over blocks): pass %.2f, rec %.2f, rec2 %.2f; the API's calls "
                 "recorded: pass %d, rec %d, rec2 %d; counted as passed through: pass %d, rec %d, rec2 %d."
                 % (dc["pass"], dc["rec"], dc["rec2"], rc["pass"], rc["rec"], rc["rec2"], pt["pass"], pt["rec"], pt["rec2"]))
    lines.append("")
    inplace = [b.get("in_place_ns", 0) for b in blocks]
    if any(inplace):
        lines.append("In-place correction per recorded call (each process's own, trace meta inplace_ns): %+.1f to %+.1f ns."
                     % (min(inplace), max(inplace)))
        lines.append("")
    for acc, title in ACCOUNTINGS:
        if not all(acc + "self_ns_median" in b for b in blocks):
            continue  # blocks from before the accounting existed
        raw = acc
        lines.append("### Self time %s, ns per activation" % title)
        lines.append("")
        lines.append("| process | cycles | pass | rec | drop: pass - rec | null: rec2 - rec | call (rec) | drop - call |")
        lines.append("| ---: | ---: | ---: | ---: | --- | --- | ---: | --- |")
        allc = {k: [] for k in keys + ("pass", "rec")}
        perp = {k: [] for k in keys}
        for p, cyc in sorted(procs.items()):
            d = [diffs(c, raw) for _, c in sorted(cyc.items())]
            for k in allc:
                allc[k].extend(x[k] for x in d)
            med = {k: paired.median([x[k] for x in d]) for k in keys + ("pass", "rec")}
            for k in keys:
                perp[k].append(med[k])
            lines.append("| %d | %d | %.1f | %.1f | %s %s | %s %s | %.1f | %s %s |" % (
                p, len(d), med["pass"], med["rec"], fmt(med["drop"]), ci([x["drop"] for x in d]),
                fmt(med["null"]), ci([x["null"] for x in d]), med["call"],
                fmt(med["drop-call"]), ci([x["drop-call"] for x in d])))
        lines.append("| all | %d | %.1f | %.1f | %s %s | %s %s | %.1f | %s %s |" % (
            len(allc["drop"]), paired.median(allc["pass"]), paired.median(allc["rec"]),
            fmt(paired.median(allc["drop"])), ci(allc["drop"]), fmt(paired.median(allc["null"])), ci(allc["null"]),
            paired.median(allc["call"]), fmt(paired.median(allc["drop-call"])), ci(allc["drop-call"])))
        if len(perp["drop"]) > 1:
            lines.append("| over processes | %d | | | %s %s | %s %s | %.1f | %s %s |" % (
                len(perp["drop"]), fmt(paired.median(perp["drop"])), ci(perp["drop"]),
                fmt(paired.median(perp["null"])), ci(perp["null"]), paired.median(perp["call"]),
                fmt(paired.median(perp["drop-call"])), ci(perp["drop-call"])))
        for k, what in (("bare_drop", "bare_drop: bare - rec (the drop against an unwrapped call)"),
                        ("bare-call", "bare - rec - call (what recording leaves in the frame; 0 is right)"),
                        ("p", "p: pass - bare (what a passed-through call costs the frame)"),
                        ("prologue", "prologue - bare (the wrapper's prologue alone, in place)"),
                        ("clocks", "clocks - bare (the prologue, the guard and the clock reads, in place)")):
            xs = [diffs(c, raw)[k] for cyc in procs.values() for c in cyc.values() if k in diffs(c, raw)]
            if xs:
                per = [paired.median([diffs(c, raw)[k] for c in cyc.values() if k in diffs(c, raw)])
                       for cyc in procs.values() if any(k in diffs(c, raw) for c in cyc.values())]
                lines.append("")
                lines.append("%s, %d cycles: %s %s; over %d processes: %s %s"
                             % (what, len(xs), fmt(paired.median(xs)), ci(xs), len(per), fmt(paired.median(per)),
                                ci(per) if len(per) > 1 else ""))
        gate = [diffs(c, raw)["gate"] for cyc in procs.values() for c in cyc.values() if "open" in c]
        if gate:
            lines.append("")
            lines.append("gate: rec - open (the CUPROF_GATE_SOME path against CUPROF_GATE_OPEN), %d cycles: %s %s"
                         % (len(gate), fmt(paired.median(gate)), ci(gate)))
        lines.append("")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
