#!/usr/bin/env python3
"""Tests for runarchive.py: packing is reproducible and moves every file
into the archive, unpacking gives the files back as they were, scripts and
unsafe members are refused, and every run folder of the tree is in the
layout (bench/*/results/RUN/{raw.tar.xz, tables.md, env.json}).

  python3 -m unittest discover -s bench/lib -p 'test_*.py'
"""

import io
import os
import shutil
import tarfile
import tempfile
import unittest

import runarchive

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)


class ArchiveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_dir(self, name="2026-01-01-test", files=None):
        files = files if files is not None else {
            "env.json": '{"host": "h"}\n', "tables.md": "# t\n", "run.log": "log\n",
            "loops/none/a.r1.json": '{"median_ns": 1}\n', "loops/none/a.r2.json": '{"median_ns": 2}\n'}
        d = os.path.join(self.tmp, name)
        for rel, text in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
        return d, files

    def read_tree(self, d):
        out = {}
        for root, _, names in os.walk(d):
            for n in names:
                p = os.path.join(root, n)
                with open(p, encoding="utf-8") as f:
                    out[os.path.relpath(p, d)] = f.read()
        return out

    def test_pack_unpack_round_trip(self):
        d, files = self.run_dir()
        self.assertEqual(runarchive.pack(d), len(files))
        self.assertEqual(sorted(os.listdir(d)), sorted(runarchive.LAYOUT))
        dest = os.path.join(self.tmp, "out")
        runarchive.unpack(d, dest)
        self.assertEqual(self.read_tree(dest), files)
        with runarchive.opened(d) as o:
            self.assertEqual(os.path.basename(o), os.path.basename(d))
            self.assertEqual(self.read_tree(o), files)
        self.assertFalse(os.path.exists(o), "the temporary copy outlived opened()")

    def test_pack_is_reproducible(self):
        a, _ = self.run_dir("a")
        b, _ = self.run_dir("b")
        runarchive.pack(a)
        runarchive.pack(b)
        with open(os.path.join(a, runarchive.ARCHIVE), "rb") as fa, open(os.path.join(b, runarchive.ARCHIVE), "rb") as fb:
            self.assertEqual(fa.read(), fb.read())

    def test_plain_folder_opened_as_is(self):
        d, _ = self.run_dir()
        with runarchive.opened(d) as o:
            self.assertEqual(o, d)

    def test_scripts_refused(self):
        d, _ = self.run_dir(files={"commands.sh": "echo\n", "run.log": "x\n"})
        with self.assertRaisesRegex(runarchive.RunError, "scripts in a run's results"):
            runarchive.pack(d)
        self.assertTrue(os.path.exists(os.path.join(d, "run.log")), "a refused pack removed files")

    def test_unsafe_members_refused(self):
        d = os.path.join(self.tmp, "bad")
        os.makedirs(d)
        with tarfile.open(os.path.join(d, runarchive.ARCHIVE), "w:xz") as tar:
            info = tarfile.TarInfo("../escape.txt")
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
        with self.assertRaisesRegex(runarchive.RunError, "not a plain relative file"):
            runarchive.unpack(d, os.path.join(self.tmp, "out"))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "escape.txt")))

    def test_check_reports_layout(self):
        root = os.path.join(self.tmp, "results")
        d, _ = self.run_dir(os.path.join("results", "ok"))
        runarchive.pack(d)
        self.assertEqual(runarchive.check(root), [])
        os.makedirs(os.path.join(root, "loose"))
        with open(os.path.join(root, "loose", "x.json"), "w") as f:
            f.write("{}")
        problems = runarchive.check(root)
        self.assertEqual(len(problems), 1)
        self.assertIn("want exactly", problems[0])

    def test_tree_results_in_layout(self):
        roots = [os.path.join(BENCH, k, "results") for k in sorted(os.listdir(BENCH))
                 if os.path.isdir(os.path.join(BENCH, k, "results"))]
        self.assertTrue(roots, "no bench/*/results folders: this test checks nothing")
        problems = [p for r in roots for p in runarchive.check(r)]
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main()
