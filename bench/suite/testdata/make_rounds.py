#!/usr/bin/env python3
"""Writes testdata/rounds/, a fake results folder of the rounds layout
(CASE.rN.json per round) for test_tables.py's second golden file: five
rounds of two loops under bare, the shim alone, cuprof and the CUPTI
callback, nsys in the first two rounds, one outlier round, one run skipped
over the budget, and a workload in three rounds.

  python3 bench/suite/testdata/make_rounds.py
"""

import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "rounds")

# ns per iteration, per tool and round: (ctx_get_current, event_create_destroy x2 calls)
LOOPS = {
    "none": ([9.9, 10.1, 9.8, 10.0, 14.0], [336.0, 340.0, 338.0, 520.0, 334.0]),
    "shim": ([31.0, 31.5, 30.8, 31.2, 31.1], [380.0, 384.0, 382.0, 381.0, 379.0]),
    "cuprof": ([33.0, 33.4, 33.1, 40.0, 33.2], [392.0, 395.0, 390.0, 393.0, 391.0]),
    "cupti_cb": ([150.0, 152.0, 149.0, 151.0, 150.5], [600.0, 610.0, 605.0, 598.0, 602.0]),
    "nsys": ([170.0, 172.0], [900.0, 905.0]),
}
CASES = [("ctx_get_current", ["cuCtxGetCurrent"]), ("event_create_destroy", ["cuEventCreate", "cuEventDestroy"])]


def write(rel, doc):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    shutil.rmtree(ROOT, ignore_errors=True)
    write("env.json", {"date": "2026-12-01 09:00 UTC", "host": "gpu1", "cpus": 16,
                       "suite": {"mode": "goals", "budget_s": "450", "available": "none,shim,cuprof,cupti_cb,nsys",
                                 "rounds": "5"}})
    for ci, (case, apis) in enumerate(CASES):
        for tool, per_case in LOOPS.items():
            for r, ns in enumerate(per_case[ci], 1):
                stem = f"loops/{tool}/{case}.r{r}"
                if tool == "cuprof" and case == "event_create_destroy" and r == 5:
                    write(stem + ".run.json", {"tool": tool, "skipped": "over the 450s budget"})
                    continue
                write(stem + ".json", {"case": case, "apis": apis, "calls_per_iter": len(apis), "reps": 5,
                                       "median_ns": ns, "min_ns": ns - 0.5, "max_ns": ns + 0.5, "failures": 0})
                run = {"tool": tool, "rc": 0, "wall_s": 0.7}
                if tool == "cuprof":
                    run.update({"report_rc": 0, "report_s": 0.4, "trace_bytes": 4000000})
                    per_api = (LOOPS["none"][ci][r - 1] - 0.5) / len(apis)
                    write(stem + ".report.json", {
                        "meta": {"calls": 1000000}, "drops": {"total": 0},
                        "overhead": {"inside_ns": 12.0, "added_ns": 23.0, "subtracted": True},
                        "apis": [{"api": a, "count": 1000000, "median_ns": per_api, "mean_ns": per_api + 1}
                                 for a in apis]})
                write(stem + ".run.json", run)
    segs = {"none": [1.00, 1.02, 0.99], "cuprof": [1.02, 1.03, 1.01]}
    for tool, vals in segs.items():
        for r, seg in enumerate(vals, 1):
            stem = f"workloads/torch_mlp-{tool}.r{r}"
            write(stem + ".json", {"workload": "torch_mlp", "tool": tool, "steps": 1000, "segments": 5,
                                   "segment_s": [seg] * 5, "median_segment_s": seg, "work_s": seg * 5})
            run = {"tool": tool, "rc": 0, "wall_s": 9.0}
            if tool == "cuprof":
                run["trace_bytes"] = 6_000_000
                write(stem + ".report.json", {"meta": {"calls": 1_000_000}, "drops": {"total": 0}})
            write(stem + ".run.json", run)


if __name__ == "__main__":
    main()
