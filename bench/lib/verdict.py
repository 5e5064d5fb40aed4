"""The rule every benchmark goal is judged by (bench/suite/tables.py and
bench/python/summarize.py): an interval of a figure over rounds, and a
verdict that says "met" or "missed" only when the whole interval is on one
side of the limit, else "undecided". Standard library only."""


def sign_rank(n):
    """The rank k (1-based) such that the k-th smallest and k-th largest of n
    values bound their median with at least 95 % confidence (the sign test's
    distribution-free interval: P(Binomial(n, 1/2) < k) <= 2.5 %)."""
    k, tail, term = 0, 0.0, 0.5 ** n
    while True:
        # term is P(B = k); stop before the tail below k+1 passes 2.5 %
        if tail + term > 0.025:
            return max(k, 1)
        tail += term
        k += 1
        term = term * (n - k + 1) / k


def interval(vals, noise=0.0):
    """The range a goal is judged on: from 9 rounds up the sign test's 95 %
    interval of the median (the sign_rank-th smallest to the sign_rank-th
    largest value); from 5 rounds the second smallest to the second largest
    (one outlier each side is let go; the same as the sign test's at 9);
    below that the smallest to the largest; a single value is widened by
    noise (half the spread of its repetitions)."""
    v = sorted(vals)
    if not v:
        return None
    if len(v) == 1:
        return v[0] - noise, v[0] + noise
    if len(v) >= 9:
        k = sign_rank(len(v))
        return v[k - 1], v[-k]
    if len(v) >= 5:
        v = v[1:-1]
    return v[0], v[-1]


def verdict(iv, limit):
    """"met" when the whole interval iv is at or under limit, "missed" when
    all of it is above, else "undecided"."""
    lo, hi = iv
    if hi <= limit:
        return "met"
    if lo > limit:
        return "missed"
    return "undecided"


def verdict_within(iv, allowed):
    """Like verdict, for |value| <= allowed."""
    lo, hi = iv
    if lo >= -allowed and hi <= allowed:
        return "met"
    if lo > allowed or hi < -allowed:
        return "missed"
    return "undecided"
