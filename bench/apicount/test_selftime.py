"""Tests of selftime.py on made-up reports: python3 -m unittest test_selftime"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import selftime  # noqa: E402


def report(self_per_call, driver_calls, api_median=None, passed=0, calls=3000, create=1000):
    r = {"frames": [{"frame": "Device.create_stream", "calls": calls, "self_ns": self_per_call * calls,
                     "driver_calls": driver_calls * calls}],
         "apis": [{"api": "cuStreamCreateWithPriority", "count": calls, "median_ns": create}], "passed_through": []}
    if api_median is not None:
        r["apis"].append({"api": "cuCtxGetStreamPriorityRange", "count": calls, "median_ns": api_median})
    if passed:
        r["passed_through"].append({"name": "cuCtxGetStreamPriorityRange", "calls": passed})
    return r


class SelftimeTest(unittest.TestCase):
    def test_paired_drop_and_null(self):
        with tempfile.TemporaryDirectory() as d:
            for k in range(1, 11):
                drift = 100 * (k % 4)
                for v, rep in (("pass", report(900 + drift + 25, 1, passed=3000)),
                               ("rec", report(900 + drift, 2, api_median=24)),
                               ("rec2", report(900 + drift, 2, api_median=26))):
                    with open(os.path.join(d, f"{v}.r{k}.json"), "w") as f:
                        json.dump(rep, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(selftime.main([d]), 0)
            text = out.getvalue()
            self.assertIn("| pass - rec (the drop when the call is recorded) | 10 | +25.0 | [+25.0, +25.0] |", text)
            self.assertIn("| rec2 - rec (two equal runs) | 10 | +0.0 | [+0.0, +0.0] |", text)
            self.assertIn("| cuCtxGetStreamPriorityRange recorded, ns per call (rec) | 10 | 24.0 | |", text)
            self.assertIn("passed through 3000-3000 calls a run, recorded 0", text)

    def test_split_by_speed(self):
        with tempfile.TemporaryDirectory() as d:
            for k in range(1, 13):
                slow = k % 3 == 0
                base, create = (1300, 1700) if slow else (700, 1100)
                for v, rep in (("pass", report(base + 20, 1, passed=3000, create=create)),
                               ("rec", report(base, 2, api_median=40 if slow else 10, create=create)),
                               ("rec2", report(base, 2, api_median=40 if slow else 10, create=create))):
                    with open(os.path.join(d, f"{v}.r{k}.json"), "w") as f:
                        json.dump(rep, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(selftime.main([d, "--split-ns", "1250"]), 0)
            text = out.getvalue()
            self.assertIn("| fast | 8 / 8 / 8 | 720.0 | 700.0 | 700.0 | +20.0 [+20.0, +20.0] | +0.0 [+0.0, +0.0] | 10.0 |", text)
            self.assertIn("| slow | 4 / 4 / 4 | 1320.0 | 1300.0 | 1300.0 | +20.0 [+20.0, +20.0] | +0.0 [+0.0, +0.0] | 40.0 |", text)

    def test_no_reports(self):
        with tempfile.TemporaryDirectory() as d:
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(selftime.main([d]), 1)


if __name__ == "__main__":
    unittest.main()
