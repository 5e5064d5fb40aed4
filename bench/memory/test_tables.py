"""Tests of bench/memory/tables.py: python3 -m unittest bench/memory/test_tables.py"""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import tables  # noqa: E402

TSV = """events\tcommand\tpeak_rss_kib\twall_s\tcpu_s\texit\ttrace_bytes\tload1
5000000\treport\t70000\t3.1\t0.9\t0\t32891976\t2.5
5000000\tlint\t31000\t8\t2.5\t0\t32891976\t3.1
50000000\treport\t250000\t30\t12.5\t0\t328919760\t4.0
50000000\tlint\t32000\t80\t25\t1\t328919760\t4.2
"""


class TablesTest(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".tsv")
        with os.fdopen(fd, "w") as f:
            f.write(TSV)

    def tearDown(self):
        os.remove(self.path)

    def test_table(self):
        t = tables.table(tables.read([self.path]))
        lines = t.splitlines()
        self.assertIn("5M events", lines[0])
        self.assertIn("50M events", lines[0])
        self.assertEqual(lines[2], "| report | 72 MB, 5.56M/s (0.9, 3.1, 2.5) | 256 MB, 4.00M/s (12.5, 30, 4.0) |")
        self.assertEqual(lines[3], "| lint | 32 MB, 2.00M/s (2.5, 8, 3.1) | exit 1 (25, 80) |")

    def test_goals(self):
        g = tables.goals(tables.read([self.path])).splitlines()
        self.assertEqual(g[0], "- report: peak RSS 256 MB at 50M: NOT met; 4.00M events per CPU second at 50M: NOT met")
        self.assertEqual(g[1], "- lint: peak RSS 33 MB at 50M: NOT met; failed at 50M")


SHAPES_TSV = """events\tcommand\tpeak_rss_kib\twall_s\tcpu_s\texit\ttrace_bytes\tload1\tshape
5000000\treport\t70000\t3.1\t0.9\t0\t32891976\t2.5\tloop
5000000\treport\t300000\t3.1\t0.5\t0\t32891976\t2.5\tlive
"""


class ShapesTest(unittest.TestCase):
    def test_shape_rows(self):
        fd, path = tempfile.mkstemp(suffix=".tsv")
        with os.fdopen(fd, "w") as f:
            f.write(SHAPES_TSV)
        try:
            rows = tables.read([path])
        finally:
            os.remove(path)
        lines = tables.table(rows).splitlines()
        self.assertTrue(lines[2].startswith("| report | 72 MB"), lines[2])
        self.assertTrue(lines[3].startswith("| live: report | 307 MB"), lines[3])
        g = tables.goals(rows).splitlines()
        self.assertEqual(g[1], "- live: report: peak RSS 307 MB at 5M: NOT met; 10.00M events per CPU second at 5M: met")


AB = """round\tbinary\tcommand\tpeak_rss_kib\twall_s\tcpu_s\texit\tload1
1\tbefore\treport\t120000\t9\t2.0\t0\t10
1\tafter\treport\t70000\t5\t1.0\t0\t11
2\tbefore\treport\t120000\t9\t2.2\t0\t12
2\tafter\treport\t70000\t5\t1.2\t0\t9
3\tbefore\treport\t120000\t9\t1.8\t0\t10
3\tafter\treport\t70000\t5\t1.1\t0\t10
"""


class ABTest(unittest.TestCase):
    def test_ab(self):
        fd, path = tempfile.mkstemp(suffix=".tsv")
        with os.fdopen(fd, "w") as f:
            f.write(AB)
        try:
            lines = tables.ab(path, 5_000_000).splitlines()
        finally:
            os.remove(path)
        self.assertEqual(lines[2], "| report | 2.00 s, 2.50M/s, 123 MB | 1.10 s, 4.55M/s, 72 MB | 0.55 | 3, 9-12 |")


if __name__ == "__main__":
    unittest.main()
