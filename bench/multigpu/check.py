#!/usr/bin/env python3
"""Checks cuprof's device attribution against what a multi-GPU program knows.

  check.py TRACE.txt PROGRAM.json [PROGRAM.json ...]
  check.py SUMMARY.json PROGRAM.json [PROGRAM.json ...]

TRACE.txt is `cuprof dump` output (the text twin: `call PID/TID t=.. end=..
api=.. handle=.. stream=.. size=.. dev=N`; dev omitted means unknown).
SUMMARY.json is what otlp_sink.py received from `cuprof export`: the exported
call spans, with the device cuprof attributed to each (cuda.device.ordinal),
checked the same way, plus the resource check of --otlp. Each
PROGRAM.json is what examples/python/multigpu_*.py printed: its pid and, per
device, the set-current calls, allocations (pointer, size, stream), streams
and synchronizes it made. For every program, in its own process's calls:

  - each allocation's pointer lies in a successful cuMemAlloc* call's range
    [handle, handle+size) (equal to handle unless the program says
    pointers_inside_allocations), and that call's dev is the device;
  - each stream handle was created by a successful cuStreamCreate* call whose
    dev is the device, and every call using the stream (stream= or, for
    cuStream* calls, handle=) carries that device;
  - cuCtxSynchronize calls with dev=d number at least the device syncs the
    program made on d, and cuStreamSynchronize calls on d's streams at least
    its stream syncs;
  - set-current calls (cuCtxSetCurrent, cuCtxPushCurrent) are counted per
    device with their median duration: the switch cost (reported, and a
    failure only when a device the program switched to has none).

With --otlp SUMMARY.json (what otlp_sink.py received from `cuprof export`):
each program's process is one OTLP resource (process.pid), and its spans'
cuda.device.ordinal values are devices the program used.

Prints one line per finding and a summary; exits 1 when any check fails, 2 on
bad input. --json FILE also writes the findings as JSON.
"""

import argparse
import ast
import json
import re
import statistics
import sys

TOKEN = re.compile(r'([A-Za-z_][\w.]*)=("(?:[^"\\]|\\.)*"|\S*)')
SET_CURRENT_APIS = ("cuCtxSetCurrent", "cuCtxPushCurrent")
# Calls of these families act on a context, stream, event or allocation, so
# they should carry a device; others (cuInit, cuGetErrorName...) need not.
DEVICE_BOUND_PREFIXES = ("cuCtx", "cuStream", "cuEvent", "cuMem", "cuLaunch", "cuModule", "cuFunc")


class Call:
    __slots__ = ("pid", "tid", "start", "end", "api", "ok", "handle", "stream", "size", "dev", "line")

    def __init__(self, pid, tid, fields, line):
        self.pid, self.tid, self.line = pid, tid, line
        self.start = int(fields.get("t", "0"))
        self.end = int(fields.get("end", str(self.start)))
        self.api = fields.get("api", "")
        self.ok = fields.get("result", "CUDA_SUCCESS") == "CUDA_SUCCESS"
        self.handle = int(fields.get("handle", "0"), 0)
        self.stream = int(fields.get("stream", "0"), 0)
        self.size = int(fields.get("size", "0"), 0)
        self.dev = int(fields.get("dev", "-1"))

    @classmethod
    def from_otlp(cls, pid, row, n):
        """A call from otlp_sink.py's row [api, handle, stream, bytes, dev, ok, start, end]."""
        api, handle, stream, size, dev, ok, start, end = row
        c = cls(pid, 0, {}, n)
        c.api, c.handle, c.stream, c.size, c.dev, c.ok, c.start, c.end = (
            api, int(handle), int(stream), int(size), int(dev), bool(ok), int(start), int(end))
        return c


def calls_from_otlp(summary):
    """The call spans otlp_sink.py kept, per resource, as Calls (line = row number)."""
    calls = []
    for key, res in (summary.get("resources") or {}).items():
        try:
            pid = int(key)
        except ValueError:
            continue
        for i, row in enumerate(res.get("calls") or []):
            calls.append(Call.from_otlp(pid, row, i + 1))
        if res.get("calls_truncated"):
            raise ValueError(f"the OTLP summary kept only part of pid {pid}'s calls; raise otlp_sink.py --max-calls")
    return calls


def unquote(v):
    """Decodes a Go-quoted value (its escapes are a subset of Python's)."""
    if v.startswith('"'):
        try:
            return ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return v[1:-1]
    return v


def read_calls(lines):
    """Parses the call lines of a text-twin trace; returns (calls, processes)."""
    calls, processes = [], {}
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if n == 1 and line.startswith("cuprof-text"):
            continue
        kind, _, rest = line.partition(" ")
        if kind == "process":
            f = {k: unquote(v) for k, v in TOKEN.findall(rest)}
            if "pid" in f:
                processes[int(f["pid"])] = f
            continue
        if kind != "call":
            continue
        who, _, rest = rest.partition(" ")
        try:
            pid, tid = (int(x) for x in who.split("/"))
            fields = {k: unquote(v) for k, v in TOKEN.findall(rest)}
            calls.append(Call(pid, tid, fields, n))
        except ValueError as e:
            raise ValueError(f"trace line {n}: cannot parse call: {e}") from None
    return calls, processes


class Checker:
    def __init__(self, calls):
        self.calls = calls
        self.failures = []
        self.findings = []  # (level, program, device, message)

    def fail(self, prog, dev, msg):
        self.failures.append(msg)
        self.findings.append(("FAIL", prog, dev, msg))

    def ok(self, prog, dev, msg):
        self.findings.append(("ok", prog, dev, msg))

    def warn(self, prog, dev, msg):
        self.findings.append(("warn", prog, dev, msg))

    def check_program(self, doc):
        name = f"{doc.get('program', '?')}[pid {doc.get('pid')}]"
        pid = int(doc["pid"])
        mine = [c for c in self.calls if c.pid == pid]
        if not mine:
            self.fail(name, None, f"{name}: no calls of pid {pid} in the trace")
            return
        inside = bool(doc.get("pointers_inside_allocations"))
        allocs = [c for c in mine if c.ok and c.api.startswith("cuMemAlloc") and c.api != "cuMemAllocHost"]
        creates = [c for c in mine if c.ok and c.api.startswith("cuStreamCreate")]
        per_device = doc.get("per_device") or {}
        devices = sorted(int(d) for d in per_device)
        for d in devices:
            k = per_device[str(d)]
            self.check_allocations(name, d, k.get("allocations") or [], allocs, inside)
            streams = [int(h, 0) for h in k.get("streams") or []]
            self.check_streams(name, d, streams, creates, mine)
            self.check_syncs(name, d, k, streams, mine)
            self.check_set_current(name, d, k, mine)
        self.check_unknown(name, devices, mine)

    def check_allocations(self, name, d, allocations, allocs, inside):
        good = 0
        for a in allocations:
            ptr, size = int(a["ptr"], 0), int(a.get("size") or 0)
            if inside:
                cands = [c for c in allocs if c.handle <= ptr < c.handle + max(c.size, 1)]
            else:
                cands = [c for c in allocs if c.handle == ptr]
            if not cands:
                self.fail(name, d, f"{name} dev {d}: allocation {hex(ptr)} ({size} B) has no cuMemAlloc* call "
                                   f"{'containing' if inside else 'returning'} it")
                continue
            right = [c for c in cands if c.dev == d]
            if not right:
                devs = sorted({c.dev for c in cands})
                self.fail(name, d, f"{name} dev {d}: allocation {hex(ptr)} ({size} B) attributed to dev "
                                   f"{', '.join(map(str, devs))} ({cands[0].api}, trace line {cands[0].line})")
                continue
            if not inside and size and right[-1].size and right[-1].size != size:
                self.warn(name, d, f"{name} dev {d}: allocation {hex(ptr)}: program asked {size} B, trace says "
                                   f"{right[-1].size} B")
            good += 1
        if allocations and good == len(allocations):
            self.ok(name, d, f"{name} dev {d}: {good}/{len(allocations)} allocations on the right device")

    def check_streams(self, name, d, streams, creates, mine):
        good = 0
        for h in streams:
            cands = [c for c in creates if c.handle == h]
            if not cands:
                self.fail(name, d, f"{name} dev {d}: stream {hex(h)} has no cuStreamCreate* call returning it")
                continue
            if not any(c.dev == d for c in cands):
                self.fail(name, d, f"{name} dev {d}: stream {hex(h)} created with dev "
                                   f"{', '.join(str(c.dev) for c in cands)} (trace line {cands[0].line})")
                continue
            good += 1
        if streams and good == len(streams):
            self.ok(name, d, f"{name} dev {d}: {good}/{len(streams)} streams created on the right device")
        hs = set(streams)
        used = [c for c in mine if (c.stream in hs or (c.api.startswith("cuStream") and c.handle in hs))
                and self.stream_of_device(c.stream if c.stream in hs else c.handle, c, creates, d)]
        wrong = [c for c in used if c.ok and c.dev != d]
        for c in wrong[:5]:
            self.fail(name, d, f"{name} dev {d}: {c.api} on stream {hex(c.stream or c.handle)} has dev {c.dev} "
                               f"(trace line {c.line})")
        if len(wrong) > 5:
            self.fail(name, d, f"{name} dev {d}: ... and {len(wrong) - 5} more calls on its streams with another dev")
        if used and not wrong:
            self.ok(name, d, f"{name} dev {d}: all {len(used)} calls on its streams carry dev {d}")

    @staticmethod
    def stream_of_device(h, call, creates, d):
        """Whether call, using stream handle h, falls in a lifetime of h created on d.

        A driver may hand a destroyed stream's handle out again, on another
        device (the Go example destroys its stream every round): when h was
        created more than once, a call belongs to the latest creation of h that
        started before it (or the first), and only those created with dev d
        count for d. A handle created once is d's throughout."""
        cs = sorted((c for c in creates if c.handle == h), key=lambda c: c.start)
        if len(cs) < 2:
            return True
        owner = cs[0]
        for c in cs:
            if c.start <= call.start:
                owner = c
        return owner.dev == d

    def check_syncs(self, name, d, k, streams, mine):
        want = int(k.get("syncs") or 0)
        got = sum(1 for c in mine if c.ok and c.api == "cuCtxSynchronize" and c.dev == d)
        if got < want:
            self.fail(name, d, f"{name} dev {d}: {want} device synchronizes made, {got} cuCtxSynchronize with dev {d}")
        elif want:
            self.ok(name, d, f"{name} dev {d}: {got} cuCtxSynchronize with dev {d} (program made {want})")
        hs = set(streams)
        want = int(k.get("stream_syncs") or 0)
        got = sum(1 for c in mine if c.ok and c.api == "cuStreamSynchronize" and c.dev == d
                  and (c.handle in hs or c.stream in hs))
        if got < want:
            self.fail(name, d, f"{name} dev {d}: {want} stream synchronizes made, {got} cuStreamSynchronize on its "
                               f"streams with dev {d}")
        elif want:
            self.ok(name, d, f"{name} dev {d}: {got} cuStreamSynchronize on its streams (program made {want})")

    def check_set_current(self, name, d, k, mine):
        want = int(k.get("set_current") or 0)
        sets = [c for c in mine if c.ok and c.api in SET_CURRENT_APIS and c.dev == d]
        if want and not sets:
            self.fail(name, d, f"{name} dev {d}: the program made device {d} current {want} times; the trace has "
                               f"no set-current call with dev {d}")
            return
        if sets:
            med = statistics.median(c.end - c.start for c in sets)
            self.ok(name, d, f"{name} dev {d}: {len(sets)} set-current calls with dev {d} (program switched "
                             f"{want} times), median {med:.0f} ns")

    def check_otlp(self, doc, summary):
        name = f"{doc.get('program', '?')}[pid {doc.get('pid')}]"
        res = (summary.get("resources") or {}).get(str(doc["pid"]))
        if res is None:
            self.fail(name, None, f"{name}: no OTLP resource with process.pid {doc['pid']}")
            return
        used = {str(d) for d in (doc.get("per_device") or {})}
        bound = res.get("bound_devices", res.get("devices")) or {}
        foreign = {d: n for d, n in bound.items() if d not in used}
        if foreign:
            self.fail(name, None, f"{name}: OTLP spans on devices the program did not use: "
                                  + ", ".join(f"dev {d}: {n}" for d, n in sorted(foreign.items())))
        else:
            per = ", ".join(f"dev {d}: {n}" for d, n in sorted((res.get("devices") or {}).items()))
            self.ok(name, None, f"{name}: one OTLP resource, {res.get('spans')} spans ({per})")

    def check_unknown(self, name, devices, mine):
        unknown, others = {}, {}
        for c in mine:
            if c.dev == -1 and c.api.startswith(DEVICE_BOUND_PREFIXES):
                unknown[c.api] = unknown.get(c.api, 0) + 1
            elif c.dev != -1 and c.dev not in devices and c.api.startswith(DEVICE_BOUND_PREFIXES):
                others[c.dev] = others.get(c.dev, 0) + 1
        if unknown:
            top = sorted(unknown.items(), key=lambda kv: -kv[1])[:8]
            self.warn(name, None, f"{name}: {sum(unknown.values())} context/stream/memory calls without a device: "
                                  + ", ".join(f"{a} {n}" for a, n in top))
        if others:
            self.warn(name, None, f"{name}: calls on devices the program did not use: "
                                  + ", ".join(f"dev {d}: {n}" for d, n in sorted(others.items())))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="cuprof dump output (text twin) or otlp_sink.py summary, or - for stdin")
    ap.add_argument("programs", nargs="+", help="JSON files the multigpu programs wrote")
    ap.add_argument("--json", help="also write the findings here as JSON")
    ap.add_argument("--otlp", help="otlp_sink.py's summary of the exported trace, to check its resources")
    ap.add_argument("--quiet", action="store_true", help="print only failures, warnings and the summary")
    args = ap.parse_args(argv)
    try:
        if args.trace == "-":
            text = sys.stdin.read()
        else:
            with open(args.trace, encoding="utf-8") as f:
                text = f.read()
        otlp_source = None
        if text.lstrip().startswith("{"):
            otlp_source = json.loads(text)
            calls = calls_from_otlp(otlp_source)
            processes = otlp_source.get("resources") or {}
        else:
            lines = text.splitlines()
            if not lines or not lines[0].startswith("cuprof-text"):
                raise ValueError(f"{args.trace} is not a cuprof text trace (first line is not 'cuprof-text 1') "
                                 "nor an otlp_sink.py summary; make one with `cuprof dump TRACE.cuprof`")
            calls, processes = read_calls(lines)
        docs = []
        for p in args.programs:
            with open(p, encoding="utf-8") as f:
                docs.append(json.load(f))
        summary = otlp_source
        if args.otlp:
            with open(args.otlp, encoding="utf-8") as f:
                summary = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check.py: {e}", file=sys.stderr)
        return 2
    ch = Checker(calls)
    for doc in docs:
        ch.check_program(doc)
        if summary is not None:
            ch.check_otlp(doc, summary)
    if summary is not None:
        if summary.get("errors"):
            ch.fail(None, None, f"OTLP sink rejected requests: {'; '.join(summary['errors'][:3])}")
        ch.ok(None, None, f"OTLP: {summary.get('requests')} requests, {len(summary.get('resources') or {})} "
                          f"resources (pids {', '.join(sorted(summary.get('resources') or {}))})")
    for level, _, _, msg in ch.findings:
        if args.quiet and level == "ok":
            continue
        print(f"{level:4}  {msg}")
    pids = sorted({c.pid for c in calls})
    what = "exported call spans" if otlp_source is not None else "traced calls"
    print(f"checked {len(docs)} programs against {len(calls)} {what} of {len(pids)} processes "
          f"({len(processes)} {'resources' if otlp_source is not None else 'process lines'}): "
          f"{len(ch.failures)} failed")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"failures": len(ch.failures), "calls": len(calls), "processes": pids,
                       "findings": [{"level": lv, "program": p, "device": d, "message": m}
                                    for lv, p, d, m in ch.findings]}, f, indent=1)
    return 1 if ch.failures else 0


if __name__ == "__main__":
    sys.exit(main())
