"""Compares two pytest JUnit files (a bare run and a recorded run) and the
recorded run's trace per-API counts (cuprof report --format json) with the
simulated driver's call counts (the sim-calls-PID files of
CUPROF_SIM_CALL_COUNTS). Prints Markdown tables; exits 1 when the outcomes
or the counts differ.

usage: suite_compare.py BARE.xml REC.xml REPORT.json BARE_COUNTS_DIR REC_COUNTS_DIR
"""
import collections
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def outcomes(path):
    """test id -> (outcome, first line of its message)"""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        tid = case.get("classname", "") + "::" + case.get("name", "")
        outcome, msg = "passed", ""
        for kind in ("failure", "error", "skipped"):
            el = case.find(kind)
            if el is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                msg = (el.get("message") or el.text or "").strip().splitlines()
                msg = msg[0] if msg else ""
                break
        out[tid] = (outcome, msg)
    return out


def sim_counts(d):
    total = collections.Counter()
    for name in os.listdir(d):
        with open(os.path.join(d, name)) as f:
            for line in f:
                api, n = line.split()
                total[api] += int(n)
    return total, len(os.listdir(d))


# Why a test cannot pass on a simulated driver: patterns of the failure's
# first line, in order; the first that matches names the reason.
REASONS = [
    (r"cudaErrorNotSupported|cudaError|runtime|cudart|cudaGetDevice", "needs the CUDA runtime (its private driver tables, cuGetExportTable: out of scope)"),
    (r"libnvrtc|nvJitLink|NVRTC", "compiles a kernel (NVRTC is not installed here)"),
    (r"NVML|nvml", "needs NVML (libnvidia-ml.so.1)"),
    (r"CUDA_ERROR_NOT_SUPPORTED", "calls a driver function the simulator does not implement (a stub)"),
    (r"assert .*==|AssertionError|Mismatched|not equal|array", "checks bytes a kernel or copy wrote (the simulator moves no bytes)"),
    (r"ImportError|cannot import|ModuleNotFound|AttributeError", "tests an API newer than the installed cuda-core (the tests are from the repository's main)"),
]


def reason(msg):
    for pat, why in REASONS:
        if re.search(pat, msg):
            return why
    return "other: " + msg[:90]


def main():
    bare_xml, rec_xml, report, bare_dir, rec_dir = sys.argv[1:6]
    bare, rec = outcomes(bare_xml), outcomes(rec_xml)
    ok = True
    print("## Outcomes\n")
    print("| outcome | bare | under cuprof record |")
    print("| --- | ---: | ---: |")
    for o in ("passed", "failed", "error", "skipped"):
        print(f"| {o} | {sum(v[0] == o for v in bare.values())} | {sum(v[0] == o for v in rec.values())} |")
    differ = sorted(t for t in set(bare) | set(rec) if bare.get(t, ("absent",))[0] != rec.get(t, ("absent",))[0])
    print(f"\ntests whose outcome differs: {len(differ)}")
    for t in differ[:40]:
        print(f"- {t}: bare {bare.get(t, ('absent',))[0]}, recorded {rec.get(t, ('absent',))[0]}")
    ok = ok and not differ

    with open(report) as f:
        apis = json.load(f)["apis"]
    traced = {a["api"]: a["count"] for a in apis}
    simc, files = sim_counts(rec_dir)
    barec, _ = sim_counts(bare_dir)
    print(f"\n## Driver calls: the trace against the simulated driver's counters ({files} processes)\n")
    print("| API | trace | simulated driver | bare run's driver |")
    print("| --- | ---: | ---: | ---: |")
    mism = 0
    for api in sorted(set(traced) | set(simc), key=lambda a: -max(traced.get(a, 0), simc.get(a, 0))):
        t, s = traced.get(api, 0), simc.get(api, 0)
        mark = "" if t == s else " **differs**"
        mism += t != s
        print(f"| {api}{mark} | {t} | {s} | {barec.get(api, 0)} |")
    print(f"\nAPIs whose counts differ: {mism}; calls in the trace {sum(traced.values())}, "
          f"counted by the driver {sum(simc.values())}")
    ok = ok and mism == 0

    print("\n## Driver calls that failed in the recorded run\n")
    print("| API | failed calls | calls |")
    print("| --- | ---: | ---: |")
    for a in sorted(apis, key=lambda a: -a["errors"]):
        if a["errors"]:
            print(f"| {a['api']} | {a['errors']} | {a['count']} |")

    print("\n## Why tests do not pass on the simulated driver (bare run)\n")
    why = collections.Counter()
    example = {}
    for t, (o, msg) in bare.items():
        if o in ("failed", "error"):
            r = reason(msg)
            why[r] += 1
            example.setdefault(r, t)
    skipped = collections.Counter(msg[:100] for o, msg in bare.values() if o == "skipped")
    print("| reason | tests | e.g. |")
    print("| --- | ---: | --- |")
    for r, n in why.most_common():
        print(f"| {r} | {n} | {example[r]} |")
    print("\n| skip reason (pytest's) | tests |")
    print("| --- | ---: |")
    for r, n in skipped.most_common(12):
        print(f"| {r.replace('|', '/')} | {n} |")
    sys.exit(0 if ok else 1)


main()
