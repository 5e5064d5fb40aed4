#!/usr/bin/env python3
"""Prints, as JSON, the machine and versions a benchmark run used.

Everything is best effort: a missing program or library gives null, never an
error. Run on the GPU machine by run.sh; CUPROF and NSYS name the binaries.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import subprocess
import sys


def run(cmd, timeout=30):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    out = (p.stdout or p.stderr).strip()
    return out or None


def first_line(s):
    return s.splitlines()[0].strip() if s else None


def last_line(s):
    return s.splitlines()[-1].strip() if s else None


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def gpus():
    out = run(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total,uuid",
               "--format=csv,noheader"])
    if not out:
        return []
    rows = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 5:
            rows.append({"index": parts[0], "name": parts[1], "driver": parts[2], "memory": parts[3],
                         "uuid": parts[4]})
    return rows


def module_version(name):
    try:
        mod = __import__(name, fromlist=["__version__"])
    except Exception:  # noqa: BLE001 - absent or broken: report null
        return None
    return getattr(mod, "__version__", "?")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mode", default="")
    ap.add_argument("--budget", default="")
    ap.add_argument("--tools", default="")
    ap.add_argument("--available", default="")
    ap.add_argument("--rounds", default="")
    ap.add_argument("--workload-rounds", default="")
    ap.add_argument("--loop-reps", default="")
    ap.add_argument("--pin", default="", help="the CPU pinning the run used (bench/lib/pin.sh)")
    args = ap.parse_args(argv)
    cuprof = os.environ.get("CUPROF") or "bin/cuprof"
    nsys = os.environ.get("NSYS") or shutil.which("nsys")
    doc = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": socket.gethostname(),
        "os": first_line(run(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"])),
        "kernel": platform.release(),
        "glibc": " ".join(platform.libc_ver()),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "gpus": gpus(),
        "python": platform.python_version(),
        "gcc": first_line(run(["gcc", "--version"])),
        "nvcc": last_line(run(["nvcc", "--version"])),
        "cuprof": first_line(run([cuprof, "--version"])),
        "nsys": first_line(run([nsys, "--version"])) if nsys else None,
        "modules": {m: module_version(m) for m in ("torch", "cupy", "cuda.core", "cuda.bindings")},
        "suite": {"mode": args.mode, "budget_s": args.budget, "tools": args.tools, "available": args.available,
                  "rounds": args.rounds, "workload_rounds": args.workload_rounds, "loop_reps": args.loop_reps,
                  "pin": args.pin, "argv": sys.argv[1:]},
    }
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
