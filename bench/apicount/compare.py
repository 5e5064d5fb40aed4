#!/usr/bin/env python3
"""Compares per-API driver call counts: CUPTI's (cupti_apicount's NAME COUNT
lines) against cuprof's (`cuprof report --format json`), in the same process.

  compare.py FUNCTIONS CUPTI_COUNTS REPORT_JSON [LABEL]

FUNCTIONS is trace/spec/cuda_functions.txt: CUPTI names exported variants
(cuStreamDestroy_v2), cuprof base names (cuStreamDestroy); the file maps one
to the other. Prints one line per API with both counts and a verdict, then
the totals; exits 0 either way.
"""
import json
import sys


def main():
    funcs, cupti_path, report_path = sys.argv[1:4]
    label = sys.argv[4] if len(sys.argv) > 4 else cupti_path
    api_of = {}
    for line in open(funcs):
        f = [x.strip() for x in line.split("|")]
        if len(f) == 7 and f[0] == "func":
            api_of[f[1]] = f[2]
            api_of.setdefault(f[2], f[2])
    cupti = {}
    for line in open(cupti_path):
        parts = line.split()
        if len(parts) != 2:
            continue
        name, n = parts[0], int(parts[1])
        api = api_of.get(name, name + " (not in the functions list)")
        cupti[api] = cupti.get(api, 0) + n
    rep = json.load(open(report_path))
    cuprof = {row["api"]: row["count"] for row in rep.get("apis", [])}
    untabled = {row["name"]: row["calls"] for row in rep.get("untabled_functions", []) or []}
    names = sorted(set(cupti) | set(cuprof), key=lambda a: (-cupti.get(a, 0), a))
    tc = sum(cupti.values())
    tr = sum(cuprof.get(a, 0) for a in cupti)
    equal = sum(1 for a in names if cupti.get(a, 0) == cuprof.get(a, 0))
    print(f"== {label}: CUPTI {tc} driver calls of {len(cupti)} APIs; cuprof recorded {tr} of them "
          f"({100.0 * tr / tc if tc else 0:.1f} %), {equal} of {len(names)} APIs equal")
    for a in names:
        c, r = cupti.get(a, 0), cuprof.get(a, 0)
        verdict = "=" if c == r else ("cuprof more" if r > c else "MISSING")
        print(f"  {a:56s} {c:8d} {r:8d}  {verdict}")
    for name, n in sorted(untabled.items()):
        print(f"  untabled (counted, not timed) {name} {n}")


if __name__ == "__main__":
    main()
