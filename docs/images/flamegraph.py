#!/usr/bin/env python3
"""Renders a cuprof trace as a flame graph picture (SVG, or PNG through
rsvg-convert), for the README.

  docs/images/flamegraph.py TRACE -o OUT.png|OUT.svg [--focus RE] [--title T]
                            [--view api] [--cuprof bin/cuprof] [--width 1200]

It runs `cuprof flame TRACE --view VIEW [--focus RE]` into a temporary pprof
profile, reads it (gzipped protobuf, decoded here: no Python package
needed), merges the samples into a tree by stack, and draws it root at the
bottom, one bar per frame as wide as its time: driver calls in red, Python
functions in green, C callables called from Python (builtins, ctypes
functions, Cython) in yellow, the rest (ranges, callers) in orange.
PNG needs rsvg-convert (Debian: librsvg2-bin).
"""

import argparse
import colorsys
import gzip
import html
import os
import shutil
import subprocess
import sys
import tempfile
import zlib


# --- a minimal protobuf reader for pprof's profile.proto ------------------

def varint(b, i):
    x = s = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        if c < 0x80:
            return x, i
        s += 7
        if s > 63:
            raise ValueError("varint too long")


def fields(b):
    """Yields (field number, wire type, value) of one message."""
    i, n = 0, len(b)
    while i < n:
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wt == 2:
            ln, i = varint(b, i)
            v, i = b[i:i + ln], i + ln
            if i > n:
                raise ValueError("field past the end of its message")
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def ints(wt, v):
    """A repeated integer field: packed (bytes) or one value."""
    if wt != 2:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def read_profile(data):
    """Returns (sample types [(type, unit)], samples [(stack root first, values)]);
    a stack is a list of (function name, file) pairs."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, types, samples, locations, functions = [], [], [], {}, {}
    raw_samples = []
    for num, wt, v in fields(data):
        if num == 1:
            t = {n: x for n, _, x in fields(v)}
            types.append((t.get(1, 0), t.get(2, 0)))
        elif num == 2:
            locs, vals = [], []
            for n, w, x in fields(v):
                if n == 1:
                    locs += ints(w, x)
                elif n == 2:
                    vals += [signed(y) for y in ints(w, x)]
            raw_samples.append((locs, vals))
        elif num == 4:
            lid, lines, addr = 0, [], 0
            for n, w, x in fields(v):
                if n == 1:
                    lid = x
                elif n == 3:
                    addr = x
                elif n == 4:
                    lines.append({m: y for m, _, y in fields(x)}.get(1, 0))
            locations[lid] = (lines, addr)
        elif num == 5:
            f = {n: x for n, _, x in fields(v)}
            functions[f.get(1, 0)] = (f.get(2, 0), f.get(4, 0))
        elif num == 6:
            strings.append(v.decode("utf-8", "replace"))
    s = lambda k: strings[k] if 0 <= k < len(strings) else ""
    for locs, vals in raw_samples:
        stack = []
        for lid in reversed(locs):  # pprof lists the leaf first
            lines, addr = locations.get(lid, ([], 0))
            if not lines:
                stack.append((f"0x{addr:x}", ""))
            for fid in reversed(lines):  # inlined frames: caller last
                name, file = functions.get(fid, (0, 0))
                stack.append((s(name), s(file)))
        samples.append((stack, vals))
    return [(s(a), s(b)) for a, b in types], samples


# --- layout and drawing ----------------------------------------------------

class Node:
    __slots__ = ("name", "file", "value", "children")

    def __init__(self, name, file=""):
        self.name, self.file, self.value, self.children = name, file, 0, {}


def tree(samples, vi):
    root = Node("all")
    for stack, vals in samples:
        v = vals[vi] if vi < len(vals) else 0
        if v <= 0:
            continue
        root.value += v
        n = root
        for name, file in stack:
            n = n.children.setdefault((name, file), Node(name, file))
            n.value += v
    return root


def colour(name, file):
    """Red for driver calls, green for Python functions (a .py file), yellow
    for C callables called from Python (a module, no path), orange else."""
    vary = zlib.crc32(name.encode())
    if not file and name.startswith("cu") and name[2:3].isupper():
        return "hsl(2,75%,58%)"
    if file.endswith(".py") or file.startswith("<"):
        return f"hsl({95 + vary % 40},50%,{58 + vary % 12}%)"
    if file and "/" not in file:
        return f"hsl({45 + vary % 10},90%,{58 + vary % 10}%)"
    return f"hsl({15 + vary % 20},85%,{60 + vary % 12}%)"


def depth(n):
    return 1 + max((depth(c) for c in n.children.values()), default=0)


def svg(root, width, title, unit):
    fh, top = 17, 24
    rows = depth(root)
    height = top + rows * (fh + 1) + 4
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" font-size="11">',
           '<rect width="100%" height="100%" fill="#fff"/>',
           f'<text x="6" y="16" font-size="13">{html.escape(title)}</text>']
    total = root.value or 1

    def draw(n, x, level):
        w = n.value / total * width
        if w < 0.3:
            return
        y = height - 4 - (level + 1) * (fh + 1)
        pct = 100 * n.value / total
        label = n.name
        fit = int((w - 6) / 6.7)
        if len(label) > fit:
            label = label[: max(fit - 2, 0)] + ".." if fit > 3 else ""
        where = f" {n.file}" if n.file else ""
        out.append(f'<g><title>{html.escape(n.name + where)} ({pct:.1f}%, {fmt(n.value, unit)})</title>'
                   f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{fh}" fill="{colour(n.name, n.file)}" stroke="#fff" stroke-width="0.5"/>'
                   + (f'<text x="{x + 3:.1f}" y="{y + 12}">{html.escape(label)}</text>' if label else "") + "</g>")
        cx = x
        for c in sorted(n.children.values(), key=lambda c: (c.name, c.file)):
            draw(c, cx, level + 1)
            cx += c.value / total * width

    draw(root, 0.0, 0)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def fmt(v, unit):
    if unit == "nanoseconds":
        for div, u in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
            if v >= div:
                return f"{v / div:.3g} {u}"
        return f"{v} ns"
    return f"{v} {unit}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="a .cuprof trace, or a pprof profile (.pb.gz) made by cuprof flame")
    ap.add_argument("-o", "--output", required=True, help="OUT.svg or OUT.png")
    ap.add_argument("--focus", default="", help="keep only stacks with a frame matching this regular expression")
    ap.add_argument("--view", default="api")
    ap.add_argument("--title", default="")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--cuprof", default=os.environ.get("CUPROF") or shutil.which("cuprof") or "bin/cuprof")
    a = ap.parse_args(argv)
    png = a.output.endswith(".png")
    if png and not shutil.which("rsvg-convert"):
        ap.error("a PNG needs rsvg-convert (apt-get install librsvg2-bin); or write OUT.svg")
    with tempfile.TemporaryDirectory() as tmp:
        prof = a.trace
        if not a.trace.endswith((".pb.gz", ".pb", ".pprof")):
            prof = os.path.join(tmp, "p.pb.gz")
            cmd = [a.cuprof, "flame", a.trace, "-o", prof, "--view", a.view] + (["--focus", a.focus] if a.focus else [])
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"flamegraph.py: {' '.join(cmd)} failed:\n{r.stderr}", file=sys.stderr)
                return 1
        with open(prof, "rb") as f:
            types, samples = read_profile(f.read())
        vi = next((i for i, (t, _) in enumerate(types) if t == "time"), len(types) - 1)
        if vi < 0 or not samples:
            print(f"flamegraph.py: {prof}: no samples", file=sys.stderr)
            return 1
        root = tree(samples, vi)
        title = a.title or f"{os.path.basename(a.trace)} ({a.view} view{', focus ' + a.focus if a.focus else ''})"
        text = svg(root, a.width, title, types[vi][1])
        if not png:
            with open(a.output, "w", encoding="utf-8") as f:
                f.write(text)
            return 0
        src = os.path.join(tmp, "f.svg")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        r = subprocess.run(["rsvg-convert", "-f", "png", "-o", a.output, src], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"flamegraph.py: rsvg-convert failed: {r.stderr}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
