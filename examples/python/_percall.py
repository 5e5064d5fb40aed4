"""Per-call timing shared by the seed scripts (same table as the Go examples)."""

import time


def measure(name, fn, calls, warmup):
    """Runs fn warmup times, then times calls runs one by one (ns)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    times.sort()
    return {
        "name": name,
        "calls": calls,
        "mean": sum(times) / calls,
        "min": times[0],
        "p50": times[calls // 2],
        "p99": times[(calls * 99) // 100],
    }


def header():
    print(f"{'variant':<52} {'calls':>7} {'mean':>10} {'min':>10} {'p50':>10} {'p99':>10}")


def row(s):
    us = lambda ns: f"{ns / 1000:.2f}us"
    print(f"{s['name']:<52} {s['calls']:>7} {us(s['mean']):>10} {us(s['min']):>10} {us(s['p50']):>10} {us(s['p99']):>10}")
