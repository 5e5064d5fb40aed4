"""Tests of paired.py: python3 bench/lib/test_paired.py"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402


class PairedTest(unittest.TestCase):
    def test_paired_cancels_the_rounds_shared_drift(self):
        drift = {r: 100.0 * (r % 3) for r in range(1, 31)}
        a = {r: 500 + drift[r] + 20 for r in drift}
        b = {r: 500 + drift[r] for r in drift}
        m, (lo, hi), n = paired.summary(a, b)
        self.assertEqual(n, 30)
        self.assertEqual(m, 20)
        self.assertEqual((lo, hi), (20, 20))

    def test_interval_covers_the_median_and_is_reproducible(self):
        d = [float(x) for x in (3, -1, 4, 1, -5, 9, 2, 6, -5, 3, 5, 8, -9, 7, 9)]
        lo, hi = paired.bootstrap_ci(d)
        self.assertLessEqual(lo, paired.median(d))
        self.assertGreaterEqual(hi, paired.median(d))
        self.assertLess(lo, hi)
        self.assertEqual((lo, hi), paired.bootstrap_ci(d))

    def test_only_common_rounds_pair(self):
        self.assertEqual(paired.paired({1: 5, 2: 7, 4: 1}, {2: 1, 4: 2, 5: 9}), [6, -1])

    def test_empty(self):
        m, (lo, hi), n = paired.summary({}, {})
        self.assertEqual(n, 0)
        self.assertNotEqual(m, m)  # nan


if __name__ == "__main__":
    unittest.main()
