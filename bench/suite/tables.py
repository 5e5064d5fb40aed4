#!/usr/bin/env python3
"""Turns the raw results of bench/suite/run.sh into markdown tables.

  python3 bench/suite/tables.py RESULTS_DIR > tables.md

Standard library only; reads what run.sh wrote (see README.md for the
layout) and tolerates missing or failed runs, which the tables mark. Goals
(issue 7):
  - cuprof adds at most 30 ns per call, and at most a quarter of what the CUPTI
    callback API adds;
  - cuprof's reported per-call times (its calibrated in-call cost subtracted)
    are within 10 % of bare for calls of 100 ns and more, within 15 ns below;
  - cuprof adds at most 5 % wall time to the realistic workloads.
"""

import json
import os
import sys

LOOP_TOOLS = ["none", "cuprof", "cupti_cb", "cupti_act", "nsys"]
TOOL_NAMES = {
    "none": "bare",
    "cuprof": "cuprof",
    "cupti_cb": "CUPTI callback",
    "cupti_act": "CUPTI activity",
    "nsys": "nsys -t cuda",
    "torchprof": "torch.profiler",
}
ADDED_NS_GOAL = 30.0
CUPTI_FRACTION_GOAL = 0.25
ACCURACY_REL = 0.10
ACCURACY_ABS_NS = 15.0
ACCURACY_REL_FROM_NS = 100.0
WALL_GOAL = 0.05


def load(path):
    """Returns the JSON document at path, or None when absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt_ns(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g} ms"
    if a >= 1e4:
        return f"{v / 1e3:.3g} us"
    if a >= 100:
        return f"{v:.0f} ns"
    return f"{v:.1f} ns"


def fmt_ratio(v):
    return "-" if v is None else f"{v:.2f}x"


def fmt_num(v, digits=3):
    if v is None:
        return "-"
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


class Report:
    """What cuprof report --format json says, reduced to what the suite needs."""

    def __init__(self, doc):
        self.doc = doc or {}
        ov = self.doc.get("overhead") or {}
        self.inside_ns = float(ov.get("inside_ns") or 0)
        self.added_ns = float(ov.get("added_ns") or 0)
        self.subtracted = bool(ov.get("subtracted"))
        self.apis = {}
        for row in self.doc.get("apis") or []:
            name = row.get("api")
            if name:
                self.apis[name] = row
        meta = self.doc.get("meta") or {}
        self.calls = meta.get("calls")
        if self.calls is None and self.apis:
            self.calls = sum(int(r.get("count") or 0) for r in self.apis.values())
        self.events = meta.get("events")
        drops = self.doc.get("drops") or {}
        self.dropped = drops.get("total")

    def per_call(self, api, key):
        """The API's mean_ns or median_ns per call, with the in-call cost subtracted."""
        row = self.apis.get(api)
        if not row or row.get(key) is None:
            return None
        v = float(row[key])
        if not self.subtracted:
            v = max(0.0, v - self.inside_ns)
        return v


def fail_note(run, stem=None):
    """Why a run gave no result, from its .run.json (and the last line of its
    stderr when stem names it), or None."""
    if run is None:
        return None
    if run.get("skipped"):
        return "skipped: " + run["skipped"]
    if run.get("rc") not in (0, None):
        note = f"exit status {run['rc']}" + (" (timeout)" if run.get("rc") in (124, 137) else "")
        last = last_line(stem + ".stderr") if stem else None
        return f"{note}: {last}" if last else note
    return None


def last_line(path):
    """The last non-empty line of a text file, shortened, or None."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
    except OSError:
        return None
    if not lines:
        return None
    return lines[-1][:200].replace("|", "/")


class Results:
    def __init__(self, root):
        self.root = root
        self.notes = []
        self.goals = []  # (goal, where, verdict)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    # --- machine ------------------------------------------------------------
    def machine(self):
        env = load(self.path("env.json"))
        if not env:
            return "## Machine\n\n(no env.json: run.sh's envinfo.py did not run)\n"
        gpus = env.get("gpus") or []
        gpu = ", ".join(f"{g.get('index')}: {g.get('name')} ({g.get('memory')})" for g in gpus) or "-"
        driver = gpus[0].get("driver") if gpus else None
        mods = env.get("modules") or {}
        suite = env.get("suite") or {}
        rows = [
            ("date", env.get("date")),
            ("host", env.get("host")),
            ("GPU", gpu),
            ("driver", driver),
            ("CPU", f"{env.get('cpu')} ({env.get('cpus')} logical)"),
            ("OS", f"{env.get('os')}, kernel {env.get('kernel')}, {env.get('glibc')}"),
            ("Python", env.get("python")),
            ("torch / CuPy / cuda.core / cuda.bindings",
             " / ".join(str(mods.get(m)) for m in ("torch", "cupy", "cuda.core", "cuda.bindings"))),
            ("gcc / nvcc", f"{env.get('gcc')} / {env.get('nvcc')}"),
            ("cuprof", env.get("cuprof")),
            ("nsys", env.get("nsys")),
            ("suite", f"{suite.get('mode')} mode, budget {suite.get('budget_s')} s, tools {suite.get('available')}"),
        ]
        return "## Machine\n\n" + table(["", ""], [(k, "-" if v is None else v) for k, v in rows]) + "\n"

    # --- part 1: loops ------------------------------------------------------
    def loop_cases(self):
        seen = []
        for tool in LOOP_TOOLS:
            d = self.path("loops", tool)
            if not os.path.isdir(d):
                continue
            for name in sorted(os.listdir(d)):
                if name.endswith(".json") and name.count(".") == 1:
                    case = name[:-5]
                    if case not in seen:
                        seen.append(case)
        order = ["ctx_get_current", "ctx_set_current", "get_error_name", "ctx_synchronize",
                 "stream_create_destroy", "event_create_destroy", "alloc_free_async",
                 "alloc_free_sync_threshold0", "alloc_free_sync_thresholdmax"]
        return sorted(seen, key=lambda c: (order.index(c) if c in order else len(order), c))

    def loop(self, tool, case):
        doc = load(self.path("loops", tool, case + ".json"))
        run = load(self.path("loops", tool, case + ".run.json"))
        note = fail_note(run, self.path("loops", tool, case))
        if doc is None:
            if note:
                self.notes.append(f"loops {case} under {TOOL_NAMES[tool]}: {note}")
            return None
        if doc.get("failures"):
            self.notes.append(f"loops {case} under {TOOL_NAMES[tool]}: {doc['failures']} driver calls failed")
        if note and tool != "nsys":
            self.notes.append(f"loops {case} under {TOOL_NAMES[tool]}: {note} (its timings are kept)")
        return doc

    def part_loops(self):
        cases = self.loop_cases()
        if not cases:
            return "## 1. Driver-call loops\n\n(no loop results)\n"
        rows, acc_rows = [], []
        reps = None
        for case in cases:
            docs = {t: self.loop(t, case) for t in LOOP_TOOLS}
            bare = docs["none"]
            any_doc = next((d for d in docs.values() if d), None)
            k = int(any_doc.get("calls_per_iter") or 1)
            reps = reps or any_doc.get("reps")

            def per_call(doc):
                return None if doc is None else float(doc["median_ns"]) / k

            def spread(doc):
                return 0.0 if doc is None else (float(doc["max_ns"]) - float(doc["min_ns"])) / k

            b = per_call(bare)
            cells = [f"`{case}`", k]
            added = {}
            for t in LOOP_TOOLS:
                v = per_call(docs[t])
                if v is None:
                    cells.append("-")
                    continue
                if b and t != "none":
                    added[t] = v - b
                    cells.append(f"{fmt_ns(v)} ({fmt_ratio(v / b)})")
                else:
                    cells.append(fmt_ns(v))
            cp, cb = added.get("cuprof"), added.get("cupti_cb")
            cells.append(fmt_ns(cp))
            cells.append(fmt_ns(cb))
            # Goal: at most 30 ns added per call; noise-aware.
            if cp is None:
                g30 = "-"
            else:
                noise = max(spread(bare), spread(docs["cuprof"])) / 2
                if cp <= ADDED_NS_GOAL:
                    g30 = "met"
                elif cp - noise <= ADDED_NS_GOAL:
                    g30 = f"inconclusive (noise ±{fmt_ns(noise)})"
                else:
                    g30 = "**missed**"
                self.goals.append(("cuprof adds <= 30 ns per call", case, g30))
            if cp is None or cb is None:
                gq = "-"
            elif cb <= 0:
                gq = "n/a (CUPTI adds nothing measurable)"
            else:
                frac = max(cp, 0.0) / cb
                noise = max(spread(bare), spread(docs["cuprof"]), spread(docs["cupti_cb"])) / 2
                if frac <= CUPTI_FRACTION_GOAL:
                    gq = f"{frac:.2f} met"
                elif cp - noise <= CUPTI_FRACTION_GOAL * (cb + noise):
                    gq = f"{frac:.2f} inconclusive (noise ±{fmt_ns(noise)})"
                else:
                    gq = f"{frac:.2f} **missed**"
                self.goals.append(("cuprof adds <= 1/4 of CUPTI callback", case, gq))
            cells += [g30, gq]
            rows.append(cells)
            acc = self.accuracy_row(case, bare, k)
            if acc:
                acc_rows.append(acc)

        walls = {}
        for case in cases:
            for t in LOOP_TOOLS:
                run = load(self.path("loops", t, case + ".run.json"))
                if run and run.get("wall_s") is not None:
                    n, total = walls.get(t, (0, 0.0))
                    walls[t] = (n + 1, total + float(run["wall_s"]))
        wall_line = ""
        if walls:
            wall_line = ("Wall time of the loop processes, start-up and the tool's own start and exit included "
                         "(sum over cases): " + ", ".join(
                             f"{TOOL_NAMES[t]} {walls[t][1]:.1f} s ({walls[t][0]} runs)" for t in LOOP_TOOLS
                             if t in walls) + ".")
        header = ["loop", "calls/iter"] + [TOOL_NAMES[t] for t in LOOP_TOOLS] + [
            "cuprof added/call", "CUPTI cb added/call", "goal <= 30 ns", "cuprof / CUPTI cb added (goal <= 0.25)"]
        text = ["## 1. Driver-call loops", "",
                f"Time per driver call (loop iteration time / calls per iteration), median of {reps} "
                "repetitions in one process per case and tool, ratio to bare in parentheses. "
                "nsys is timed only: the nsys found on this machine writes a .qdstrm but cannot make a report.",
                "", table(header, rows), "", wall_line, ""]
        text += ["### 1b. Accuracy: cuprof's reported time per call against bare", "",
                 "Reported: the sum over the loop's APIs of cuprof report's per-API median (nearest rank) with "
                 "cuprof's calibrated in-call cost subtracted; bare: the bare loop's median time per iteration "
                 "(each repetition's mean). Goal: within 10 % when the iteration takes 100 ns or more, else within "
                 "15 ns per call. The mean is shown too: it carries every preemption and page fault of the run, "
                 "which the bare loop's median of repetitions leaves out.", ""]
        if acc_rows:
            text.append(table(["loop", "bare / iter", "cuprof reported / iter", "difference", "allowed", "goal",
                               "(reported mean)", "per API: median (calls)", "calibrated cost: in-call (subtracted); added per call"],
                              acc_rows))
        else:
            text.append("(no cuprof reports)")
        return "\n".join(text) + "\n"

    def accuracy_row(self, case, bare, k):
        rep = load(self.path("loops", "cuprof", case + ".report.json"))
        doc = load(self.path("loops", "cuprof", case + ".json"))
        if rep is None or doc is None or bare is None:
            return None
        r = Report(rep)
        apis = doc.get("apis") or []
        medians = [r.per_call(a, "median_ns") for a in apis]
        means = [r.per_call(a, "mean_ns") for a in apis]
        if any(v is None for v in medians):
            missing = [a for a, v in zip(apis, medians) if v is None]
            self.notes.append(f"accuracy {case}: cuprof's report has no row for {', '.join(missing)}")
            self.goals.append(("reported time within 10 % / 15 ns of bare", case, "**missed** (not captured)"))
            return [f"`{case}`", fmt_ns(float(bare["median_ns"])), "-", "-", "-",
                    "**missed** (APIs not captured)", "-", "-", "-"]
        rep_median = sum(medians)
        rep_mean = sum(means) if None not in means else None
        b = float(bare["median_ns"])
        diff = rep_median - b
        if b >= ACCURACY_REL_FROM_NS:
            allowed = ACCURACY_REL * b
            allowed_txt = f"±{fmt_ns(allowed)} (10 %)"
        else:
            allowed = ACCURACY_ABS_NS * k
            allowed_txt = f"±{fmt_ns(allowed)} (15 ns/call)"
        verdict = "met" if abs(diff) <= allowed else "**missed**"
        self.goals.append(("reported time within 10 % / 15 ns of bare", case, verdict))
        detail = ", ".join(
            f"{a} {fmt_ns(m)} ({(r.apis.get(a) or {}).get('count', '?')})" for a, m in zip(apis, medians))
        sub = f"{r.inside_ns:.1f} ns" + ("" if r.subtracted else " (by tables.py)") + f"; added {r.added_ns:.1f} ns"
        if r.dropped:
            self.notes.append(f"accuracy {case}: cuprof dropped {r.dropped} events")
        return [f"`{case}`", fmt_ns(b), fmt_ns(rep_median),
                f"{'+' if diff >= 0 else ''}{fmt_ns(diff)} ({diff / b * 100:+.1f} %)", allowed_txt, verdict,
                fmt_ns(rep_mean), detail, sub]

    def part_capture(self):
        """bench/capture/run.sh's table: ns per iteration without and with the shim."""
        path = self.path("capture", "overhead.stdout")
        note = fail_note(load(self.path("capture", "overhead.run.json")))
        if note:
            self.notes.append(f"bench/capture/run.sh: {note}")
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            return ""
        rows = []
        for line in lines:
            parts = line.split()
            if len(parts) < 4:
                continue
            try:
                plain, shim, added = (float(x) for x in parts[-3:])
            except ValueError:
                continue
            rows.append([f"`{' '.join(parts[:-3])}`", fmt_ns(plain), fmt_ns(shim), fmt_ns(added)])
        if not rows:
            return ""
        return ("### 1c. The shim alone (bench/capture/run.sh)\n\n"
                "The capture helper's harness: the same binary with and without the shim preloaded (a thread "
                "drains the ring instead of `cuprof record`), interleaved runs, best of each; ns per iteration.\n\n"
                + table(["call", "no shim", "shim", "added"], rows) + "\n")

    # --- part 2: seeds ------------------------------------------------------
    def part_seeds(self):
        docs = {}
        for t in ("none", "cuprof", "torchprof"):
            doc = load(self.path("seeds", t + ".json"))
            note = fail_note(load(self.path("seeds", t + ".run.json")), self.path("seeds", t))
            if note:
                self.notes.append(f"seeds under {TOOL_NAMES[t]}: {note}")
            if doc:
                docs[t] = {r["id"]: r for r in doc.get("results", [])}
                for lib, err in (doc.get("library_errors") or {}).items():
                    self.notes.append(f"seeds under {TOOL_NAMES[t]}: {lib} unavailable: {err}")
        if not docs:
            return "## 2. Seed statements (Python, timeit)\n\n(no seed results)\n"
        ids = []
        for d in docs.values():
            for i in d:
                if i not in ids:
                    ids.append(i)
        bare_doc = load(self.path("seeds", "none.json")) or {}
        repeat = next((r["repeat"] for r in bare_doc.get("results") or [] if r.get("repeat")), "?")
        rows = []
        for i in ids:
            stmt = next(d[i]["statement"] for d in docs.values() if i in d)
            b = self.seed_us(docs, "none", i)
            c = self.seed_us(docs, "cuprof", i)
            p = self.seed_us(docs, "torchprof", i)
            rows.append([f"`{stmt}`", fmt_us(b), fmt_us(c), fmt_ratio(c / b) if b and c else "-",
                         fmt_us(c - b) if b and c else "-", fmt_us(p), fmt_ratio(p / b) if b and p else "-"])
        header = ["statement", "bare us", "cuprof us", "ratio", "cuprof added", "torch.profiler us", "ratio"]
        return ("## 2. Seed statements (Python, timeit)\n\n"
                f"Microseconds per statement, median of {repeat} timeit repetitions (each about "
                f"{bare_doc.get('target_s', '?')} s). cuprof: the same script under `cuprof record`; "
                "torch.profiler: CPU+CUDA activities, torch statements only. `s0` is the legacy default stream.\n\n" + table(header, rows) + "\n")

    def seed_us(self, docs, tool, sid):
        r = docs.get(tool, {}).get(sid)
        if not r:
            return None
        if "error" in r:
            if not r["error"].startswith(f"{r.get('library')} unavailable"):  # noted once per library
                self.notes.append(f"seed `{sid}` under {TOOL_NAMES[tool]}: {r['error']}")
            return None
        return r.get("median_us")

    # --- part 3: workloads --------------------------------------------------
    def part_workloads(self):
        rows = []
        for wl, tools in (("torch_mlp", ["none", "cuprof", "cupti_cb", "cupti_act", "torchprof"]),
                          ("cupy_pipeline", ["none", "cuprof", "cupti_cb", "cupti_act"])):
            base = None
            for t in tools:
                stem = self.path("workloads", f"{wl}-{t}")
                doc = load(stem + ".json")
                run = load(stem + ".run.json")
                note = fail_note(run, stem)
                if doc is None:
                    if note:
                        self.notes.append(f"workload {wl} under {TOOL_NAMES[t]}: {note}")
                        rows.append([wl, TOOL_NAMES[t], "-", "-", "-", "-", "-", "-", note])
                    continue
                work = float(doc["work_s"])
                seg = float(doc["median_segment_s"])
                if t == "none":
                    base = seg
                ratio = seg / base if base else None
                events, size = self.workload_events(t, stem, doc)
                goal = "-"
                if t == "cuprof" and ratio is not None:
                    goal = f"{(ratio - 1) * 100:+.1f} % " + ("met" if ratio - 1 <= WALL_GOAL else "**missed**")
                    self.goals.append(("<= 5 % wall time on workloads", wl, goal))
                proc = run.get("wall_s") if run else None
                rows.append([wl, TOOL_NAMES[t], f"{seg:.3f}", fmt_ratio(ratio), f"{work:.3f}", fmt_num(proc),
                             events, size, goal])
        if not rows:
            return "## 3. Realistic workloads\n\n(no workload results)\n"
        header = ["workload", "tool", "median segment s", "ratio", "work s", "process wall s",
                  "events captured", "trace bytes", "goal <= 5 % (cuprof)"]
        return ("## 3. Realistic workloads\n\n"
                "The timed steps (warm-up and calibration excluded; the same step count for every tool) run in "
                "5 equal segments: median segment s and its ratio to bare (the goal's measure); work s: all "
                "segments; process wall s: the whole process including start-up, imports and the tool's exit work "
                "(cuprof: writing the trace). Events: cuprof's recorded calls, CUPTI callbacks or activity "
                "records counted by the tool, torch.profiler's Kineto events.\n\n" + table(header, rows) + "\n")

    def workload_events(self, tool, stem, doc):
        run = load(stem + ".run.json") or {}
        if tool == "cuprof":
            rep = load(stem + ".report.json")
            if rep is None:
                return "-", fmt_num(run.get("trace_bytes"))
            r = Report(rep)
            ev = f"{r.calls} calls"
            if r.dropped:
                ev += f", {r.dropped} dropped"
            return ev, fmt_num(run.get("trace_bytes"))
        if tool in ("cupti_cb", "cupti_act"):
            c = load(stem + ".count.json")
            if c is None:
                return "(no count)", "-"
            ev = f"{c.get('events')}"
            if c.get("dropped"):
                ev += f", {c['dropped']} dropped"
            return ev, "-"
        if tool == "torchprof":
            return fmt_num(doc.get("events")), "-"
        return "-", "-"

    # --- all ----------------------------------------------------------------
    def render(self):
        parts = [
            "# cuprof benchmark suite results",
            "",
            f"Raw results: `{os.path.basename(os.path.abspath(self.root))}/` (JSON per run). "
            "Produced by `bench/suite/tables.py`.",
            "",
            self.machine(),
            self.part_loops(),
            self.part_capture(),
            self.part_seeds(),
            self.part_workloads(),
        ]
        if self.goals:
            met = sum(1 for g in self.goals if g[2].split()[-1] == "met")
            missed = [g for g in self.goals if "missed" in g[2]]
            parts.append("## Goals\n")
            parts.append(f"{met} of {len(self.goals)} checks met; missed: "
                         + ("none" if not missed else "; ".join(f"{g[0]} ({g[1]}: {g[2]})" for g in missed))
                         + ". Inconclusive checks are neither.\n")
        if self.notes:
            seen = []
            for n in self.notes:
                if n not in seen:
                    seen.append(n)
            parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in seen) + "\n")
        return "\n".join(parts)


def fmt_us(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: tables.py RESULTS_DIR", file=sys.stderr)
        return 2
    if not os.path.isdir(argv[0]):
        print(f"tables.py: {argv[0]} is not a folder: pass the RESULTS_DIR run.sh wrote", file=sys.stderr)
        return 2
    sys.stdout.write(Results(argv[0]).render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
