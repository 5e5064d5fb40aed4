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

    def test_bare_blocks(self):
        # a block with the API unwrapped, 5 ns under pass (what the pass-through
        # costs the frame) and 1 over rec: the drop against an unwrapped call
        # is +1, 21 short of the call's 22
        with tempfile.TemporaryDirectory() as d:
            for p in (1, 2):
                with open(os.path.join(d, "p%d.jsonl" % p), "w") as f:
                    for c in range(10):
                        f.write(json.dumps(block("pass", c, 1006, 1007, passed=200)) + "\n")
                        f.write(json.dumps(block("rec", c, 1000, 1025, 22, 39, 200, dc=2)) + "\n")
                        f.write(json.dumps(block("rec2", c, 1000, 1025, 22, 39, 200, dc=2)) + "\n")
                        f.write(json.dumps(block("bare", c, 1001, 1002)) + "\n")
                        if p == 1:  # the ablation's blocks in one process only
                            f.write(json.dumps(block("prologue", c, 1004, 1005)) + "\n")
                            f.write(json.dumps(block("clocks", c, 1019, 1020)) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(paired_stats.main([d]), 0)
        text = out.getvalue()
        self.assertIn("bare_drop: bare - rec (the drop against an unwrapped call), 20 cycles: +1.0 [+1.0, +1.0]; "
                      "over 2 processes: +1.0 [+1.0, +1.0]", text)
        self.assertIn("bare - rec - call (what recording leaves in the frame; 0 is right), 20 cycles: -21.0 [-21.0, -21.0]",
                      text)
        self.assertIn("p: pass - bare (what a passed-through call costs the frame), 20 cycles: +5.0 [+5.0, +5.0]", text)
        self.assertIn("prologue - bare (the wrapper's prologue alone, in place), 10 cycles: +3.0 [+3.0, +3.0]; "
                      "over 1 processes: +3.0", text)
        self.assertIn("clocks - bare (the prologue, the guard and the clock reads, in place), 10 cycles: +18.0", text)

    def test_loop_accounting(self):
        # blocks with the in-place correction (8 ns a call): the loop's
        # calibration alone takes 8 ns less out per recorded call, so rec's
        # self time is 16 ns higher there (two recorded calls) and pass's 8
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "p1.jsonl"), "w") as f:
                for c in range(10):
                    for mode, self_ns, loop, api, n, dc in (("pass", 1022, 1030, 0, 0, 1), ("rec", 1000, 1016, 22, 200, 2),
                                                           ("rec2", 1000, 1016, 22, 200, 2)):
                        b = block(mode, c, self_ns, 1040, api, 39, n, 200 if mode == "pass" else 0, dc)
                        b.update({"loop_self_ns_median": loop, "loop_api_ns_median": api, "in_place_ns": 8.0})
                        f.write(json.dumps(b) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(paired_stats.main([d]), 0)
        text = out.getvalue()
        self.assertIn("In-place correction per recorded call (each process's own, trace meta inplace_ns): +8.0 to +8.0 ns.", text)
        self.assertIn("with the calibrator's loop alone", text)
        # reported: drop 22 = the call's 22; loop alone: drop 14, 8 short
        self.assertIn("| all | 10 | 1022.0 | 1000.0 | +22.0 [+22.0, +22.0] | +0.0 [+0.0, +0.0] | 22.0 | +0.0 [+0.0, +0.0] |", text)
        self.assertIn("| all | 10 | 1030.0 | 1016.0 | +14.0 [+14.0, +14.0] | +0.0 [+0.0, +0.0] | 22.0 | -8.0 [-8.0, -8.0] |", text)


if __name__ == "__main__":
    unittest.main()
