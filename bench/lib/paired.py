"""Paired comparisons of benchmark rounds: the median of per-round
differences and a bootstrap confidence interval for it.

A round runs every variant once, back to back, so a round's difference
between two variants cancels what the round shares (the host's speed at
that moment); the median over rounds resists the rounds a preemption hit.
The interval resamples the rounds with replacement (a percentile bootstrap,
seeded, so the same rounds always give the same interval).
"""

import random
import statistics


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def bootstrap_ci(diffs, stat=median, level=0.95, n=4000, seed=1):
    """The (low, high) percentile interval of stat over n resamples of diffs."""
    if not diffs:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    k = len(diffs)
    vals = sorted(stat([diffs[rng.randrange(k)] for _ in range(k)]) for _ in range(n))
    lo = vals[int((1 - level) / 2 * (n - 1))]
    hi = vals[int((1 + level) / 2 * (n - 1))]
    return (lo, hi)


def paired(a, b):
    """Per-round a - b over the rounds both have (dicts round -> value)."""
    return [a[r] - b[r] for r in sorted(a) if r in b]


def summary(a, b, **kw):
    """(median of a - b, (ci low, ci high), rounds) for dicts round -> value."""
    d = paired(a, b)
    return median(d), bootstrap_ci(d, **kw), len(d)
