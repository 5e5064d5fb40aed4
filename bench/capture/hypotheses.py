#!/usr/bin/env python3
"""The table of bench/capture/hypotheses.sh: per variant and loop, the time
per call, what it adds to the same round's bare run and to the same round's
shim-alone run (paired by round, median [interval], the suite's rules), and
perf stat's counters per call beyond bare's.

  python3 bench/capture/hypotheses.py OUTDIR > hypotheses.md
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "suite"))
import tables  # noqa: E402  (the suite's median, interval and formatting)

WHAT = {
    "bare": "no tool",
    "shim": "the shim alone: rings on /dev/shm, chunks freed every 1 ms by a thread of the loop (baseline)",
    "shim-base": "the shim alone as `shim`, built from other sources (--base-shim)",
    "shim-end": "the shim alone with CUPROF_TIMING=end: one clock read per call, after it",
    "shim-tmp": "rings on the temporary folder's file system (disk-backed MAP_SHARED: writeback faults)",
    "shim-5ms": "chunks freed every 5 ms, cuprof record's poll: a bigger working set of chunks",
    "shim-read": "every 5 ms, each full chunk's records copied out first, as the recorder reads them",
    "shim-faults": "no drainer, 256 MiB ring: records past the 64 MiB faulted in at creation fault pages",
    "shim-prefaulted": "no drainer, 256 MiB ring, all of it faulted in at creation",
    "bare-pinned": "no tool, the loop pinned to the last CPU",
    "cuprof": "cuprof record (default: --when-full wait, 5 ms poll, 1 ms while a ring fills fast)",
    "cuprof-drop": "cuprof record --when-full drop",
    "cuprof-nonvtx": "cuprof record without NVTX injection",
    "cuprof-poll1ms": "cuprof record --poll-interval 1ms",
    "cuprof-pinned": "loop pinned to the last CPU, the recorder to the others",
    "cuprof-bindnow": "cuprof record with LD_BIND_NOW=1",
    "cuprof-end": "cuprof record --timing end",
}
COUNTERS = ["page-faults", "context-switches", "cpu-migrations", "instructions", "cycles", "cache-misses"]


def load_perf(path):
    """{event: value} from a perf stat -x, file, or {}."""
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip() or line.startswith("#"):
                    continue
                parts = line.strip().split(",")
                if len(parts) < 3:
                    continue
                try:
                    out[parts[2].split(":")[0]] = float(parts[0])
                except ValueError:
                    pass  # <not counted>, <not supported>
    except OSError:
        pass
    return out


def load(root):
    """{variant: {case: {round: (ns per call, calls, counters)}}}"""
    data = {}
    for v in sorted(os.listdir(root)):
        d = os.path.join(root, v)
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if not name.endswith(".json") or ".r" not in name:
                continue
            case, rnd = name[:-5].rsplit(".r", 1)
            if not rnd.isdigit():
                continue
            doc = tables.load(os.path.join(d, name))
            if not doc or doc.get("median_ns") is None:
                continue
            k = int(doc.get("calls_per_iter") or 1)
            calls = (int(doc.get("iters") or 0) * int(doc.get("reps") or 0) + int(doc.get("warmup_iters") or 0)) * k
            perf = load_perf(os.path.join(d, name[:-5] + ".perf"))
            data.setdefault(v, {}).setdefault(case, {})[int(rnd)] = (float(doc["median_ns"]) / k, calls, perf)
    return data


def paired(a, b, f=lambda x: x[0]):
    common = sorted(set(a) & set(b))
    return [f(a[r]) - f(b[r]) for r in common]


def cell(vals, fmt=tables.fmt_ns):
    if not vals:
        return "-"
    return f"{fmt(tables.median(vals))} {tables.fmt_iv(tables.interval(vals), fmt)}"


def main(argv):
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: hypotheses.py OUTDIR", file=sys.stderr)
        return 2
    root = argv[0]
    data = load(root)
    cases = sorted({c for v in data.values() for c in v},
                   key=lambda c: (["ctx_get_current", "ctx_set_current", "get_error_name"] + [c]).index(c))
    env = ""
    try:
        with open(os.path.join(root, "env.txt"), encoding="utf-8") as f:
            env = f.read().strip()
    except OSError:
        pass
    out = ["# Where cuprof record's cost goes beyond its shim alone", "", "```", env, "```", "",
           "Per variant and loop: ns per call (median over rounds of each process's median of 5 repetitions); "
           "added: minus the same round's bare run; vs shim: minus the same round's shim-alone run "
           "(median [second smallest, second largest of 5+ rounds, else smallest, largest]). A hypothesis "
           "explains the gap when its shim variant moves the shim alone toward cuprof record, or its cuprof "
           "variant moves cuprof record toward the shim alone.", ""]
    order = [v for v in WHAT if v in data] + [v for v in data if v not in WHAT]
    for c in cases:
        out += [f"## `{c}`", ""]
        rows = []
        bare = data.get("bare", {}).get(c, {})
        shim = data.get("shim", {}).get(c, {})
        for v in order:
            runs = data[v].get(c, {})
            if not runs:
                continue
            ns = [x[0] for x in runs.values()]
            added = paired(runs, bare) if v != "bare" else []
            vs_shim = paired(runs, shim) if v not in ("bare", "shim") else []
            row = [f"`{v}`", WHAT.get(v, ""), tables.fmt_ns(tables.median(ns)), cell(added), cell(vs_shim)]
            for ctr in COUNTERS:
                def per_call(x, ctr=ctr):
                    return x[2].get(ctr, 0.0) / max(x[1], 1)
                have = [r for r in runs if ctr in runs[r][2]]
                if not have:
                    row.append("-")
                    continue
                if ctr in ("page-faults", "context-switches", "cpu-migrations"):
                    # Per process, beyond the same round's bare run (start-up
                    # faults and switches are most of a bare run's).
                    if v == "bare":
                        row.append(f"{tables.median([runs[r][2][ctr] for r in have]):.0f}")
                    else:
                        d = paired({r: runs[r] for r in have}, bare, lambda x, ctr=ctr: x[2].get(ctr, 0.0))
                        row.append(f"{tables.median(d):+.0f}" if d else "-")
                else:
                    row.append(f"{tables.median([per_call(runs[r]) for r in have]):.2f}")
            rows.append(row)
        out.append(tables.table(["variant", "tests", "ns/call", "added (paired)", "vs shim (paired)",
                                 "page faults (vs bare)", "ctx switches (vs bare)", "migrations (vs bare)",
                                 "instructions/call", "cycles/call", "cache misses/call"], rows))
        out.append("")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
