"""The tables of a bench/memory run: results.tsv (as run.sh writes it) to a
markdown table of peak RSS and events per CPU second per command and trace
length, and the goals of each command met or not.

  python3 bench/memory/tables.py RESULTS.tsv [RESULTS.tsv...]
  python3 bench/memory/tables.py --ab AB.tsv EVENTS

Several files are read as one run (a run split in parts). --ab reads what
bench/memory/ab.sh wrote for a trace of EVENTS events: per command, the
median CPU time and events per CPU second of each binary, their ratio, and
the peak RSS of each. Standard library only.
"""

import csv
import sys

# Goals: peak RSS at most RSS_GOAL_MB for every command at every length;
# at least RATE_GOAL events per CPU second for the commands named.
RSS_GOAL_MB = 200
RATE_GOAL = 5_000_000
RATE_COMMANDS = ("report", "report-json", "report-csv", "flame", "flame-memory",
                 "flame-lifetime", "timeline", "timeline-json", "export", "export-gzip",
                 "export-none")


def read(paths):
    """Rows of the files, each a dict of the columns, numbers parsed."""
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                shape = r.get("shape") or "loop"
                rows.append({
                    "events": int(r["events"]),
                    # a shape other than the loop mix (run.sh's SHAPES) names its rows
                    "command": r["command"] if shape == "loop" else f"{shape}: {r['command']}",
                    "base": r["command"],
                    "rss_mb": int(r["peak_rss_kib"]) * 1024 / 1e6,
                    "wall_s": float(r["wall_s"]),
                    "cpu_s": float(r["cpu_s"]),
                    "exit": int(r["exit"]),
                    "load1": r.get("load1") or "",
                })
    return rows


def rate(r):
    """Events per CPU second (diff reads its trace twice: per trace event)."""
    return r["events"] / r["cpu_s"] if r["cpu_s"] > 0 else float("inf")


def length(n):
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else str(n)


def table(rows):
    lengths = sorted({r["events"] for r in rows})
    commands = []
    for r in rows:
        if r["command"] not in commands:
            commands.append(r["command"])
    by = {(r["command"], r["events"]): r for r in rows}
    head = "| command | " + " | ".join(
        f"{length(n)} events: peak RSS, events per CPU second (CPU s, wall s, load)" for n in lengths) + " |"
    out = [head, "| --- |" + " ---: |" * len(lengths)]
    for c in commands:
        cells = []
        for n in lengths:
            r = by.get((c, n))
            if r is None:
                cells.append("not run")
            elif r["exit"] != 0:
                cells.append(f"exit {r['exit']} ({r['cpu_s']:g}, {r['wall_s']:g})")
            else:
                cells.append(f"{r['rss_mb']:.0f} MB, {rate(r) / 1e6:.2f}M/s "
                             f"({r['cpu_s']:g}, {r['wall_s']:g}, {r['load1']})")
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def goals(rows):
    """One line per command: each goal met or not, with the worst case."""
    out = []
    commands = []
    for r in rows:
        if r["command"] not in commands:
            commands.append(r["command"])
    for c in commands:
        rs = [r for r in rows if r["command"] == c]
        failed = [r for r in rs if r["exit"] != 0]
        worst_rss = max(rs, key=lambda r: r["rss_mb"])
        parts = [f"peak RSS {worst_rss['rss_mb']:.0f} MB at {length(worst_rss['events'])}: "
                 + ("met" if worst_rss["rss_mb"] <= RSS_GOAL_MB and not failed else "NOT met")]
        if rs[0]["base"] in RATE_COMMANDS:
            slow = min(rs, key=rate)
            parts.append(f"{rate(slow) / 1e6:.2f}M events per CPU second at {length(slow['events'])}: "
                         + ("met" if rate(slow) >= RATE_GOAL and not failed else "NOT met"))
        if failed:
            parts.append("failed at " + ", ".join(length(r["events"]) for r in failed))
        out.append(f"- {c}: " + "; ".join(parts))
    return "\n".join(out)


def ab(path, events):
    """The table of an ab.sh run: medians per command and binary."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    commands = []
    for r in rows:
        if r["command"] not in commands:
            commands.append(r["command"])

    def median(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    out = ["| command | before: CPU s, events per CPU second, peak RSS | after: CPU s, events per CPU second, peak RSS "
           "| after / before CPU | rounds, load |",
           "| --- | ---: | ---: | ---: | ---: |"]
    for c in commands:
        cells = []
        cpus = {}
        for which in ("before", "after"):
            rs = [r for r in rows if r["command"] == c and r["binary"] == which and r["exit"] == "0"]
            if not rs:
                cells.append("none")
                continue
            cpu = median([float(r["cpu_s"]) for r in rs])
            rss = median([int(r["peak_rss_kib"]) for r in rs]) * 1024 / 1e6
            cpus[which] = cpu
            cells.append(f"{cpu:.2f} s, {events / cpu / 1e6:.2f}M/s, {rss:.0f} MB")
        ratio = f"{cpus['after'] / cpus['before']:.2f}" if len(cpus) == 2 else "-"
        loads = [float(r["load1"]) for r in rows if r["command"] == c]
        n = len([r for r in rows if r["command"] == c]) // 2
        out.append(f"| {c} | {cells[0]} | {cells[1]} | {ratio} | {n}, {min(loads):g}-{max(loads):g} |")
    return "\n".join(out)


def main(argv):
    if len(argv) == 4 and argv[1] == "--ab":
        print(ab(argv[2], int(argv[3])))
        return 0
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows = read(argv[1:])
    print(table(rows))
    print()
    print(goals(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
