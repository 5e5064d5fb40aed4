"""Time structure of a Python statement's speed in one process: windows of
cp.empty(10) (or cuda.core's create_stream) alternated with a pure-Python
probe, so a slow window can be told from a slow statement."""
import json, sys, time, timeit
seconds = float(sys.argv[1]); label = sys.argv[2]; what = sys.argv[3] if len(sys.argv) > 3 else "empty"
if what == "empty":
    import cupy as cp
    cp.empty(10)
    stmt = lambda: cp.empty(10)
    n = 2000
else:
    from cuda.core import Device
    dev = Device(); dev.set_current()
    def stmt():
        dev.create_stream().close()
    n = 500
def probe():
    t = time.perf_counter_ns()
    x = 0
    for i in range(20000):
        x += i
    return (time.perf_counter_ns() - t) / 20000
timer = timeit.Timer(stmt)
timer.timeit(n)
t0 = time.perf_counter(); out = []
while time.perf_counter() - t0 < seconds:
    p = min(probe() for _ in range(3))
    s = min(timer.timeit(n) / n * 1e9 for _ in range(3))
    out.append((round(time.perf_counter() - t0, 3), round(p, 2), round(s, 1)))
ps = sorted(o[1] for o in out); ss = sorted(o[2] for o in out)
print(json.dumps({"label": label, "what": what, "windows": out,
                  "probe_med": ps[len(ps)//2], "probe_min": ps[0], "stmt_med": ss[len(ss)//2], "stmt_min": ss[0]}))
