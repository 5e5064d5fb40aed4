#!/usr/bin/env python3
"""Turns the raw results of bench/suite/run.sh into markdown tables.

  python3 bench/suite/tables.py RESULTS_DIR > tables.md

Standard library only; reads what run.sh wrote (see README.md for the
layout) and tolerates missing or failed runs, which the tables mark. A loop
or workload ran in rounds (CASE.rN.json; a folder of an older suite has one
CASE.json, read as a single round): every tool once per round, so each
round's tool can be paired with the same round's bare run. Goals (issues 7
and 16):
  - cuprof adds at most 25 ns to each of the three cheap calls, and is within
    3 ns of its shim alone (the "shim" tool) measured in the same run;
  - cuprof adds at most 0.2x what the CUPTI callback API adds, on every loop
    where CUPTI's cost is measurable, and less than nsys everywhere;
  - cuprof's reported per-call times (its calibrated in-call cost subtracted)
    are within 10 % of bare for iterations of 100 ns and more, within 15 ns
    per call below;
  - cuprof adds at most 5 % to the realistic workloads' median segment;
  - no drops, and at most 7.1 trace bytes per recorded call on the workloads.
A goal is met or missed only when the spread allows it (see decide), else
"undecided".
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import runarchive  # noqa: E402 - bench/lib: an archived run's raw files
from speedprobe import CALM_TOL, calm_spans, is_calm  # noqa: E402 - bench/lib: the speed probe's rule
from verdict import interval, sign_rank, verdict, verdict_within  # noqa: E402,F401 - bench/lib: the goals' interval and verdicts

LOOP_TOOLS = ["none", "shim", "cuprof", "cupti_cb", "cupti_act", "nsys"]
TOOL_NAMES = {
    "none": "bare",
    "shim": "shim alone",
    "cuprof": "cuprof",
    "cupti_cb": "CUPTI callback",
    "cupti_act": "CUPTI activity",
    "nsys": "nsys -t cuda",
    "torchprof": "torch.profiler",
}
CHEAP_CASES = ("ctx_get_current", "ctx_set_current", "get_error_name")
ADDED_NS_GOAL = 25.0
SHIM_GAP_NS_GOAL = 3.0
CUPTI_FRACTION_GOAL = 0.2
BYTES_PER_CALL_GOAL = 7.1
ACCURACY_REL = 0.10
ACCURACY_ABS_NS = 15.0
ACCURACY_REL_FROM_NS = 100.0
WALL_GOAL = 0.05
# loops.c's speed probe: the kinds that judge a rep calm.
PROBE_KINDS = ("ilp", "call")


def load(path):
    """Returns the JSON document at path, or None when absent or unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def median(vals):
    v = sorted(vals)
    n = len(v)
    if n == 0:
        return None
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def bold_miss(v):
    return "**missed**" if v == "missed" else v


def decide(iv, limit):
    """verdict (bench/lib/verdict.py) as a table cell: a miss in bold."""
    return bold_miss(verdict(iv, limit))


def decide_within(iv, allowed):
    return bold_miss(verdict_within(iv, allowed))


def fmt_iv(iv, fmt):
    return "-" if iv is None else f"[{fmt(iv[0])}, {fmt(iv[1])}]"


def round_files(d, stem):
    """{round: path} of stem's results in folder d: stem.rN.json per round, or
    stem.json (an older suite's single run) as round 1."""
    out = {}
    if not os.path.isdir(d):
        return out
    for name in os.listdir(d):
        if not name.startswith(stem + ".r") or not name.endswith(".json"):
            continue
        mid = name[len(stem) + 2:-5]
        if mid.isdigit():
            out[int(mid)] = os.path.join(d, name[:-5])
    if not out and os.path.exists(os.path.join(d, stem + ".json")):
        out[1] = os.path.join(d, stem)
    return out


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



def capture_rows(lines):
    """Rows of bench/capture/run.sh's output: a call's name, then no shim,
    shim, added and, from run.sh's end-only columns when present, end-only
    and its added (the name is what precedes the numbers, spaces and all)."""
    rows = []
    for line in lines:
        parts = line.split()
        nums = []
        while parts and len(nums) < 5:
            try:
                nums.insert(0, float(parts[-1]))
            except ValueError:
                break
            parts.pop()
        if not parts or len(nums) not in (3, 5):
            continue
        rows.append([f"`{' '.join(parts)}`"] + [fmt_ns(x) for x in nums])
    return rows


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
            ("CPU pinning", suite.get("pin") or "not recorded (before bench/lib/pin.sh)"),
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
                if not name.endswith(".json") or name.endswith((".run.json", ".report.json", ".count.json")):
                    continue
                case = name[:-5].split(".")[0]
                if case not in seen:
                    seen.append(case)
        order = ["ctx_get_current", "ctx_set_current", "get_error_name", "ctx_synchronize",
                 "stream_create_destroy", "event_create_destroy", "alloc_free_async",
                 "alloc_free_sync_threshold0", "alloc_free_sync_thresholdmax"]
        return sorted(seen, key=lambda c: (order.index(c) if c in order else len(order), c))

    def loop_rounds(self, tool, case):
        """{round: LoopRun} of the runs of case under tool that gave timings."""
        out = {}
        for r, stem in sorted(round_files(self.path("loops", tool), case).items()):
            doc = load(stem + ".json")
            run = load(stem + ".run.json")
            note = fail_note(run, stem)
            where = f"loops {case} under {TOOL_NAMES[tool]}" + (f" round {r}" if stem.endswith(f".r{r}") else "")
            if doc is None:
                if note:
                    self.notes.append(f"{where}: {note}")
                continue
            if doc.get("failures"):
                self.notes.append(f"{where}: {doc['failures']} driver calls failed")
            if note and tool != "nsys":
                self.notes.append(f"{where}: {note} (its timings are kept)")
            out[r] = LoopRun(doc, stem)
        # Runs that never wrote a result (skipped past the budget, crashed).
        d = self.path("loops", tool)
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                if name.startswith(case + ".") and name.endswith(".run.json"):
                    stem = os.path.join(d, name[:-9])
                    if not os.path.exists(stem + ".json"):
                        note = fail_note(load(stem + ".run.json"), stem)
                        if note:
                            suffix = name[len(case) + 1:-9]
                            self.notes.append(f"loops {case} under {TOOL_NAMES[tool]}"
                                              + (f" round {suffix[1:]}" if suffix else "") + f": {note}")
        return out

    def part_loops(self):
        cases = self.loop_cases()
        if not cases:
            return "## 1. Driver-call loops\n\n(no loop results)\n"
        time_rows, added_rows, goal_rows, acc_rows = [], [], [], []
        reps = rounds = None
        tools_seen = set()
        probe_rows = []
        for case in cases:
            runs = {t: self.loop_rounds(t, case) for t in LOOP_TOOLS}
            any_run = next((r for rs in runs.values() for r in rs.values()), None)
            if any_run is None:
                continue
            floors = probe_floors(runs)
            if floors:
                for rs in runs.values():
                    for run in rs.values():
                        run.calm(floors)
                probe_rows.append(self.probe_row(case, runs, floors))
            k = any_run.calls
            reps = reps or any_run.doc.get("reps")
            rounds = max(rounds or 0, max(len(rs) for rs in runs.values()))
            for t, rs in runs.items():
                if rs:
                    tools_seen.add(t)
            cells = [f"`{case}`", k]
            for t in LOOP_TOOLS:
                vals = [x.per_call for x in runs[t].values()]
                if not vals:
                    cells.append("-")
                elif len(vals) == 1:
                    cells.append(fmt_ns(vals[0]))
                else:
                    cells.append(f"{fmt_ns(median(vals))} ({fmt_ns(min(vals))}-{fmt_ns(max(vals))}, {len(vals)})")
            time_rows.append(cells)

            added = {t: self.paired(runs[t], runs["none"]) for t in LOOP_TOOLS if t != "none"}
            gap = self.paired(runs["cuprof"], runs["shim"])
            row = [f"`{case}`"]
            for t in ("shim", "cuprof"):
                row.append(added[t].cell())
            row.append(gap.cell())
            fastest = [min(x.per_call for x in runs[t].values()) for t in ("cuprof", "shim") if runs[t]]
            row.append(fmt_ns(fastest[0] - fastest[1]) if len(fastest) == 2 else "-")
            for t in ("cupti_cb", "cupti_act", "nsys"):
                row.append(added[t].cell())
            cp, cb = added["cuprof"], added["cupti_cb"]
            ratio = None
            if cp.vals and cb.vals and median(cb.vals) > 0:
                ratio = median(cp.vals) / median(cb.vals)
            row.append("-" if ratio is None else f"{ratio:.2f}")
            added_rows.append(row)

            goal_rows.append([f"`{case}`"] + self.loop_goals(case, added, gap))
            acc = self.accuracy_row(case, runs["none"], runs["cuprof"], k)
            if acc:
                acc_rows.append(acc)

        walls = {}
        for case in cases:
            for t in LOOP_TOOLS:
                for stem in round_files(self.path("loops", t), case).values():
                    run = load(stem + ".run.json")
                    if run and run.get("wall_s") is not None:
                        n, total = walls.get(t, (0, 0.0))
                        walls[t] = (n + 1, total + float(run["wall_s"]))
        wall_line = ""
        if walls:
            wall_line = ("Wall time of the loop processes, start-up and the tool's own start and exit included "
                         "(sum over cases and rounds): " + ", ".join(
                             f"{TOOL_NAMES[t]} {walls[t][1]:.1f} s ({walls[t][0]} runs)" for t in LOOP_TOOLS
                             if t in walls) + ".")
        header = ["loop", "calls/iter"] + [TOOL_NAMES[t] for t in LOOP_TOOLS]
        text = ["## 1. Driver-call loops", "",
                f"Time per driver call (loop iteration time / calls per iteration). Each process times {reps} "
                "repetitions and gives their median; the tools ran in rounds, every tool once per round in a "
                f"rotating order (up to {rounds} rounds, after a warm-up process per case). A cell is the median "
                "over rounds (smallest-largest, rounds). The shim alone is cuprof's shim preloaded with a thread of "
                "the loop freeing its chunks (no `cuprof record`). "
                "nsys is timed only: the nsys found on this machine writes a .qdstrm but cannot make a report.",
                "", table(header, time_rows), "", wall_line, "",
                "### 1a. Added per call, paired by round", "",
                "Each round's time per call minus the same round's bare time: median [interval the goals are "
                "judged on: second smallest to second largest of 5 or more rounds, else smallest to largest; one "
                "round: +- half the spread of its repetitions]. cuprof - shim: each round's cuprof time minus "
                "the same round's shim-alone time. Fastest rounds: cuprof's fastest round minus the shim's "
                "(shown, not judged: on a host whose processes land fast or slow at random, the fastest of "
                "each is the steadier estimate).", "",
                table(["loop", "shim alone", "cuprof", "cuprof - shim", "cuprof - shim (fastest rounds)",
                       "CUPTI callback", "CUPTI activity", "nsys -t cuda", "cuprof / CUPTI cb (medians)"],
                      added_rows), "",
                "### 1b. Goals per loop", "",
                f"met: the whole interval meets the goal; **missed**: none of it does; undecided: the spread "
                f"straddles it. <= {ADDED_NS_GOAL:g} ns and within {SHIM_GAP_NS_GOAL:g} ns of the shim apply to the "
                f"three cheap calls; the CUPTI goal (cuprof's added cost - {CUPTI_FRACTION_GOAL:g} x CUPTI's, per "
                "round, <= 0) to loops where CUPTI's added cost is measurable (its interval above 0); nsys: "
                "cuprof's added cost - nsys's, per round, <= 0.", "",
                table(["loop", f"cuprof <= {ADDED_NS_GOAL:g} ns", f"cuprof - shim <= {SHIM_GAP_NS_GOAL:g} ns",
                       f"cuprof <= {CUPTI_FRACTION_GOAL:g} x CUPTI cb", "cuprof < nsys"], goal_rows), ""]
        text += ["### 1c. Accuracy: cuprof's reported time per call against bare", "",
                 "Reported: the sum over the loop's APIs of cuprof report's per-API median (nearest rank) with "
                 "cuprof's calibrated in-call cost subtracted; bare: the bare loop's median time per iteration, "
                 "of the same round; the difference is judged per round like the goals above. Goal: within "
                 "10 % when the iteration takes 100 ns or more, else within 15 ns per call. The mean is shown "
                 "too: it carries every preemption and page fault of the run, which the bare loop's median of "
                 "repetitions leaves out.", ""]
        if acc_rows:
            text.append(table(["loop", "bare / iter", "cuprof reported / iter", "difference (median)",
                               "difference interval", "allowed", "goal", "(reported mean)",
                               "per API: median (calls)", "calibrated cost: in-call (subtracted); added per call"],
                              acc_rows))
        else:
            text.append("(no cuprof reports)")
        text.append("")
        if probe_rows:
            text += ["### 1d. The speed probe: calm repetitions", "",
                     "Before every repetition and after the last, each loop process timed three small units of "
                     "work that touch neither the driver nor any tool (loops.c: `alu` a dependent chain, `ilp` "
                     "eight independent streams, `call` calls through a table of functions). A repetition is "
                     f"calm when the `{'` and `'.join(PROBE_KINDS)}` readings on both its sides are within "
                     f"{(CALM_TOL - 1) * 100:.0f} % of the fastest reading of that kind in any process of the "
                     "case. Shown, not judged: the goals above judge every repetition. On the contended host of "
                     "the 2026-12-01 fourth lease the readings spread over 1.4-2x and this filter kept 0-4 of 80 "
                     "repetitions a tool, while other thresholds chosen after the fact turned verdicts both ways "
                     "(bench/suite/results/2026-12-01g-probe-16-rounds/tables.md). Per tool: calm repetitions kept / all, processes left with "
                     "none, and the median ns per call of the kept and of the let-go repetitions.", "",
                     table(["loop", "probe floors (ns)"] + [TOOL_NAMES[t] for t in LOOP_TOOLS], probe_rows), ""]
        text.append(self.capture_goals("loops"))
        return "\n".join(text) + "\n"

    def probe_row(self, case, runs, floors):
        cells = [f"`{case}`", ", ".join(f"{k} {floors[k]:.0f}" for k in PROBE_KINDS)]
        for t in LOOP_TOOLS:
            rs = [x for x in runs[t].values() if x.kept is not None]
            if not rs:
                cells.append("-")
                continue
            kept = [x.reps[i] for x in rs for i in x.kept]
            gone = [v for x in rs for v in x.contended()]
            none = sum(1 for x in rs if not x.kept)
            cells.append(f"{len(kept)}/{len(kept) + len(gone)}, {none} of {len(rs)} none; "
                         f"{fmt_ns(median(kept)) if kept else '-'} vs {fmt_ns(median(gone)) if gone else '-'}")
        return cells

    def paired(self, runs, base):
        """Paired differences runs[r] - base[r] per call over the rounds both have."""
        common = sorted(set(runs) & set(base))
        noise = 0.0
        if len(common) == 1:
            r = common[0]
            noise = max(runs[r].spread, base[r].spread) / 2
        return Paired({r: runs[r].per_call - base[r].per_call for r in common}, noise)

    def loop_goals(self, case, added, gap):
        cp, cb, ns = added["cuprof"], added["cupti_cb"], added["nsys"]
        cheap = case in CHEAP_CASES
        cells = []
        if cheap and cp.vals:
            v = decide(cp.iv(), ADDED_NS_GOAL)
            cells.append(f"{fmt_ns(median(cp.vals))} {v}")
            self.goals.append((f"cuprof adds <= {ADDED_NS_GOAL:g} ns per cheap call", case, cells[-1]))
        else:
            cells.append("-" if cp.vals else "(no data)")
        if cheap and gap.vals:
            v = decide(gap.iv(), SHIM_GAP_NS_GOAL)
            cells.append(f"{fmt_ns(median(gap.vals))} {v}")
            self.goals.append((f"cuprof within {SHIM_GAP_NS_GOAL:g} ns of the shim alone", case, cells[-1]))
        else:
            cells.append("-")
        pairs = paired_lists(cp, cb)
        if pairs and cb.iv()[0] > 0:
            diffs = [a - CUPTI_FRACTION_GOAL * b for a, b in pairs]
            noise = cp.noise + CUPTI_FRACTION_GOAL * cb.noise
            v = decide(interval(diffs, noise), 0.0)
            ratio = median([a for a, _ in pairs]) / median([b for _, b in pairs])
            self.goals.append((f"cuprof adds <= {CUPTI_FRACTION_GOAL:g} x the CUPTI callback", case, f"{ratio:.2f} {v}"))
            cells.append(f"{ratio:.2f} {v}")
        elif pairs:
            cells.append("n/a (CUPTI's cost not measurable)")
        else:
            cells.append("-")
        pairs = paired_lists(cp, ns)
        if pairs:
            diffs = [a - b for a, b in pairs]
            v = decide(interval(diffs, cp.noise + ns.noise), 0.0)
            self.goals.append(("cuprof adds less than nsys", case, v))
            cells.append(v)
        else:
            cells.append("-")
        return cells

    def accuracy_row(self, case, bare, cuprof, k):
        common = sorted(set(bare) & set(cuprof))
        diffs, reported, means, detail, sub = [], [], [], None, None
        for r in common:
            rep = load(cuprof[r].stem + ".report.json")
            if rep is None:
                continue
            rp = Report(rep)
            apis = cuprof[r].doc.get("apis") or []
            medians = [rp.per_call(a, "median_ns") for a in apis]
            if any(v is None for v in medians):
                missing = [a for a, v in zip(apis, medians) if v is None]
                self.notes.append(f"accuracy {case} round {r}: cuprof's report has no row for {', '.join(missing)}")
                continue
            mv = [rp.per_call(a, "mean_ns") for a in apis]
            b = float(bare[r].doc["median_ns"])
            reported.append(sum(medians))
            diffs.append(sum(medians) - b)
            if None not in mv:
                means.append(sum(mv))
            if rp.dropped:
                self.notes.append(f"accuracy {case} round {r}: cuprof dropped {rp.dropped} events")
            detail = ", ".join(f"{a} {fmt_ns(m)} ({(rp.apis.get(a) or {}).get('count', '?')})"
                               for a, m in zip(apis, medians))
            sub = (f"{rp.inside_ns:.1f} ns" + ("" if rp.subtracted else " (by tables.py)")
                   + f"; added {rp.added_ns:.1f} ns")
        if not common or not any(load(cuprof[r].stem + ".report.json") for r in common):
            return None
        if not diffs:
            self.goals.append(("reported time within 10 % / 15 ns of bare", case, "**missed** (not captured)"))
            return [f"`{case}`", fmt_ns(median([float(bare[r].doc["median_ns"]) for r in common])), "-", "-", "-",
                    "-", "**missed** (APIs not captured)", "-", "-", "-"]
        b = median([float(bare[r].doc["median_ns"]) for r in common])
        if b >= ACCURACY_REL_FROM_NS:
            allowed = ACCURACY_REL * b
            allowed_txt = f"+-{fmt_ns(allowed)} (10 %)"
        else:
            allowed = ACCURACY_ABS_NS * k
            allowed_txt = f"+-{fmt_ns(allowed)} (15 ns/call)"
        noise = 0.0
        if len(diffs) == 1:
            r = common[0]
            noise = bare[r].spread * k / 2
        iv = interval(diffs, noise)
        verdict = decide_within(iv, allowed)
        self.goals.append(("reported time within 10 % / 15 ns of bare", case, verdict))
        dm = median(diffs)
        return [f"`{case}`", fmt_ns(b), fmt_ns(median(reported)),
                f"{'+' if dm >= 0 else ''}{fmt_ns(dm)} ({dm / b * 100:+.1f} %)", fmt_iv(iv, fmt_ns), allowed_txt,
                verdict, fmt_ns(median(means)) if means else "-", detail, sub]

    def capture_goals(self, part):
        """Drops and trace bytes per recorded event (record) of cuprof's runs
        in part; bytes per driver call beside them. The goal is per record:
        it was set when every record was a call, and Python frames (records
        too, about 0.6-0.7 per call on the workloads) are counted in the
        bytes, so per call they would raise it without any call's record
        growing. A report without an event count falls back to its calls."""
        drops, runs = 0, 0
        bpe, bpc = [], []
        d = self.path(part)
        if not os.path.isdir(d):
            return ""
        for root, _, files in os.walk(d):
            for name in sorted(files):
                if not name.endswith(".report.json"):
                    continue
                stem = os.path.join(root, name[:-12])
                rp = Report(load(stem + ".report.json"))
                run = load(stem + ".run.json") or {}
                runs += 1
                drops += int(rp.dropped or 0)
                if part == "workloads" and run.get("trace_bytes"):
                    records = rp.events or rp.calls
                    if records:
                        bpe.append(float(run["trace_bytes"]) / float(records))
                    if rp.calls:
                        bpc.append(float(run["trace_bytes"]) / float(rp.calls))
        if runs == 0:
            return ""
        v = "met" if drops == 0 else "**missed**"
        self.goals.append((f"no drops ({part})", f"{runs} cuprof runs", v))
        line = f"cuprof dropped {drops} events over its {runs} {part} runs ({v})."
        if bpe:
            w = decide((min(bpe), max(bpe)), BYTES_PER_CALL_GOAL)
            self.goals.append((f"<= {BYTES_PER_CALL_GOAL:g} trace bytes per record ({part})", f"{len(bpe)} runs", w))
            line += (f" Trace bytes per recorded event: {min(bpe):.2f}-{max(bpe):.2f} "
                     f"(goal <= {BYTES_PER_CALL_GOAL:g}: {w})")
            if bpc:
                line += f"; per driver call, Python frames' bytes included: {min(bpc):.2f}-{max(bpc):.2f}"
            line += "."
        return line + "\n"

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
        rows = capture_rows(lines)
        if not rows:
            return ""
        end_only = any(len(r) == 6 for r in rows)
        head = ["call", "no shim", "shim", "added"]
        what = ("The capture helper's harness: the same binary with and without the shim preloaded (a thread "
                "drains the ring instead of `cuprof record`), interleaved runs, best of each; ns per iteration.")
        if end_only:
            head += ["end-only", "added (end-only)"]
            what += " end-only: the shim with `CUPROF_TIMING=end` (one clock read per call)."
            rows = [r + ["-"] * (6 - len(r)) for r in rows]
        return "### 1d. The shim alone (bench/capture/run.sh)\n\n" + what + "\n\n" + table(head, rows) + "\n"

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
            runs = {t: self.workload_rounds(wl, t) for t in tools}
            calm_note = calm_segments(runs)
            base = runs["none"]
            for t in tools:
                rs = runs[t]
                if not rs:
                    continue
                segs = [x["seg"] for x in rs.values()]
                works = [x["work"] for x in rs.values()]
                procs = [x["proc"] for x in rs.values() if x["proc"] is not None]
                seg_cell = f"{median(segs):.3f}" + (f" ({min(segs):.3f}-{max(segs):.3f}, {len(segs)})"
                                                    if len(segs) > 1 else "")
                common = sorted(set(rs) & set(base))
                ratios = [rs[r]["seg"] / base[r]["seg"] for r in common if base[r]["seg"]]
                noise = 0.0
                if len(common) == 1:
                    r = common[0]
                    noise = (rs[r]["half"] + base[r]["half"]) / base[r]["seg"]
                iv = interval(ratios, noise) if ratios else None
                ratio_cell = "-"
                if ratios and t != "none":
                    ratio_cell = f"{median(ratios):.3f}x {fmt_iv(iv, lambda v: f'{v:.3f}')}"
                elif t == "none":
                    ratio_cell = "1.00x"
                goal = "-"
                if t == "cuprof" and iv is not None:
                    v = decide(iv, 1 + WALL_GOAL)
                    goal = f"{(median(ratios) - 1) * 100:+.1f} % {v}"
                    self.goals.append(("<= 5 % on workloads (median segment, paired by round)", wl, goal))
                last = rs[max(rs)]
                events, size = self.workload_events(t, last["stem"], last["doc"])
                rows.append([wl, TOOL_NAMES[t], seg_cell, ratio_cell, f"{median(works):.3f}",
                             fmt_num(median(procs)) if procs else "-", events, size, goal,
                             calm_note.get(t, "-")])
        if not rows:
            return "## 3. Realistic workloads\n\n(no workload results)\n"
        header = ["workload", "tool", "median segment s (range, rounds)", "ratio to bare, paired: median [interval]",
                  "work s", "process wall s", "events captured (last round)", "trace bytes", "goal <= 5 % (cuprof)",
                  "calm segments kept / all (shown, not judged)"]
        return ("## 3. Realistic workloads\n\n"
                "The timed steps (warm-up and calibration excluded; the same step count for every tool, from a "
                "calibrating bare run that also warms the machine up) run in 5 equal segments; bare and each tool "
                "ran once per round in a rotating order. Median segment s: the median over rounds of each run's "
                "median segment; ratio: each round's median segment over the same round's bare one (interval as "
                "in 1a; one round: +- half the segments' spread); work s: all segments; process wall s: the "
                "whole process including start-up, imports and the tool's exit work (cuprof: writing the "
                "trace). Events: cuprof's recorded calls, CUPTI callbacks or activity records counted by the "
                "tool, torch.profiler's Kineto events. Calm segments: where the workload read the speed probe "
                "(bench/lib/speedprobe.py, a pure-Python loop) before each segment and after the last, a "
                f"segment counts when the readings on both its sides are within {(CALM_TOL - 1) * 100:.0f} % of "
                "the fastest reading of any run of the workload; shown (kept / all, their median), not "
                "judged.\n\n" + table(header, rows) + "\n\n"
                + self.capture_goals("workloads"))

    def workload_rounds(self, wl, tool):
        out = {}
        d = self.path("workloads")
        for r, stem in sorted(round_files(d, f"{wl}-{tool}").items()):
            doc = load(stem + ".json")
            run = load(stem + ".run.json")
            note = fail_note(run, stem)
            if doc is None:
                if note:
                    self.notes.append(f"workload {wl} under {TOOL_NAMES[tool]} round {r}: {note}")
                continue
            segs = [float(x) for x in doc.get("segment_s") or []]
            probes = doc.get("probe_ns")
            out[r] = {"seg": float(doc["median_segment_s"]), "work": float(doc["work_s"]),
                      "proc": run.get("wall_s") if run else None, "stem": stem, "doc": doc,
                      "half": (max(segs) - min(segs)) / 2 if segs else 0.0, "segs": segs,
                      "probes": [float(x) for x in probes] if isinstance(probes, list)
                      and segs and len(probes) == len(segs) + 1 else None}
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                if name.startswith(f"{wl}-{tool}.") and name.endswith(".run.json"):
                    stem = os.path.join(d, name[:-9])
                    if not os.path.exists(stem + ".json"):
                        note = fail_note(load(stem + ".run.json"), stem)
                        if note:
                            self.notes.append(f"workload {wl} under {TOOL_NAMES[tool]}: {note}")
        return out

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
            undecided = [g for g in self.goals if "undecided" in g[2]]
            parts.append("## Goals\n")
            parts.append(f"{met} of {len(self.goals)} checks met; missed: "
                         + ("none" if not missed else "; ".join(f"{g[0]} ({g[1]}: {g[2]})" for g in missed))
                         + "; undecided (the spread straddles the goal): "
                         + ("none" if not undecided else "; ".join(f"{g[0]} ({g[1]})" for g in undecided))
                         + ".\n")
        if self.notes:
            seen = []
            for n in self.notes:
                if n not in seen:
                    seen.append(n)
            parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in seen) + "\n")
        return "\n".join(parts)


class LoopRun:
    """One loops.c process: its JSON and where its files are. per_call is
    the median of its repetitions (what the goals judge); kept, the calm
    ones, once calm() has been told the case's probe floors."""

    def __init__(self, doc, stem):
        self.doc = doc
        self.stem = stem
        self.calls = int(doc.get("calls_per_iter") or 1)
        self.per_call = float(doc["median_ns"]) / self.calls
        self.spread = (float(doc.get("max_ns", doc["median_ns"])) - float(doc.get("min_ns", doc["median_ns"]))) / self.calls
        self.reps = [float(x) / self.calls for x in doc.get("ns_per_iter") or []]
        self.probes = {}
        probes = doc.get("probe_ns")
        if isinstance(probes, dict) and self.reps:
            for kind in PROBE_KINDS:
                v = probes.get(kind)
                if isinstance(v, list) and len(v) == len(self.reps) + 1:
                    self.probes[kind] = [float(x) for x in v]
        self.kept = None  # indices of calm reps, once calm() ran

    def calm(self, floors):
        """Sets kept to the reps whose probe readings of every kind on both
        sides are calm against the case's floors (the fastest reading of
        each kind in any run of the case). Without probes nothing changes."""
        if not self.probes or set(self.probes) != set(floors):
            return
        self.kept = calm_spans([all(is_calm(p[i], floors[k]) for k, p in self.probes.items())
                                for i in range(len(self.reps) + 1)])

    def contended(self):
        """The reps calm() let go."""
        if self.kept is None:
            return []
        kept = set(self.kept)
        return [v for i, v in enumerate(self.reps) if i not in kept]


def calm_segments(runs):
    """{tool: "kept/all, median"}: each tool's calm workload segments
    (speed-probe readings on both sides calm against the fastest of any run
    of the workload) and their median; shown, not judged. Runs without
    probe readings count nowhere."""
    readings = [p for rs in runs.values() for x in rs.values() for p in (x.get("probes") or [])]
    if not readings:
        return {}
    floor = min(readings)
    notes = {}
    for t, rs in runs.items():
        kept_n = all_n = 0
        calm = []
        for x in rs.values():
            if not x.get("probes"):
                continue
            kept = [x["segs"][i] for i in calm_spans([is_calm(p, floor) for p in x["probes"]])]
            kept_n += len(kept)
            all_n += len(x["segs"])
            calm.extend(kept)
        if all_n:
            notes[t] = f"{kept_n}/{all_n}" + (f", median {median(calm):.3f} s" if calm else "")
    return notes


def probe_floors(runs):
    """{kind: fastest reading} over every run of a case that has probes, or {}."""
    floors = {}
    for rs in runs.values():
        for run in rs.values():
            for k, v in run.probes.items():
                floors[k] = min(min(v), floors.get(k, float("inf")))
    return floors if set(floors) == set(PROBE_KINDS) else {}


class Paired:
    """Per-round paired differences (ns per call, by round) and, for a
    single round, the noise of its repetitions."""

    def __init__(self, by_round, noise):
        self.by_round = by_round
        self.vals = [by_round[r] for r in sorted(by_round)]
        self.noise = noise

    def iv(self):
        return interval(self.vals, self.noise)

    def cell(self):
        if not self.vals:
            return "-"
        return f"{fmt_ns(median(self.vals))} {fmt_iv(self.iv(), fmt_ns)}"


def paired_lists(a, b):
    """Pairs of a's and b's values of the rounds both have."""
    return [(a.by_round[r], b.by_round[r]) for r in sorted(set(a.by_round) & set(b.by_round))]


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
    # An archived run (bench/lib/runarchive.py) is read from a temporary copy.
    with runarchive.opened(argv[0]) as d:
        sys.stdout.write(Results(d).render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
