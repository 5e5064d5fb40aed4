#!/usr/bin/env python3
"""A tiny OTLP/HTTP trace receiver for checking `cuprof export` without a collector.

  otlp_sink.py --port-file PORT.txt --out SUMMARY.json [--port 0]

Listens on 127.0.0.1 (port 0: any free one, written to --port-file), accepts
POST /v1/traces with a protobuf ExportTraceServiceRequest (gzip or not),
decodes just enough of it with a hand-written protobuf wire reader, and after
every request rewrites SUMMARY.json: per resource (keyed by process.pid), its
attributes, how many spans it holds, span counts per cuda.device.ordinal and
per cuda.api, and its call spans (those with cuda.api) as rows [api, handle,
stream, bytes, device (-1 if none), ok, start ns, end ns], at most --max-calls
per resource, for check.py. Runs until killed. Standard library only.

Export to it with: cuprof export TRACE --otlp http://127.0.0.1:PORT --protocol http
"""

import argparse
import gzip
import http.server
import json
import os
import struct
import sys
import threading


class WireError(ValueError):
    pass


def read_varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise WireError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise WireError("varint too long")


def fields(buf):
    """Yields (field number, wire type, value) of one protobuf message."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 1:
            if i + 8 > len(buf):
                raise WireError("truncated fixed64")
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = read_varint(buf, i)
            if i + n > len(buf):
                raise WireError("truncated bytes")
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            if i + 4 > len(buf):
                raise WireError("truncated fixed32")
            v, i = buf[i:i + 4], i + 4
        else:
            raise WireError(f"unsupported wire type {wt}")
        yield num, wt, v


def any_value(buf):
    """Decodes an AnyValue into a Python value (arrays as lists)."""
    for num, wt, v in fields(buf):
        if num == 1 and wt == 2:
            return v.decode("utf-8", "replace")
        if num == 2 and wt == 0:
            return bool(v)
        if num == 3 and wt == 0:
            return v - (1 << 64) if v >= 1 << 63 else v
        if num == 4 and wt == 1:
            return struct.unpack("<d", v)[0]
        if num == 5 and wt == 2:  # ArrayValue { repeated AnyValue values = 1; }
            return [any_value(x) for n, w, x in fields(v) if n == 1 and w == 2]
        if num == 7 and wt == 2:
            return v.hex()
    return None


def attributes(buf, field_no):
    out = {}
    for num, wt, v in fields(buf):
        if num == field_no and wt == 2:
            key, val = None, None
            for n, w, x in fields(v):
                if n == 1 and w == 2:
                    key = x.decode("utf-8", "replace")
                elif n == 2 and w == 2:
                    val = any_value(x)
            if key is not None:
                out[key] = val
    return out


def hex_int(v):
    try:
        return int(v, 16) if isinstance(v, str) else int(v or 0)
    except ValueError:
        return 0


class Summary:
    def __init__(self, path, max_calls=500_000):
        self.path = path
        self.max_calls = max_calls
        self.lock = threading.Lock()
        self.resources = {}
        self.requests = 0
        self.errors = []

    def add(self, body):
        with self.lock:
            self.requests += 1
            for num, wt, rs in fields(body):
                if num != 1 or wt != 2:
                    continue
                res_attrs, spans = {}, []
                for n, w, v in fields(rs):
                    if n == 1 and w == 2:
                        res_attrs = attributes(v, 1)
                    elif n == 2 and w == 2:  # ScopeSpans { scope = 1; repeated Span spans = 2; }
                        spans += [x for m, ww, x in fields(v) if m == 2 and ww == 2]
                key = str(res_attrs.get("process.pid", "?"))
                r = self.resources.setdefault(key, {"attributes": res_attrs, "spans": 0, "devices": {}, "bound_devices": {}, "apis": {},
                                                    "batches": 0, "calls": [], "calls_truncated": 0})
                r["batches"] += 1
                r["spans"] += len(spans)
                for s in spans:
                    a = attributes(s, 9)
                    dev = a.get("cuda.device.ordinal")
                    if dev is not None:
                        r["devices"][str(dev)] = r["devices"].get(str(dev), 0) + 1
                    api = a.get("cuda.api")
                    if api is None:
                        continue
                    # Device queries (cuDeviceGetAttribute of every GPU at start-up) name a
                    # device the program may never use; only these calls are bound to one.
                    if dev is not None and api.startswith(("cuCtx", "cuStream", "cuEvent", "cuMem", "cuLaunch")):
                        r["bound_devices"][str(dev)] = r["bound_devices"].get(str(dev), 0) + 1
                    r["apis"][api] = r["apis"].get(api, 0) + 1
                    if len(r["calls"]) >= self.max_calls:
                        r["calls_truncated"] += 1
                        continue
                    start = end = 0
                    for n, w, v in fields(s):
                        if n == 7 and w == 1:
                            start = struct.unpack("<Q", v)[0]
                        elif n == 8 and w == 1:
                            end = struct.unpack("<Q", v)[0]
                    r["calls"].append([api, hex_int(a.get("cuda.handle")), hex_int(a.get("cuda.stream")),
                                       int(a.get("cuda.bytes") or 0), -1 if dev is None else int(dev),
                                       a.get("cuda.result", "CUDA_SUCCESS") == "CUDA_SUCCESS", start, end])
            self.write()

    def write(self):
        doc = {"requests": self.requests, "resources": self.resources, "errors": self.errors}
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, self.path)


def handler(summary):
    class Handler(http.server.BaseHTTPRequestHandler):
        def read_body(self):
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_POST(self):  # noqa: N802 - http.server's naming
            try:
                body = self.read_body()
                if self.headers.get("Content-Encoding", "").lower() == "gzip":
                    body = gzip.decompress(body)
                if self.path.rstrip("/") != "/v1/traces":
                    raise WireError(f"unexpected path {self.path}")
                summary.add(body)
            except (WireError, OSError, EOFError, ValueError) as e:
                with summary.lock:
                    summary.errors.append(str(e))
                    summary.write()
                self.send_response(400)
                self.end_headers()
                return
            # An empty ExportTraceServiceResponse.
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, fmt, *args):
            pass

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-calls", type=int, default=500_000, help="call spans kept per resource")
    args = ap.parse_args(argv)
    summary = Summary(args.out, args.max_calls)
    summary.write()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler(summary))
    with open(args.port_file, "w", encoding="utf-8") as f:
        f.write(f"{srv.server_address[1]}\n")
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
