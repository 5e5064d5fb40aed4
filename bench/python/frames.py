#!/usr/bin/env python3
"""Python frames of a cuprof trace, read from its text dump (`cuprof dump`).

  frames.py DUMP [--statements STATEMENTS_JSON] [--events EVENTS_JSON]

For each statement of statements.py's JSON (its timed window, CLOCK_MONOTONIC
like the trace clock, and its frame name) it finds the frames of that name
inside the window and gives their count, inclusive and self time per call
and the driver time under them; for events.py's JSON it counts the frames
recorded in each timed window. Times are as recorded; when the trace's meta
gives the calibrated cost per Python event (py_event_ns) and per driver call
(added_ns), "corrected" times also subtract those costs for the events and
calls nested inside each frame, as cuprof's report does.

The dump lines read (others are skipped):
  meta ... added_ns=X py_event_ns=Y
  code ID|id=ID kind=python|native name=QUALNAME module=M file=F line=N
  frame PID/TID t=START end=END code=ID [flags=...]   (or name=QUALNAME)
  call PID/TID t=START end=END api=NAME ...
"""

import argparse
import ast
import json
import re
import sys

from benchout import write_json

TOKEN = re.compile(r'([A-Za-z_][A-Za-z0-9_.]*)=("(?:[^"\\]|\\.)*"|\S*)|(\S+)')


def unquote(v):
    if v.startswith('"'):
        try:
            return ast.literal_eval(v)
        except (ValueError, SyntaxError):
            return v[1:-1]
    return v


def parse_line(line):
    """Returns (word, positional tokens, {key: value}) of one dump line."""
    word, _, rest = line.partition(" ")
    pos, kv = [], {}
    for m in TOKEN.finditer(rest):
        if m.group(1):
            kv[m.group(1)] = unquote(m.group(2))
        else:
            pos.append(m.group(3))
    return word, pos, kv


def num(v, default=0):
    try:
        return int(v, 0) if isinstance(v, str) else int(v)
    except (TypeError, ValueError):
        try:
            return float(v)
        except (TypeError, ValueError):
            return default


class Dump:
    """The frames, calls, code table and meta of one dump."""

    def __init__(self, lines):
        self.meta, self.code, self.frames, self.calls = {}, {}, [], []
        for line in lines:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            word, pos, kv = parse_line(line)
            if word == "meta":
                self.meta.update(kv)
            elif word == "code":
                cid = kv.get("id", pos[0] if pos else None)
                if cid is not None:
                    self.code[str(num(cid))] = kv
            elif word in ("frame", "call") and pos and "/" in pos[0]:
                pid, _, tid = pos[0].partition("/")
                start = num(kv.get("t"))
                ev = {"pid": num(pid), "tid": num(tid), "start": start, "end": num(kv.get("end", start)), "kv": kv}
                (self.frames if word == "frame" else self.calls).append(ev)
        for f in self.frames:
            kv = f.pop("kv")
            c = self.code.get(str(num(kv.get("code", -1))), {})
            f["name"] = kv.get("name") or kv.get("qualname") or c.get("name") or c.get("qualname") or ""
            f["module"] = kv.get("module") or c.get("module") or ""
            f["flags"] = kv.get("flags", "")
        for c in self.calls:
            c["api"] = c.pop("kv").get("api", "")
        self.py_event_ns = float(num(self.meta.get("py_event_ns", self.meta.get("pyevent_ns", 0)), 0) or 0)
        self.added_ns = float(num(self.meta.get("added_ns", 0), 0) or 0)
        self._nest()

    def _nest(self):
        """Gives every frame its direct children's time, the driver time and
        the events (frames and calls) nested anywhere inside it."""
        by_tid = {}
        for f in self.frames:
            f.update(child_ns=0, driver_ns=0, inner_frames=0, inner_calls=0)
            by_tid.setdefault((f["pid"], f["tid"]), []).append(("f", f))
        for c in self.calls:
            by_tid.setdefault((c["pid"], c["tid"]), []).append(("c", c))
        for evs in by_tid.values():
            # Enclosing before enclosed: by start, then the longer first, frames before calls.
            evs.sort(key=lambda e: (e[1]["start"], -e[1]["end"], e[0] != "f"))
            stack = []
            for kind, e in evs:
                while stack and stack[-1]["end"] <= e["start"] and not (
                        stack[-1]["end"] == e["start"] == e["end"] and kind == "c"):
                    stack.pop()
                while stack and e["end"] > stack[-1]["end"]:
                    stack.pop()  # overlapping, not nested: treat as a sibling
                dur = e["end"] - e["start"]
                if stack:
                    stack[-1]["child_ns"] += dur
                for s in stack:
                    if kind == "f":
                        s["inner_frames"] += 1
                    else:
                        s["inner_calls"] += 1
                        s["driver_ns"] += dur
                if kind == "f":
                    stack.append(e)

    def matching(self, frame, window=None, pid=None, module=""):
        """Frames whose qualname is frame or ends with "." + frame (or
        " " + frame, as native callables may be named), inside window, of a
        module starting with module (or of unknown module)."""
        out = []
        for f in self.frames:
            n = f["name"]
            if not (n == frame or n.endswith("." + frame) or n.endswith(" " + frame)):
                continue
            if module and f["module"] and not f["module"].startswith(module):
                continue
            if window and not (window[0] <= f["start"] and f["end"] <= window[1]):
                continue
            if pid is not None and f["pid"] != pid:
                continue
            out.append(f)
        return out

    def stats(self, frames):
        n = len(frames)
        if not n:
            return {"frames": 0}
        incl = sum(f["end"] - f["start"] for f in frames)
        self_ns = sum(f["end"] - f["start"] - f["child_ns"] for f in frames)
        driver = sum(f["driver_ns"] for f in frames)
        inner_ev = sum(2 * f["inner_frames"] for f in frames)
        inner_calls = sum(f["inner_calls"] for f in frames)
        corr = incl - self.py_event_ns * inner_ev - self.added_ns * inner_calls
        names = sorted({f["name"] for f in frames})
        return {"frames": n, "names": names, "inclusive_ns_per_call": incl / n, "self_ns_per_call": self_ns / n,
                "driver_ns_per_call": driver / n, "inclusive_corrected_ns_per_call": corr / n,
                "python_events_inside_per_call": inner_ev / n, "driver_calls_inside_per_call": inner_calls / n}

    def frames_in(self, window, pid=None):
        return sum(1 for f in self.frames if window[0] <= f["start"] and f["end"] <= window[1]
                   and (pid is None or f["pid"] == pid))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dump")
    ap.add_argument("--statements", help="statements.py JSON of the recorded process")
    ap.add_argument("--events", help="events.py JSON of the recorded process")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    with open(a.dump, encoding="utf-8", errors="replace") as f:
        d = Dump(f)
    doc = {"frames": len(d.frames), "calls": len(d.calls), "code": len(d.code),
           "py_event_ns": d.py_event_ns, "added_ns": d.added_ns}
    if a.statements:
        with open(a.statements, encoding="utf-8") as f:
            st = json.load(f)
        rows = []
        for r in st.get("results", []):
            if "window_ns" not in r:
                continue
            s = d.stats(d.matching(r["frame"], r["window_ns"], st.get("pid"), r.get("module", "")))
            s.update(id=r["id"], frame=r["frame"], statement_calls=r.get("calls"))
            rows.append(s)
        doc["statements"] = rows
    if a.events:
        with open(a.events, encoding="utf-8") as f:
            ev = json.load(f)
        out = {}
        for mode, v in ev.get("modes", {}).items():
            out[mode] = [{"call": d.frames_in(w[0:2], ev.get("pid")), "chain": d.frames_in(w[1:3], ev.get("pid"))}
                         for w in v.get("windows_ns", [])]
        doc["events"] = out
    write_json(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
