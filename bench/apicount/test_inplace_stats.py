"""Tests of inplace_stats.py on made-up loops: python3 -m unittest test_inplace_stats"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inplace_stats  # noqa: E402


class InplaceStatsTest(unittest.TestCase):
    def test_added_and_new_minus_old(self):
        # per round the loop drifts by 2 ns; old adds 40, new 43, new2 41
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "loops.jsonl"), "w") as f:
                for r in range(5):
                    for tool, add in (("none", 0), ("old", 40), ("new", 43), ("new2", 41)):
                        res = {"median_ns": 10 + 2 * r + add}
                        f.write(json.dumps({"round": r, "case": "ctx_get_current", "tool": tool, "result": res}) + "\n")
                # a run that failed is left out
                f.write(json.dumps({"round": 5, "case": "ctx_get_current", "tool": "none", "result": None}) + "\n")
            with open(os.path.join(d, "meta.txt"), "w") as f:
                f.write("0 ctx_get_current new inside_ns=17 added_ns=45 inplace_ns=-0.4 inplace_calls=15930\n")
                f.write("1 ctx_get_current new inside_ns=17 added_ns=46 inplace_ns=2.5 inplace_calls=15930\n")
                f.write("1 ctx_get_current old inside_ns=17 added_ns=44\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(inplace_stats.main([d]), 0)
        text = out.getvalue()
        self.assertIn("| ctx_get_current | 5 | 14.0 | 54.0 | 57.0 | 55.0 | 40.0 | 43.0 | 41.0 | +3.0 [+3.0, +3.0] | "
                      "+1.0 [+1.0, +1.0] | -0.4 to +2.5 ns |", text)


if __name__ == "__main__":
    unittest.main()
