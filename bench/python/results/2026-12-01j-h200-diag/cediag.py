"""lead's diagnostic: what a C-level frame costs in cp.empty (run F: full mode +0.6 us over stacks in fast processes)."""
import json, sys, time, timeit
sys.path.insert(0, "bench/lib")
from speedprobe import probe_ns
import cupy as cp
nd = cp.ndarray
def wrap(n):
    return nd(n)
def wrap_kw(n):
    return nd(n, float, order='C')
stmts = {"cp.empty": "cp.empty(10)", "ndarray": "nd(10)", "wrap": "wrap(10)", "wrap_kw": "wrap_kw(10)",
         "pyfunc": "wrap"}  # pyfunc: a Python function's call alone, no C call
g = dict(globals())
def noop(n):
    return n
g["wrap"] = wrap; g["noop"] = noop
stmts["pyfunc"] = "noop(10)"
out = {"probe": [], "us": {k: [] for k in stmts}}
for k, s in stmts.items():  # warm-up past the thresholds
    timeit.timeit(s, globals=g, number=5000)
for rep in range(5):
    out["probe"].append(probe_ns())
    for k, s in stmts.items():
        out["us"][k].append(timeit.timeit(s, globals=g, number=20000) / 20000 * 1e6)
out["probe"].append(probe_ns())
print(json.dumps(out))
