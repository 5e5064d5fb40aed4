#!/usr/bin/env python3
"""Tests for otlp_sink.py: a hand-encoded OTLP request, posted gzip-compressed
and chunked as Go's OTLP/HTTP client sends it, is summarized per resource."""

import gzip
import http.client
import json
import os
import tempfile
import threading
import unittest

import otlp_sink


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, payload):
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def int_field(num, v):
    return varint(num << 3) + varint(v & (1 << 64) - 1)


def kv(key, value):
    if isinstance(value, str):
        any_value = field(1, value.encode())
    else:
        any_value = int_field(3, value)
    return field(1, key.encode()) + field(2, any_value)


def span(name, attrs):
    return field(5, name.encode()) + b"".join(field(9, kv(k, v)) for k, v in attrs)


def request(pid, spans):
    resource = field(1, kv("process.pid", pid)) + field(1, kv("service.name", "python3"))
    scope_spans = b"".join(field(2, s) for s in spans)
    resource_spans = field(1, resource) + field(2, scope_spans)
    return field(1, resource_spans)


class SinkTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "s.json")
        self.summary = otlp_sink.Summary(self.out)
        self.srv = otlp_sink.http.server.ThreadingHTTPServer(("127.0.0.1", 0), otlp_sink.handler(self.summary))
        self.thread = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thread.start()

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()
        self.tmp.cleanup()

    def post(self, body, path="/v1/traces"):
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.server_address[1], timeout=10)
        data = gzip.compress(body)
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", "application/x-protobuf")
        conn.putheader("Content-Encoding", "gzip")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for i in range(0, len(data), 7):
            chunk = data[i:i + 7]
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        conn.send(b"0\r\n\r\n")
        status = conn.getresponse().status
        conn.close()
        return status

    def test_summary(self):
        body = request(42, [span("cuMemAlloc", [("cuda.api", "cuMemAlloc"), ("cuda.device.ordinal", 1)]),
                            span("cuInit", [("cuda.api", "cuInit")])])
        self.assertEqual(self.post(body), 200)
        self.assertEqual(self.post(request(42, [span("x", [("cuda.device.ordinal", 1)])])), 200)
        self.assertEqual(self.post(request(43, [])), 200)
        with open(self.out, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["requests"], 3)
        r = doc["resources"]["42"]
        self.assertEqual(r["spans"], 3)
        self.assertEqual(r["devices"], {"1": 2})
        self.assertEqual(r["apis"], {"cuMemAlloc": 1, "cuInit": 1})
        self.assertEqual(r["attributes"]["service.name"], "python3")
        self.assertIn("43", doc["resources"])

    def test_bad_input(self):
        self.assertEqual(self.post(b"\x0a\xff"), 400)  # truncated length
        self.assertEqual(self.post(request(1, []), path="/v1/logs"), 400)
        with open(self.out, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(len(doc["errors"]), 2)


if __name__ == "__main__":
    unittest.main()
