"""Tests of paired_stats.py on made-up blocks: python3 -m unittest test_paired_stats"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired_stats  # noqa: E402


def block(mode, cycle, self_ns, raw_self, api_ns=0, raw_api=0, calls=0, passed=0, dc=1.0):
    return {"name": "%s %d" % (mode, cycle), "mode": mode, "cycle": cycle, "frames": 200,
            "self_ns_median": self_ns, "raw_self_ns_median": raw_self, "driver_calls_per_frame": dc,
            "api_calls": calls, "api_ns_median": api_ns, "raw_api_ns_median": raw_api,
            "api_passed_through": passed, "inside_ns": 18, "added_ns": 40}


class PairedStatsTest(unittest.TestCase):
    def test_drop_null_and_residual(self):
        # each process at its own speed; within a cycle pass is 6 ns above rec
        # (calibrated), 18 below raw, the call 22 ns (39 raw): drop - call -16,
        # raw -57; rec2 equals rec
        with tempfile.TemporaryDirectory() as d:
            for p in (1, 2):
                base = 800 + 200 * p
                with open(os.path.join(d, "p%d.jsonl" % p), "w") as f:
                    f.write(json.dumps(block("warm", -1, 0, 0)) + "\n")
                    for c in range(20):
                        drift = 3 * (c % 5)
                        f.write(json.dumps(block("pass", c, base + drift + 6, base + drift + 7, passed=200)) + "\n")
                        f.write(json.dumps(block("rec", c, base + drift, base + drift + 25, 22, 39, 200, dc=2)) + "\n")
                        f.write(json.dumps(block("rec2", c, base + drift, base + drift + 25, 22, 39, 200, dc=2)) + "\n")
                    # a cycle cut short (no rec2) is left out
                    f.write(json.dumps(block("pass", 20, 0, 0)) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(paired_stats.main([d]), 0)
        text = out.getvalue()
        self.assertIn("pass 1.00, rec 2.00, rec2 2.00", text)
        self.assertIn("recorded: pass 0, rec 8000, rec2 8000; counted as passed through: pass 8000, rec 0", text)
        self.assertIn("| all | 40 | 1112.0 | 1106.0 | +6.0 [+6.0, +6.0] | +0.0 [+0.0, +0.0] | 22.0 | -16.0 [-16.0, -16.0] |",
                      text)
        self.assertIn("| all | 40 | 1113.0 | 1131.0 | -18.0 [-18.0, -18.0] | +0.0 [+0.0, +0.0] | 39.0 | -57.0 [-57.0, -57.0] |",
                      text)

    def test_open_blocks(self):
        # a fourth block through the plain open gate, 7 ns under rec
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "p1.jsonl"), "w") as f:
                for c in range(10):
                    f.write(json.dumps(block("pass", c, 1006, 1007, passed=200)) + "\n")
                    f.write(json.dumps(block("rec", c, 1000, 1025, 22, 39, 200, dc=2)) + "\n")
                    f.write(json.dumps(block("rec2", c, 1000, 1025, 22, 39, 200, dc=2)) + "\n")
                    f.write(json.dumps(block("open", c, 993, 1010, 22, 39, 200, dc=2)) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(paired_stats.main([d]), 0)
        text = out.getvalue()
        self.assertIn("gate: rec - open (the CUPROF_GATE_SOME path against CUPROF_GATE_OPEN), 10 cycles: +7.0 [+7.0, +7.0]",
                      text)
        self.assertIn("10 cycles: +15.0 [+15.0, +15.0]", text)  # raw


if __name__ == "__main__":
    unittest.main()
