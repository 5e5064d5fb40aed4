"""Tests of flamegraph.py's profile reader and layout on a hand-encoded profile."""

import gzip
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flamegraph  # noqa: E402


def varint(x):
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        out.append(b | (0x80 if x else 0))
        if not x:
            return bytes(out)


def field(num, v):
    if isinstance(v, int):
        return varint(num << 3) + varint(v)
    return varint(num << 3 | 2) + varint(len(v)) + v


def packed(num, xs):
    return field(num, b"".join(varint(x) for x in xs))


def profile():
    strings = ["", "time", "nanoseconds", "heavy_stream", "Device.create_stream", "cuStreamCreate", "lean_stream",
               "seed.py", "cuda.core._device"]
    sid = {s: i for i, s in enumerate(strings)}
    out = field(1, field(1, sid["time"]) + field(2, sid["nanoseconds"]))
    funcs = [("heavy_stream", "seed.py"), ("Device.create_stream", "cuda.core._device"), ("cuStreamCreate", ""),
             ("lean_stream", "seed.py")]
    for i, (f, file) in enumerate(funcs, 1):
        out += field(5, field(1, i) + field(2, sid[f]) + (field(4, sid[file]) if file else b""))
        out += field(4, field(1, i) + field(4, field(1, i)))
    out += field(4, field(1, 9) + field(3, 0x6F7A))  # a location with no line: an address
    # Samples list the leaf first; one with non-packed values.
    out += field(2, packed(1, [3, 2, 1]) + packed(2, [3000]))
    out += field(2, packed(1, [2, 1]) + field(2, 2000))
    out += field(2, packed(1, [3, 9, 4]) + packed(2, [2800]))
    for s in strings:
        out += field(6, s.encode())
    return gzip.compress(out)


class ReadTest(unittest.TestCase):
    def test_read_and_tree(self):
        types, samples = flamegraph.read_profile(profile())
        self.assertEqual(types, [("time", "nanoseconds")])
        self.assertEqual(samples[0], ([("heavy_stream", "seed.py"), ("Device.create_stream", "cuda.core._device"),
                                       ("cuStreamCreate", "")], [3000]))
        self.assertEqual(samples[2], ([("lean_stream", "seed.py"), ("0x6f7a", ""), ("cuStreamCreate", "")], [2800]))
        root = flamegraph.tree(samples, 0)
        self.assertEqual(root.value, 7800)
        heavy = root.children[("heavy_stream", "seed.py")]
        self.assertEqual(heavy.value, 5000)
        self.assertEqual(heavy.children[("Device.create_stream", "cuda.core._device")].value, 5000)
        self.assertEqual(flamegraph.depth(root), 4)
        doc = flamegraph.svg(root, 1000, "t <&>", "nanoseconds")
        self.assertIn("<title>heavy_stream seed.py (64.1%, 5 us)</title>", doc)
        self.assertIn("t &lt;&amp;&gt;", doc)
        self.assertIn('fill="hsl(2,75%,58%)"', doc)  # cuStreamCreate is a driver call
        self.assertEqual(flamegraph.colour("cuStreamCreate", "/x/driver.py")[:5], "hsl(1")  # a Python binding: green
        self.assertTrue(flamegraph.colour("CFuncPtr cuInit", "ctypes").startswith("hsl(4"))  # a C callable: yellow

    def test_damaged(self):
        with self.assertRaises(ValueError):
            flamegraph.read_profile(field(2, b"\x0a\x05\x01"))  # a length past the end


if __name__ == "__main__":
    unittest.main()
