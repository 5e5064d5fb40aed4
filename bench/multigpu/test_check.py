#!/usr/bin/env python3
"""Tests for check.py on a hand-written two-device trace (testdata/).

  python3 -m unittest discover -s bench/multigpu -p 'test_*.py'
"""

import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

import check

HERE = os.path.dirname(os.path.abspath(__file__))
TD = os.path.join(HERE, "testdata")
TRACE = os.path.join(TD, "two_devices.txt")
PROGRAMS = [os.path.join(TD, "cudacore.json"), os.path.join(TD, "torch.json")]


def run(args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = check.main(args)
    return rc, out.getvalue(), err.getvalue()


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def broken_trace(self, *edits):
        with open(TRACE, encoding="utf-8") as f:
            text = f.read()
        for old, new in edits:
            self.assertIn(old, text)
            text = text.replace(old, new)
        path = os.path.join(self.tmp.name, "trace.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_good_trace_passes(self):
        rc, out, _ = run([TRACE] + PROGRAMS)
        self.assertEqual(rc, 0, out)
        self.assertIn("2/2 allocations on the right device", out)
        self.assertIn("median 45 ns", out)  # switch cost to device 0: 40 and 50 ns
        self.assertIn("0 failed", out)
        self.assertNotIn("cuInit", out)  # device-less APIs are not flagged

    def test_allocation_on_wrong_device(self):
        path = self.broken_trace(("handle=0x7f1000000000 stream=0x200 size=8192 aux=0xa1 dev=1",
                                  "handle=0x7f1000000000 stream=0x200 size=8192 aux=0xa1 dev=0"))
        rc, out, _ = run([path] + PROGRAMS)
        self.assertEqual(rc, 1)
        self.assertIn("allocation 0x7f1000000000 (8192 B) attributed to dev 0", out)
        # The same call also uses device 1's stream with the wrong device.
        self.assertIn("cuMemAllocFromPoolAsync on stream 0x200 has dev 0", out)

    def test_stream_without_device_and_missing_sync(self):
        path = self.broken_trace(
            ("api=cuStreamCreate handle=0x200 dev=1", "api=cuStreamCreate handle=0x200"),
            ("call 200/200 t=15900 end=16300 api=cuCtxSynchronize dev=1\n", ""))
        rc, out, _ = run([path] + PROGRAMS)
        self.assertEqual(rc, 1)
        self.assertIn("stream 0x200 created with dev -1", out)
        self.assertIn("2 device synchronizes made, 1 cuCtxSynchronize with dev 1", out)
        self.assertIn("context/stream/memory calls without a device: cuStreamCreate 1", out)

    def test_missing_allocation_and_process(self):
        path = self.broken_trace(("handle=0x7f2000000000 size=2097152", "handle=0x7f3000000000 size=2097152"))
        with open(PROGRAMS[0], encoding="utf-8") as f:
            doc = json.load(f)
        doc["pid"] = 999
        other = os.path.join(self.tmp.name, "other.json")
        with open(other, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        rc, out, _ = run([path, PROGRAMS[1], other, "--json", os.path.join(self.tmp.name, "f.json")])
        self.assertEqual(rc, 1)
        self.assertIn("allocation 0x7f2000100000 (1048576 B) has no cuMemAlloc* call containing it", out)
        self.assertIn("no calls of pid 999 in the trace", out)
        with open(os.path.join(self.tmp.name, "f.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["failures"], 2)

    def test_set_current_missing(self):
        path = self.broken_trace(("api=cuCtxSetCurrent handle=0xd1 dev=1", "api=cuCtxSetCurrent handle=0xd1"))
        rc, out, _ = run([path, PROGRAMS[1]])
        self.assertEqual(rc, 1)
        self.assertIn("no set-current call with dev 1", out)

    def test_not_a_text_trace(self):
        path = os.path.join(self.tmp.name, "x.cuprof")
        with open(path, "wb") as f:
            f.write(b"CUPROF\x00binary")
        rc, _, err = run([path] + PROGRAMS)
        self.assertEqual(rc, 2)
        self.assertIn("cuprof dump", err)

    def test_otlp_resources(self):
        summary = os.path.join(TD, "otlp_summary.json")
        rc, out, _ = run([TRACE] + PROGRAMS + ["--otlp", summary])
        self.assertEqual(rc, 0, out)
        self.assertIn("multigpu_torch[pid 300]: one OTLP resource, 12 spans (dev 1: 11)", out)
        self.assertIn("2 resources (pids 200, 300)", out)
        with open(summary, encoding="utf-8") as f:
            doc = json.load(f)
        doc["resources"]["300"]["devices"]["0"] = 3
        del doc["resources"]["200"]
        bad = os.path.join(self.tmp.name, "otlp.json")
        with open(bad, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        rc, out, _ = run([TRACE] + PROGRAMS + ["--otlp", bad])
        self.assertEqual(rc, 1)
        self.assertIn("no OTLP resource with process.pid 200", out)
        self.assertIn("OTLP spans on devices the program did not use: dev 0: 3", out)

    def test_otlp_summary_as_source(self):
        # The exported spans, with the device cuprof attributed, checked like a dump.
        rc, out, _ = run([os.path.join(TD, "otlp_summary.json")] + PROGRAMS)
        self.assertEqual(rc, 0, out)
        self.assertIn("against 32 exported call spans of 2 processes (2 resources)", out)
        self.assertIn("multigpu_cudacore[pid 200] dev 1: 2/2 allocations on the right device", out)

    def reuse_case(self, second_create_dev, second_sync_dev):
        """Stream handle 0x100 created on device 0, destroyed, then handed out
        again on device 1 (what a real driver may do when a program destroys
        its stream every round, as examples/multigpu does)."""
        trace = "\n".join([
            "cuprof-text 1",
            "call 9/9 t=100 end=110 api=cuCtxSetCurrent handle=0xc0 dev=0",
            "call 9/9 t=200 end=300 api=cuStreamCreate handle=0x100 dev=0",
            "call 9/9 t=400 end=500 api=cuMemAllocAsync handle=0x7f00 stream=0x100 size=64 dev=0",
            "call 9/9 t=600 end=700 api=cuStreamSynchronize handle=0x100 dev=0",
            "call 9/9 t=800 end=900 api=cuCtxSynchronize dev=0",
            "call 9/9 t=1000 end=1100 api=cuStreamDestroy handle=0x100 dev=0",
            "call 9/9 t=1200 end=1210 api=cuCtxSetCurrent handle=0xc1 dev=1",
            f"call 9/9 t=1300 end=1400 api=cuStreamCreate handle=0x100 dev={second_create_dev}",
            "call 9/9 t=1500 end=1600 api=cuMemAllocAsync handle=0x8f00 stream=0x100 size=64 dev=1",
            f"call 9/9 t=1700 end=1800 api=cuStreamSynchronize handle=0x100 dev={second_sync_dev}",
            "call 9/9 t=1900 end=2000 api=cuCtxSynchronize dev=1",
            "call 9/9 t=2100 end=2200 api=cuStreamDestroy handle=0x100 dev=1",
        ]) + "\n"
        dev = lambda ptr: {"set_current": 1, "allocations": [{"ptr": ptr, "size": 64, "stream": "0x100"}],
                           "streams": ["0x100"], "stream_syncs": 1, "syncs": 1}
        prog = {"program": "multigpu_go", "pid": 9, "devices": [0, 1], "rounds": 1,
                "per_device": {"0": dev("0x7f00"), "1": dev("0x8f00")}}
        tpath, ppath = os.path.join(self.tmp.name, "t.txt"), os.path.join(self.tmp.name, "p.json")
        with open(tpath, "w", encoding="utf-8") as f:
            f.write(trace)
        with open(ppath, "w", encoding="utf-8") as f:
            json.dump(prog, f)
        return run([tpath, ppath])

    def test_stream_handle_reused_on_another_device(self):
        rc, out, _ = self.reuse_case(1, 1)
        self.assertEqual(rc, 0, out)
        self.assertIn("multigpu_go[pid 9] dev 0: all 4 calls on its streams carry dev 0", out)
        self.assertIn("multigpu_go[pid 9] dev 1: all 4 calls on its streams carry dev 1", out)

    def test_reused_stream_handle_wrong_device_still_caught(self):
        rc, out, _ = self.reuse_case(1, 0)
        self.assertEqual(rc, 1, out)
        self.assertIn("dev 1: cuStreamSynchronize on stream 0x100 has dev 0", out)
        rc, out, _ = self.reuse_case(0, 1)
        self.assertEqual(rc, 1, out)

    def test_quoted_values(self):
        calls, procs = check.read_calls([
            "cuprof-text 1",
            'process pid=7 cmd="python3 \\"a b\\" x=1" env.RANK=1',
            'call 7/8 t=5 end=9 api=cuMemAlloc handle=0x10 size=16 dev=0 caller=0x1',
        ])
        self.assertEqual(procs[7]["cmd"], 'python3 "a b" x=1')
        self.assertEqual((calls[0].pid, calls[0].tid, calls[0].handle, calls[0].dev), (7, 8, 16, 0))


if __name__ == "__main__":
    unittest.main()
